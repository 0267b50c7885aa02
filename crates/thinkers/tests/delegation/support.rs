//! Shared tools, hubs and helpers for the delegation tests.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use thinkers::Dispatcher;
use thinkers::hub::{Skill, ToolHub};
use thinkers::model::{Grade, OutputSize};
use thinkers::record::MemoryRecorder;
use thinkers::thinker::{ArtifactRef, ScriptedTurns, ThinkerDeclaration};
use thinkers::tool::{Tool, ToolContext};

#[path = "../common/glossary.rs"]
mod glossary;

pub use glossary::{Definition, Delete, Lookup};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct Empty {}

/// What a probe saw of its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub read_only: bool,
    pub ticket: Option<String>,
}

/// A read-only tool that records the scope each call ran in.
#[derive(Debug, Default, Clone)]
pub struct ScopeProbe {
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Tool for ScopeProbe {
    const NAME: &'static str = "scope_probe";
    type Input = Empty;
    type Output = String;
    fn description(&self) -> Cow<'static, str> {
        "Report the scope.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(&self, _: &Empty, cx: &ToolContext<'_>) -> thinkers::Result<String> {
        let scope = cx.job.scope();
        self.seen.lock().unwrap().push(Seen {
            read_only: scope.is_read_only(),
            ticket: scope.axis("ticket").map(str::to_owned),
        });
        Ok(format!(
            "read_only={} ticket={:?}",
            scope.is_read_only(),
            scope.axis("ticket")
        ))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// A justification a reader can check.
    pub reasoning: String,
    pub summary: String,
    pub artifacts: Vec<ArtifactRef>,
}

pub fn summary(text: &str, refs: &[&str]) -> serde_json::Value {
    json!({"reasoning": "checked", "summary": text, "artifacts": refs})
}

/// A sub-thinker's final answer.
pub fn sub_answer(text: &str, refs: &[&str]) -> serde_json::Value {
    json!({
        "summary": text,
        "reasoning": {"approach": "looked it up", "steps": ["read the result"]},
        "artifacts": refs
    })
}

pub fn decl() -> ThinkerDeclaration {
    ThinkerDeclaration::new(Grade::Small, OutputSize::Compact)
}

/// A plain dispatcher recording to memory (scripted turns need no model services).
pub fn dispatcher() -> (Dispatcher, MemoryRecorder) {
    let rec = MemoryRecorder::new();
    let d = Dispatcher::builder()
        .recorder(Arc::new(rec.clone()))
        .build();
    (d, rec)
}

/// A hub with `lookup` and `delete_record`, and two skills.
pub fn hub() -> Arc<ToolHub> {
    let hub = ToolHub::new();
    hub.register_tool(Lookup::default()).unwrap();
    hub.register_tool(Delete::default()).unwrap();
    hub.register_skill(
        Skill::new(
            "house_style",
            "How answers are worded here.",
            "HOUSE-STYLE-TEXT: answer in one short sentence.",
        )
        .unwrap(),
    );
    hub.register_skill(
        Skill::new(
            "citations",
            "How to cite sources.",
            "CITATIONS-TEXT: cite every artifact.",
        )
        .unwrap(),
    );
    Arc::new(hub)
}

/// The tool names offered at turn `i` of a script.
pub fn offered(turns: &ScriptedTurns, i: usize) -> Vec<String> {
    turns.seen()[i]
        .request
        .tools
        .iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// The tool names offered at each turn whose job class is `class`.
pub fn offered_by(turns: &ScriptedTurns, class: &str) -> Vec<Vec<String>> {
    turns
        .seen()
        .iter()
        .filter(|t| t.class == class)
        .map(|t| t.request.tools.iter().map(|s| s.name.to_string()).collect())
        .collect()
}

/// The tool results of message `at` as (call id, is error, content).
pub fn results(obs: &thinkers::thinker::ThinkerObserver, at: usize) -> Vec<(String, bool, String)> {
    obs.messages()[at]
        .content
        .iter()
        .filter_map(|b| match b {
            thinkers::conversation::ContentBlock::ToolResult {
                call_id,
                is_error,
                content,
                ..
            } => Some((call_id.clone(), *is_error, content.clone())),
            _ => None,
        })
        .collect()
}
