//! The chat stage of the demo: one turn of a durable chat with the glossary tool, its answer
//! streamed token by token and its tool activity reported as chat events.

use std::sync::{Arc, Mutex, PoisonError};

use thinkers::Runtime;
use thinkers::conversation::ConversationId;
use thinkers::model::{Depth, Grade, OutputSize};
use thinkers::thinker::{ChatEvent, ChatEvents, ChatThinker, ThinkerDeclaration};

use super::Progress;
use super::thinker_stage::Lookup;

const QUESTION: &str = "What is a seat, in one sentence?";

/// What the stage prints.
pub(crate) struct Outcome {
    answer: String,
    tokens: usize,
    activity: Vec<String>,
    conversation: Option<ConversationId>,
}

impl Outcome {
    pub(crate) fn print(&self) {
        println!("Chat");
        println!("  person: {QUESTION}");
        for line in &self.activity {
            println!("  {line}");
        }
        println!("  chat ({} streamed pieces): {}", self.tokens, self.answer);
        if let Some(id) = &self.conversation {
            println!(
                "  conversation {id} is durable: `thinkers chat --resume {id}` (same --db) \
                 continues it"
            );
        }
    }
}

pub(crate) async fn run(rt: &Runtime, progress: &Progress) -> anyhow::Result<Outcome> {
    progress.set("chat: one turn, answer streamed");
    let seen: Arc<Mutex<Vec<ChatEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let bar = progress.bar();
    let chat = ChatThinker::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You are the runtime's help desk. Look terms up in the glossary before you answer.",
    )
    // A one-sentence question at quick depth: below the delegation threshold, so the palette is
    // the glossary alone (no `sub_thinker`) and the turn shows the lookup.
    .depth(Depth::Quick)
    .tool(Lookup)
    .limits(super::thinker_stage::demo_limits())
    .events(ChatEvents::new(move |event| {
        if let ChatEvent::Token { .. } = &event {
            bar.tick();
        }
        sink.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    }));
    let _ = chat.add_message(QUESTION);
    let answer = rt.run(chat.turn()).await?;
    let events = std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner));
    let tokens = events
        .iter()
        .filter(|e| matches!(e, ChatEvent::Token { .. }))
        .count();
    let activity = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::ToolCall {
                name, arguments, ..
            } => Some(format!("→ {name} {arguments}")),
            ChatEvent::ToolResult { name, is_error, .. } => Some(format!(
                "← {name} {}",
                if *is_error { "failed" } else { "answered" }
            )),
            _ => None,
        })
        .collect();
    Ok(Outcome {
        answer,
        tokens,
        activity,
        conversation: chat.conversation_id(),
    })
}
