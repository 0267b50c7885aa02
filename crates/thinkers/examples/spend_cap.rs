//! A spending cap stops a runaway loop. The `runaway` doer keeps asking a model the same question
//! (a bug: its stop condition never holds); the runtime caps what one run may spend, so each call
//! first holds its worst case (its counted input and whole output budget at the entry's prices)
//! and the call that would take the run past the cap is never sent. The run fails with
//! `Error::SpendCapReached`, naming the cap, what was spent and what the call needed.
//!
//! Run it with `cargo run -p thinkers --example spend_cap`.

use anyhow::Result;
use thinkers::conversation::Message;
use thinkers::dispatch::SpendCap;
use thinkers::job::doer;
use thinkers::llm::{ChatRequest, LlmCall};
use thinkers::model::{Grade, OutputSize};
use thinkers::{Error, Runtime};

#[path = "support/mod.rs"]
mod support;

/// What one run may spend, in US dollars.
pub const CAP_USD: f64 = 0.001;

/// How the runaway run ended.
#[derive(Debug)]
pub struct Stopped {
    /// Model calls the loop made before the cap stopped it.
    pub calls: u32,
    /// Why it stopped.
    pub error: Error,
}

/// The runtime's builder, with the cap.
pub fn capped(b: thinkers::RuntimeBuilder) -> thinkers::RuntimeBuilder {
    b.spend_cap(SpendCap::per_run(CAP_USD, "USD"))
}

/// Run the `runaway` doer until the cap stops it.
pub async fn run(rt: &Runtime) -> Result<Stopped> {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = calls.clone();
    let runaway = doer("runaway", move |cx| {
        let counted = counted.clone();
        async move {
            loop {
                let ask = ChatRequest::new(
                    "Answer in one short sentence.",
                    vec![Message::user_text("Is the report finished?")],
                );
                // Pinned to a USD-priced entry: a cap in one currency refuses calls it cannot
                // bound (an entry priced in another currency, or without prices).
                let call = LlmCall::new(Grade::Small, OutputSize::Verdict, ask)
                    .pinned("sim-small-a".to_owned());
                cx.submit(call).await?;
                counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // The bug: nothing here ever ends the loop.
            }
            #[allow(unreachable_code)]
            Ok(())
        }
    });
    let error = match rt.run(runaway).await {
        Ok(()) => anyhow::bail!("the loop ended by itself"),
        Err(e) => e,
    };
    let calls = calls.load(std::sync::atomic::Ordering::Relaxed);
    println!("stopped after {calls} calls: {error}");
    Ok(Stopped { calls, error })
}

#[tokio::main]
async fn main() -> Result<()> {
    let env = support::offline_with(|c| c, capped).await?;
    run(&env.rt).await?;
    env.rt.shutdown().await?;
    Ok(())
}
