//! A thinker and a doer on another thinker's palette, by name (`as_tool`). The `research`
//! thinker looks terms up in a glossary; the `define_all` doer looks several up at once. The lead
//! thinker's model calls both in one turn; each call runs as a child job of the lead's, under its
//! scope. The sim is scripted to make the calls; a real model makes them from the tools'
//! descriptions and schemas.
//!
//! Run it with `cargo run -p thinkers --example as_tool`.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Result;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use thinkers::Runtime;
use thinkers::job::doer;
use thinkers::model::{Grade, OutputSize};
use thinkers::thinker::{DoerToolExt, Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers::tool::{Tool, ToolContext, ToolJob};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall, SimConfig};

#[path = "support/mod.rs"]
mod support;

/// What `glossary` takes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TermInput {
    /// The term to look up.
    pub term: String,
}

/// A read-only glossary lookup, counting its calls.
#[derive(Debug, Clone, Default)]
pub struct Glossary {
    /// How many times it ran.
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
        Ok(format!("{}: an entry of the project glossary", input.term))
    }
}

/// What `define_all` takes: its JSON Schema is what the lead's model sees.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct Terms {
    /// The terms to look up.
    pub terms: Vec<String>,
}

/// What the run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The lead's answer.
    pub answer: String,
    /// The lead's conversation, rendered.
    pub transcript: String,
    /// How many times the glossary ran (once in `research`, once per term in `define_all`).
    pub glossary_calls: usize,
}

/// The lead thinker with a thinker and a doer as tools.
pub async fn run(rt: &Runtime) -> Result<Outcome> {
    let glossary = Glossary::default();
    let calls = glossary.calls.clone();
    let seat = ThinkerDeclaration::new(Grade::Small, OutputSize::Compact);

    // A thinker as a tool: each call is a fresh run; its answer is the tool result.
    let research = Thinker::<String>::declared(seat, "Answer from the project glossary.")
        .tool(glossary.clone())
        .class("researcher")
        .as_tool(
            "research",
            "Research a question in the glossary; answers in a sentence.",
        )?
        .read_only();

    // A doer as a tool: a function from the tool's input to the doer that runs the call.
    let define_all = (move |input: Terms| {
        let glossary = Arc::new(glossary.clone());
        doer("define_all", move |cx| {
            let (glossary, terms) = (glossary.clone(), input.terms.clone());
            async move {
                let step = cx.fan_out();
                let lookups = terms.into_iter().map(|term| {
                    let job = ToolJob::new(glossary.clone(), TermInput { term });
                    step.submit(job)
                });
                futures::future::try_join_all(lookups).await
            }
        })
    })
    .as_tool(
        "define_all",
        "Look several terms up in the glossary at once.",
    )?
    .read_only();

    let lead = Thinker::<String>::declared(seat, "Answer questions about the project.")
        .provider(research.into())
        .provider(define_all.into())
        .class("lead");
    let observer = lead.observer();
    let answer = rt
        .run(lead.ask(ThinkerInput::query(
            "What are a seat and a permit? (as_tool example)",
        )))
        .await?;
    let transcript = observer.transcript();
    println!("{transcript}");
    println!("answer: {answer}");
    Ok(Outcome {
        answer,
        transcript,
        glossary_calls: calls.load(Ordering::SeqCst),
    })
}

fn call(name: &str, arguments: serde_json::Value) -> ScriptToolCall {
    ScriptToolCall {
        name: name.to_owned(),
        arguments,
    }
}

/// The lead calls both tools in one turn; `research`'s thinker calls the glossary once; then
/// each answers.
pub fn tune(config: SimConfig) -> SimConfig {
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "(as_tool example)",
            ScriptAnswer::ToolCalls(vec![
                call(
                    "research",
                    json!({"query": "Look up seat in the glossary."}),
                ),
                call("define_all", json!({"terms": ["seat", "permit"]})),
            ]),
        )
        .times(1),
        ScriptRule::when_contains(
            "Look up seat in the glossary.",
            ScriptAnswer::ToolCalls(vec![call("glossary", json!({"term": "seat"}))]),
        )
        .times(1),
    ]);
    SimConfig {
        script: Some(script),
        ..support::one_tool_round(config)
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let env = support::from_args(tune).await?;
    run(&env.rt).await?;
    // Cancels what still runs and writes every record before the process exits.
    env.rt.shutdown().await?;
    Ok(())
}
