//! Delegation through a tool hub: the thinker starts with no tool of its own, asks the hub for
//! one (`request_tools`), loads a skill (`request_skill`), then calls the tool it was granted.
//! The sim is scripted to make those requests; a real model makes them from the hub's catalog,
//! which the thinker shows it in the two door tools' descriptions.
//!
//! Run it with `cargo run -p thinkers --example delegation`.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Result;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use thinkers::Runtime;
use thinkers::hub::{Skill, ToolHub, rules};
use thinkers::model::{Grade, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers::tool::{Tool, ToolContext};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall, SimConfig};

#[path = "support/mod.rs"]
mod support;

/// What `glossary` takes.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TermInput {
    /// The term to look up.
    pub term: String,
}

/// A glossary lookup held by the hub, counting its calls.
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
        Ok(format!(
            "{}: a reserved right to send one model request",
            input.term
        ))
    }
}

/// The text of the `house_style` skill.
pub const HOUSE_STYLE: &str = "Answer in one short sentence and name the glossary entry used.";

/// What the run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The thinker's answer.
    pub answer: String,
    /// The conversation, rendered.
    pub transcript: String,
    /// How many times the granted tool ran.
    pub glossary_calls: usize,
}

/// A hub with one tool and one skill, and a thinker that discovers both.
pub async fn run(rt: &Runtime) -> Result<Outcome> {
    let glossary = Glossary::default();
    let calls = glossary.calls.clone();
    let hub = ToolHub::new();
    hub.register_tool(glossary)?;
    hub.register_skill(Skill::new(
        "house_style",
        "How answers are worded in this deployment.",
        HOUSE_STYLE,
    )?);
    // Tools with side effects only for flows bound to a ticket (the glossary is read-only).
    hub.tool_admission(rules::side_effects_need_axis("ticket"));

    let thinker = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Answer questions about the project's vocabulary.",
    )
    .hub(Arc::new(hub))
    .class("delegating_thinker");
    let observer = thinker.observer();
    let answer = rt
        .run(thinker.ask(ThinkerInput::query("What is a seat? (delegation example)")))
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

fn call(name: &str, arguments: serde_json::Value) -> ScriptAnswer {
    ScriptAnswer::ToolCalls(vec![ScriptToolCall {
        name: name.to_owned(),
        arguments,
    }])
}

/// The sim asks for the tool, then the skill, then calls the tool, then answers.
pub fn tune(config: SimConfig) -> SimConfig {
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "(delegation example)",
            call("request_tools", json!({"tool_names": ["glossary"]})),
        )
        .times(1),
        ScriptRule::when_contains(
            r#""granted":["glossary"]"#,
            call("request_skill", json!({"skill_names": ["house_style"]})),
        )
        .times(1),
        ScriptRule::when_contains(
            r#""granted":["house_style"]"#,
            call("glossary", json!({"term": "seat"})),
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
