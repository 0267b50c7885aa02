//! The gate (`THINKERS_REAL_MODEL_URL`, `THINKERS_REQUIRE_REAL_MODEL`), the catalog written at
//! run time, a runtime over it, the lock the tests take turns with, and the protocol checks.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::Runtime;
use thinkers::conversation::{ContentBlock, Message, Role};
use thinkers::model::Catalog;
use thinkers::record::{JobStatus, MemoryRecorder};
use thinkers::tool::{Tool, ToolContext};
use tokio::sync::{Mutex, MutexGuard};

pub(crate) use crate::gate::{NATIVE, TEXT};

/// The server answers one request at a time; a test holds this while it talks to it.
static SERVER: Mutex<()> = Mutex::const_new(());

/// A test's hold on the server, with a runtime over the catalog and its recorder.
pub struct Server {
    pub rt: Runtime,
    pub rec: MemoryRecorder,
    _turn: MutexGuard<'static, ()>,
}

/// The server, or `None` when the test is to be skipped (it then said so). Waits for the other
/// tests to finish with the server first.
pub async fn server(test: &str) -> Option<Server> {
    server_over(test, crate::gate::catalog_toml).await
}

/// [`server`], with a runtime over the catalog `catalog` writes for the server's base URL.
pub async fn server_over(test: &str, catalog: impl FnOnce(&str) -> String) -> Option<Server> {
    let url = crate::gate::server_url(test)?;
    let turn = SERVER.lock().await;
    crate::gate::wait_until_idle(&url);
    let catalog = Catalog::from_toml_str(&catalog(&url), "real-model.toml")
        .unwrap_or_else(|e| panic!("{test}: the test catalog does not load: {e}"));
    let rec = MemoryRecorder::new();
    let rt = Runtime::builder(catalog)
        .recorder(Arc::new(rec.clone()))
        .build()
        .await
        .unwrap();
    Some(Server {
        rt,
        rec,
        _turn: turn,
    })
}

impl Server {
    /// Every job of `class` the runtime recorded ended successfully: the server answered every
    /// model call of the run (no HTTP error, nothing the client failed to decode).
    pub fn assert_every_job_succeeded(&self, class: &str) -> usize {
        let jobs: Vec<_> = self
            .rec
            .jobs()
            .into_iter()
            .filter(|j| j.start.class == class)
            .collect();
        assert!(!jobs.is_empty(), "no job of class {class} was recorded");
        for job in &jobs {
            let end = job.end.as_ref();
            assert_eq!(
                job.status(),
                JobStatus::Succeeded,
                "a {class} job failed: {:?} {:?}",
                end.and_then(|e| e.error_kind.as_deref()),
                end.and_then(|e| e.error.as_deref())
            );
        }
        assert!(
            self.rec.llm_runs().len() >= jobs.len(),
            "fewer model calls recorded than {class} jobs"
        );
        jobs.len()
    }
}

/// Every tool call in `messages` has a non-empty id of its own, and the next message answers
/// each of them exactly once by that id (and nothing else). Returns the number of calls.
pub fn assert_calls_paired_with_results(messages: &[Message]) -> usize {
    let mut seen = BTreeSet::new();
    let mut calls = 0;
    for (i, message) in messages.iter().enumerate() {
        let asked: Vec<(&str, &str)> = message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall { id, name, .. } => Some((id.as_str(), name.as_str())),
                _ => None,
            })
            .collect();
        if asked.is_empty() {
            continue;
        }
        assert_eq!(message.role, Role::Assistant, "tool calls from {message:?}");
        let answered: Vec<(&str, &str)> = messages
            .get(i + 1)
            .unwrap_or_else(|| panic!("the calls of message {i} have no results: {asked:?}"))
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolResult { call_id, name, .. } => {
                    Some((call_id.as_str(), name.as_str()))
                }
                _ => None,
            })
            .collect();
        for (id, name) in &asked {
            assert!(!id.is_empty(), "a {name} call without an id");
            assert!(seen.insert(id.to_string()), "call id {id} used twice");
            assert_eq!(
                answered.iter().filter(|(call, _)| call == id).count(),
                1,
                "call {id} ({name}) is not answered exactly once: {answered:?}"
            );
        }
        assert_eq!(
            answered.len(),
            asked.len(),
            "results {answered:?} for calls {asked:?}"
        );
        calls += asked.len();
    }
    calls
}

/// A term of the glossary. An enum, so the server's grammar for the tool's arguments is a
/// choice of four words: the tiny model cannot ramble inside a string argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Term {
    Seat,
    Grade,
    Admission,
    Artifact,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct LookupInput {
    /// The term to look up.
    pub term: Term,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Definition {
    pub term: Term,
    pub meaning: String,
}

/// Looks a term up in a four-entry glossary.
pub struct Lookup;

impl Tool for Lookup {
    const NAME: &'static str = "glossary_lookup";
    type Input = LookupInput;
    type Output = Definition;

    fn description(&self) -> Cow<'static, str> {
        "Look a term up in the glossary: seat, grade, admission or artifact.".into()
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, input: &LookupInput, _: &ToolContext<'_>) -> thinkers::Result<Definition> {
        let meaning = match input.term {
            Term::Seat => "a claim on a model at a grade",
            Term::Grade => "how capable a model the work needs",
            Term::Admission => "the check that work fits the provider's limits",
            Term::Artifact => "a typed tool output named by a short ref",
        };
        Ok(Definition {
            term: input.term,
            meaning: meaning.to_owned(),
        })
    }
}
