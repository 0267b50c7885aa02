//! A chat: two turns of a durable `ChatThinker`. Each turn answers the person's waiting
//! messages; the answer streams token by token as chat events; a second turn, started after the
//! first closed, continues the same conversation.
//!
//! Run it with `cargo run -p thinkers --example chat`; `thinkers chat` and `thinkers serve` run the
//! same machinery in a terminal and behind a web page.

use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Result;
use thinkers::Runtime;
use thinkers::model::{Grade, OutputSize};
use thinkers::thinker::{ChatEvent, ChatEvents, ChatThinker, Delivery, ThinkerDeclaration};
use thinkers_sim::SimConfig;

#[path = "support/mod.rs"]
mod support;

/// What the run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The two answers, in order.
    pub answers: Vec<String>,
    /// The event names seen, in order (`message`, `token`, `answer`, …).
    pub events: Vec<&'static str>,
    /// Where the message added after the first turn had closed went (it waits for the next).
    pub late_message: Delivery,
}

/// Two turns of one chat.
pub async fn run(rt: &Runtime) -> Result<Outcome> {
    let seen: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let chat = ChatThinker::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You are a friendly help desk for an agent runtime.",
    )
    .events(ChatEvents::new(move |event: ChatEvent| {
        if let ChatEvent::Token { text } = &event {
            print!("{text}");
        }
        sink.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.name());
    }));

    // A turn answers every message waiting when it runs (and those added while it runs), then
    // closes; a message added after waits for the next turn.
    chat.add_message("Hello! What is a seat?");
    let mut answers = vec![rt.run(chat.turn()).await?];
    println!();
    let late_message = chat.add_message("And a grade?");
    answers.push(rt.run(chat.turn()).await?);
    println!();

    let events = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
    Ok(Outcome {
        answers,
        events,
        late_message,
    })
}

/// The chat needs nothing scripted: the sim answers in text and streams it.
pub fn tune(config: SimConfig) -> SimConfig {
    config
}

#[tokio::main]
async fn main() -> Result<()> {
    let env = support::from_args(tune).await?;
    run(&env.rt).await?;
    // Cancels what still runs and writes every record before the process exits.
    env.rt.shutdown().await?;
    Ok(())
}
