//! A doer: plain Rust that submits other jobs. It asks three quick questions at once (one step:
//! the three calls share a step ordinal and run in parallel), then summarises the answers (the
//! next step). Every child is admitted, run and recorded by the dispatcher.
//!
//! Run it with `cargo run -p thinkers --example doer`.

use std::num::NonZeroU32;
use std::sync::Arc;

use anyhow::Result;
use thinkers::Runtime;
use thinkers::job::doer;
use thinkers::model::Grade;
use thinkers::onecall::ModelToolJob;
use thinkers::onecall::tools::{
    QuickAnswer, QuickQuestion, QuickQuestionInput, Summarization, SummarizationInput, Summary,
};

#[path = "support/mod.rs"]
mod support;

/// The questions the doer asks in parallel.
pub const TOPICS: [&str; 3] = ["a model seat", "a token budget", "a read-only scope"];

/// What the doer produced.
#[derive(Debug)]
pub struct Briefing {
    /// One answer per topic, in the order of [`TOPICS`].
    pub answers: Vec<QuickAnswer>,
    /// The summary of the answers.
    pub summary: Summary,
}

/// Run the `briefing` doer.
pub async fn run(rt: &Runtime) -> Result<Briefing> {
    let briefing = doer("briefing", |cx| async move {
        // Step 1: a fan-out. `fan_out` opens the step; every child submitted into it shares
        // its ordinal and runs concurrently.
        let step = cx.fan_out();
        let mut handles = Vec::new();
        for topic in TOPICS {
            let question = QuickQuestionInput {
                question: format!("In one sentence, what is {topic} in an LLM runtime?"),
                grade: Grade::Small,
                context: None,
            };
            let job = ModelToolJob::new(Arc::new(QuickQuestion), question)?;
            handles.push(step.submit(job));
        }
        let answers = futures::future::try_join_all(handles).await?;

        // Step 2: one job that needs every answer, run after them.
        let text = answers
            .iter()
            .map(|a| a.answer.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let input = SummarizationInput {
            text,
            focus: None,
            target_words: NonZeroU32::MIN.saturating_add(39),
        };
        let summary = cx
            .submit(ModelToolJob::new(Arc::new(Summarization), input)?)
            .await?;
        Ok(Briefing { answers, summary })
    });
    let briefing = rt.run(briefing).await?;
    for (topic, a) in TOPICS.iter().zip(&briefing.answers) {
        println!("{topic}: {}", a.answer);
    }
    println!("summary: {}", briefing.summary.summary);
    Ok(briefing)
}

/// The sim as bundled.
pub fn tune(config: thinkers_sim::SimConfig) -> thinkers_sim::SimConfig {
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
