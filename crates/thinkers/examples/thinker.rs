//! A thinker: a model with an objective, one tool and a typed answer, looped by the runtime
//! until it answers. The transcript shows the tool round and the final answer.
//!
//! Run it with `cargo run -p thinkers --example thinker`.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::Runtime;
use thinkers::model::{Depth, Grade, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput, Verdict};
use thinkers::tool::{Tool, ToolContext};

#[path = "support/mod.rs"]
mod support;

/// What `glossary` takes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TermInput {
    /// The term to look up.
    pub term: String,
}

/// A glossary lookup, counting its calls.
#[derive(Debug, Clone, Default)]
pub struct Glossary {
    /// How many times the model called it.
    pub calls: Arc<AtomicUsize>,
}

impl Tool for Glossary {
    const NAME: &'static str = "glossary";
    type Input = TermInput;
    type Output = String;

    fn description(&self) -> Cow<'static, str> {
        "Look a term up in the project glossary.".into()
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, input: &TermInput, _cx: &ToolContext<'_>) -> thinkers::Result<String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(format!(
            "{}: the right to send one model request, reserved before it is sent.",
            input.term
        ))
    }
}

/// The thinker's typed answer. Field docs become the schema's descriptions, which the model
/// reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Brief {
    /// The answer in one or two sentences.
    pub summary: String,
    /// The glossary entries the answer rests on.
    pub sources: Vec<String>,
}

/// What the run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The typed answer.
    pub answer: Brief,
    /// The conversation, rendered.
    pub transcript: String,
    /// How many times the tool ran.
    pub tool_calls: usize,
}

/// Ask the thinker one question.
pub async fn run(rt: &Runtime) -> Result<Outcome> {
    let glossary = Glossary::default();
    let calls = glossary.calls.clone();
    // The declaration (grade and output size) is required: a thinker cannot exist without it.
    let thinker = Thinker::<Brief>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Answer questions about the project's vocabulary; look terms up before answering.",
    )
    .tool(glossary)
    .guardrail(|b: &Brief| {
        if b.summary.trim().is_empty() {
            Verdict::refuse("the summary is empty")
        } else {
            Verdict::Accept
        }
    })
    .class("glossary_thinker");
    let observer = thinker.observer();
    // Quick: a lookup needs no reasoning budget.
    let answer = rt
        .run(thinker.ask(ThinkerInput::query("What is a seat?").with_depth(Depth::Quick)))
        .await?;
    let transcript = observer.transcript();
    println!("{transcript}");
    println!("answer: {answer:?}");
    Ok(Outcome {
        answer,
        transcript,
        tool_calls: calls.load(Ordering::SeqCst),
    })
}

/// One tool round, then the answer.
pub fn tune(config: thinkers_sim::SimConfig) -> thinkers_sim::SimConfig {
    support::one_tool_round(config)
}

#[tokio::main]
async fn main() -> Result<()> {
    let env = support::from_args(tune).await?;
    run(&env.rt).await?;
    // Cancels what still runs and writes every record before the process exits.
    env.rt.shutdown().await?;
    Ok(())
}
