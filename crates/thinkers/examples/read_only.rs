//! A read-only scope: the same kind of thinker, submitted under `ScopeGuard::unbound()
//! .read_only()`. Its palette has a read-only lookup and a tool with side effects; the side
//! effect is withheld from the model, and when the model calls it anyway (the sim is scripted to
//! try) the call is refused and never runs. The scope is sealed onto every child job.
//!
//! Run it with `cargo run -p thinkers --example read_only`.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Result;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use thinkers::Runtime;
use thinkers::job::ScopeGuard;
use thinkers::model::{Grade, OutputSize};
use thinkers::thinker::{RefusedCall, Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers::tool::{Tool, ToolContext};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall, SimConfig};

#[path = "support/mod.rs"]
mod support;

/// A record id.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct RecordId {
    /// The record's id.
    pub id: String,
}

/// Reads a record. Read-only.
pub struct ReadRecord;

impl Tool for ReadRecord {
    const NAME: &'static str = "read_record";
    type Input = RecordId;
    type Output = String;
    fn description(&self) -> Cow<'static, str> {
        "Read a record by id.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(&self, input: &RecordId, _cx: &ToolContext<'_>) -> thinkers::Result<String> {
        Ok(format!("record {}: an expired draft", input.id))
    }
}

/// Deletes a record: a side effect, so it keeps the default `read_only() == false`.
#[derive(Default)]
pub struct DeleteRecord {
    /// How many deletions really ran.
    pub runs: Arc<AtomicUsize>,
}

impl Tool for DeleteRecord {
    const NAME: &'static str = "delete_record";
    type Input = RecordId;
    type Output = String;
    fn description(&self) -> Cow<'static, str> {
        "Delete a record by id.".into()
    }
    async fn call(&self, input: &RecordId, _cx: &ToolContext<'_>) -> thinkers::Result<String> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        Ok(format!("deleted {}", input.id))
    }
}

/// What happened under the read-only scope.
#[derive(Debug)]
pub struct Outcome {
    /// The thinker's answer.
    pub answer: String,
    /// The tools withheld from the palette (one entry per turn).
    pub withheld: Vec<String>,
    /// The calls refused instead of run.
    pub refused: Vec<RefusedCall>,
    /// How many deletions ran (zero).
    pub deletions: usize,
}

/// Run the thinker read-only.
pub async fn run(rt: &Runtime) -> Result<Outcome> {
    let delete = DeleteRecord::default();
    let runs = delete.runs.clone();
    let thinker = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Tidy up the records the user names.",
    )
    .tool(ReadRecord)
    .tool(delete)
    .class("tidy_thinker");
    let observer = thinker.observer();
    let scope = ScopeGuard::unbound().read_only();
    let answer = rt
        .dispatcher()
        .submit_scoped(
            thinker.ask(ThinkerInput::query("Tidy up record 42.")),
            scope,
        )
        .await?;
    let withheld: Vec<String> = observer.withheld().into_iter().map(|w| w.tool).collect();
    let refused = observer.refused();
    println!("withheld from the palette: {withheld:?}");
    for r in &refused {
        println!("refused {} (turn {}): {}", r.tool, r.turn, r.reason);
    }
    println!("answer: {answer}");
    Ok(Outcome {
        answer,
        withheld,
        refused,
        deletions: runs.load(Ordering::SeqCst),
    })
}

/// The sim tries the deletion on the first turn although it is not offered, then answers.
pub fn tune(config: SimConfig) -> SimConfig {
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "Tidy up record 42",
            ScriptAnswer::ToolCalls(vec![ScriptToolCall {
                name: "delete_record".into(),
                arguments: json!({"id": "42"}),
            }]),
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
