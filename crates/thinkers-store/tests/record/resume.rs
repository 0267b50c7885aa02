//! Conversations of thinkers: a durable thinker resumed by id in a second OS process (the
//! objective stays the one it began with, the seeded follow-up is not placed again, the query
//! arrives as the next user message), an unknown id refused by name, and compaction inside the
//! loop — summarised by the summarization tool as a child of the thinker, recorded in SQLite.

use std::borrow::Cow;
use std::process::Command;

use anyhow::{Context as _, Result, bail};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use thinkers::Runtime;
use thinkers::conversation::{ContentBlock, ConversationId, Role, SUMMARY_HEADER};
use thinkers::error::ErrorKind;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::model::{Catalog, Grade, ModelDependent, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerHooks, ThinkerInput, ThinkerOutput};
use thinkers::tool::{Tool, ToolContext};
use thinkers_sim::{MatchOn, Script, ScriptAnswer, ScriptRule, Sim, SimConfig};
use thinkers_store::{RuntimeBuilderExt as _, RuntimeExt as _};

use crate::glossary::{Lookup, LookupInput};

/// Set to a database path, it turns [`child_thinker`] from a no-op into the first process.
const CHILD_DB: &str = "THINKERS_THINKER_CHILD_DB";
const ID_LINE: &str = "conversation-id=";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Note {
    /// A justification a reader can check: the approach and the steps.
    pub reasoning: String,
    /// The answer in a sentence.
    pub summary: String,
}

struct Plan;
impl ThinkerHooks for Plan {
    fn seeded_followup(&self, _: &ThinkerInput) -> Option<String> {
        Some("PLAN: look the term up first.".into())
    }
}

/// A calm sim over the bundled catalog, with `rounds` tool rounds of `calls` parallel calls.
async fn sim(rounds: u32, calls: u32) -> Result<Sim> {
    scripted_sim(rounds, calls, None).await
}

async fn scripted_sim(rounds: u32, calls: u32, script: Option<Script>) -> Result<Sim> {
    let mut config = SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm();
    config.script = script;
    config.log_bodies = true;
    for m in &mut config.models {
        if let Some(p) = &mut m.profile {
            p.tool_rounds = rounds;
            p.parallel_tool_calls = calls;
        }
    }
    Ok(Sim::start(config).await?)
}

async fn runtime(sim: &Sim, db: &str) -> Result<Runtime> {
    Ok(
        Runtime::builder(Catalog::bundled().with_sim_url(&sim.base_url()))
            .database(db)
            .build()
            .await?,
    )
}

fn glossary(objective: &str) -> Thinker<Note> {
    let mut t = Thinker::<Note>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        objective,
    )
    .tool(Lookup::default())
    .hooks(Plan)
    .durable()
    .class("glossary");
    t.pin_model("sim-small-a".to_owned());
    t
}

/// The first process's half: runs a durable thinker and prints its conversation id. Does
/// nothing in a normal run.
#[tokio::test]
async fn child_thinker() -> Result<()> {
    let Ok(db) = std::env::var(CHILD_DB) else {
        return Ok(());
    };
    let sim = sim(1, 1).await?;
    let rt = runtime(&sim, &db).await?;
    let t = glossary("OBJECTIVE-ONE: explain glossary terms.");
    rt.run(t.ask(ThinkerInput::query("FIRST: what is a seat?")))
        .await?;
    rt.flush().await?;
    let id = t.observer().conversation_id().context("a conversation")?;
    println!("{ID_LINE}{id}");
    Ok(())
}

fn line_value<'a>(stdout: &'a str, prefix: &str) -> Result<&'a str> {
    stdout
        .lines()
        .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest.trim()))
        .with_context(|| format!("no `{prefix}` line in the child's output:\n{stdout}"))
}

fn texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn a_durable_thinker_is_resumed_by_id_in_a_second_process() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("thinker.db");
    let db = db.to_str().context("utf-8 path")?.to_owned();
    let out = Command::new(std::env::current_exe()?)
        .args([
            "--exact",
            "resume::child_thinker",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DB, &db)
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "child failed: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let id = ConversationId::parse(line_value(&stdout, ID_LINE)?)?;

    // This process: its own sim, a runtime over the same file, a thinker built with another
    // objective (which must not replace the one the conversation began with).
    let sim = sim(0, 1).await?;
    let rt = runtime(&sim, &db).await?;
    let stored = rt.conversations().resume(&id).await?;
    let before = stored.messages().len();
    assert!(before >= 4, "query, call, result, answer: {before}");
    let t = glossary("OBJECTIVE-TWO: this objective must not be used.");
    rt.run(t.resume(id.clone(), ThinkerInput::query("SECOND: and a ticket?")))
        .await?;

    let requests = sim.requests();
    let body = &requests.last().context("one request")?.body;
    let system = body["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("OBJECTIVE-ONE"), "{system}");
    assert!(!system.contains("OBJECTIVE-TWO"), "{system}");
    let texts = texts(body);
    let plans = texts.iter().filter(|t| t.contains("PLAN:")).count();
    assert_eq!(plans, 1, "the follow-up is placed only once: {texts:?}");
    let first = texts.iter().position(|t| t.contains("FIRST:"));
    let second = texts.iter().position(|t| t.contains("SECOND:"));
    assert!(first.is_some() && second > first, "{texts:?}");
    assert_eq!(
        texts.last().map(String::as_str),
        Some("SECOND: and a ticket?"),
        "the new query is the next user message"
    );

    // The continuation is in the store: everything before, then the new query and answer.
    let after = rt.conversations().resume(&id).await?;
    assert_eq!(after.messages().len(), before + 2);
    assert_eq!(after.messages()[before].role, Role::User);
    assert_eq!(after.messages()[before].text(), "SECOND: and a ticket?");
    assert!(after.objective().render().contains("OBJECTIVE-ONE"));
    Ok(())
}

#[tokio::test]
async fn resuming_an_unknown_id_fails_naming_it() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("t.db");
    let sim = sim(0, 1).await?;
    let rt = runtime(&sim, db.to_str().context("utf-8")?).await?;
    // A failed resume leaves the conversation an earlier run holds as it was.
    let t = glossary("o");
    let first = t.ask(ThinkerInput::query("first"));
    let first_view = first.observer();
    rt.run(first).await?;
    let held = first_view.conversation_id().context("a conversation")?;
    let calls = sim.requests().len();
    let id = ConversationId::new();
    let err = rt
        .run(t.resume(id.clone(), ThinkerInput::query("q")))
        .await
        .expect_err("unknown id");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains(id.as_str()), "{err}");
    assert_eq!(sim.requests().len(), calls, "no model call was made");
    assert_eq!(first_view.conversation_id(), Some(held));
    assert_eq!(
        t.observer().conversation_id(),
        None,
        "the failed resume holds none"
    );
    Ok(())
}

/// A lookup whose results are long (about 2 KB each once shortened for the model); from its
/// fourth call on, its result starts with `ENOUGH`, which the script answers with the final
/// answer.
#[derive(Default)]
struct LongLookup {
    calls: std::sync::atomic::AtomicUsize,
}

impl Tool for LongLookup {
    const NAME: &'static str = "long_lookup";
    type Input = LookupInput;
    type Output = Vec<String>;
    fn description(&self) -> Cow<'static, str> {
        "Look a term up in the long glossary.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(
        &self,
        input: &LookupInput,
        _: &ToolContext<'_>,
    ) -> thinkers::Result<Vec<String>> {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let lead = if n >= 3 { "ENOUGH" } else { "more" };
        Ok(std::iter::once(lead.to_owned())
            .chain(
                (0..120)
                    .map(|i| format!("fact {i} about {} number {}", input.term, i * 7919 % 1000)),
            )
            .collect())
    }
}

#[tokio::test]
async fn the_loop_compacts_with_the_summarization_tool_and_records_it() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("compaction.db");
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "ENOUGH",
            ScriptAnswer::Json(json!({
                "reasoning": "looked it up",
                "answer": {"reasoning": "looked it up", "artifacts": []}
            })),
        )
        .on(MatchOn::ToolResult),
    ]);
    let sim = scripted_sim(50, 1, Some(script)).await?;
    let rt = runtime(&sim, db.to_str().context("utf-8")?).await?;
    let mut t = Thinker::<ThinkerOutput>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact)
            .comfort_tokens(3_000)
            .compaction_trigger(0.5),
        "Explain the long glossary terms.",
    )
    .tool(LongLookup::default())
    .hooks(Plan)
    .class("compacting");
    t.pin_model("sim-small-a".to_owned());
    let obs = t.observer();
    let handle = rt
        .dispatcher()
        .submit(t.ask(ThinkerInput::query("what is a seat?")));
    let workflow = handle.id();
    handle.await?;
    rt.flush().await?;

    let store = rt.store().context("a store")?;
    let rows = store.compactions(workflow).await?;
    assert!(!rows.is_empty(), "a compaction was recorded");
    for r in &rows {
        assert!(r.before_tokens > r.after_tokens, "{r:?}");
        assert!(r.summarized_messages >= 1, "{r:?}");
    }
    // The summary was written by the summarization tool, run as a child of the thinker.
    let jobs = store.workflow_jobs(workflow).await?;
    let summarizer = jobs
        .iter()
        .find(|j| j.class == "summarization")
        .context("a summarization job")?;
    assert_eq!(summarizer.parent, Some(workflow));
    // What stays is paired: every tool result answers a call still in the conversation.
    let messages = obs.messages();
    assert!(
        messages[0].text().starts_with(SUMMARY_HEADER),
        "the folded turns became one summary message: {}",
        messages[0].text()
    );
    assert!(!messages.iter().any(|m| m.text().contains("PLAN:")));
    let calls: Vec<&str> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolCall { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    for b in messages.iter().flat_map(|m| &m.content) {
        if let ContentBlock::ToolResult { call_id, .. } = b {
            assert!(calls.contains(&call_id.as_str()), "{call_id} lost its call");
        }
    }
    Ok(())
}

/// Issue 30, point 4: a pinned thinker's compaction summary is made on its pin, like its turns.
/// The pin is a Medium entry, which an unpinned summary (the summarization tool at Small)
/// never lands on.
#[tokio::test]
async fn the_compaction_summary_of_a_pinned_thinker_runs_on_its_pin() -> Result<()> {
    const PIN: &str = "sim-medium-a";
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("pinned-compaction.db");
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "ENOUGH",
            ScriptAnswer::Json(json!({
                "reasoning": "looked it up",
                "answer": {"reasoning": "looked it up", "artifacts": []}
            })),
        )
        .on(MatchOn::ToolResult),
    ]);
    let sim = scripted_sim(50, 1, Some(script)).await?;
    let rt = runtime(&sim, db.to_str().context("utf-8")?).await?;
    let mut t = Thinker::<ThinkerOutput>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact)
            .comfort_tokens(3_000)
            .compaction_trigger(0.5),
        "Explain the long glossary terms.",
    )
    .tool(LongLookup::default())
    .class("compacting");
    t.pin_model(PIN.to_owned());
    let handle = rt
        .dispatcher()
        .submit(t.ask(ThinkerInput::query("what is a seat?")));
    let workflow = handle.id();
    handle.await?;
    rt.flush().await?;

    let store = rt.store().context("a store")?;
    assert!(
        !store.compactions(workflow).await?.is_empty(),
        "a compaction ran"
    );
    let runs = thinkers_store::RecordStore::llm_runs(
        store,
        thinkers_store::LlmRunFilter::new().workflow(workflow),
    )
    .await?;
    let summaries: Vec<&str> = runs
        .iter()
        .filter(|r| r.class == "summarization")
        .map(|r| r.entry.as_str())
        .collect();
    assert!(!summaries.is_empty(), "the summarization tool was called");
    assert!(
        summaries.iter().all(|e| *e == PIN),
        "every summary call ran on the thinker's pin: {summaries:?}"
    );
    assert!(
        runs.iter().all(|r| r.entry == PIN),
        "the whole conversation ran on the pin"
    );
    Ok(())
}
