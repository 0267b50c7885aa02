//! Human approval and durable steps in one process, on the embedded SQLite store: a tool call
//! that needs approval pauses a durable run ([`thinkers::Runtime::run_durable`]) with
//! `AwaitingApproval`, holding nothing; [`thinkers::Runtime::approve`] / `deny` decide it; the
//! same run under the same key goes on, answering finished calls from the journal.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use thinkers::durable::{ApprovalPolicy, ApprovalStatus};
use thinkers::model::{Catalog, Grade, ModelDependent as _, OutputSize};
use thinkers::record::JobStatus;
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers::tool::{Tool, ToolContext};
use thinkers::{Error, ErrorKind, Runtime};
use thinkers_sim::{MatchOn, Script, ScriptAnswer, ScriptRule, ScriptToolCall, Sim, SimConfig};
use thinkers_store::{RuntimeBuilderExt as _, RuntimeExt as _};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// What happened.
    pub summary: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoteInput {
    /// Who gets the note.
    pub to: String,
}

/// Sends a note (a side effect, counted); asks for approval when `ask` is set.
struct SendNote {
    sent: Arc<AtomicUsize>,
    ask: bool,
}

impl Tool for SendNote {
    const NAME: &'static str = "send_note";
    type Input = NoteInput;
    type Output = String;
    fn description(&self) -> Cow<'static, str> {
        "Send a note to someone.".into()
    }
    fn needs_approval(&self, input: &NoteInput) -> bool {
        self.ask && input.to != "myself"
    }
    async fn call(&self, input: &NoteInput, _: &ToolContext<'_>) -> thinkers::Result<String> {
        self.sent.fetch_add(1, Ordering::SeqCst);
        Ok(format!("note sent to {}", input.to))
    }
}

fn script() -> Script {
    let report = |s: &str| {
        ScriptAnswer::Json(json!({"reasoning": "did what was asked", "answer": {"summary": s}}))
    };
    Script::new(vec![
        ScriptRule::when_contains("denied", report("NOT SENT: a person denied it"))
            .on(MatchOn::ToolResult),
        ScriptRule::when_contains("note sent", report("SENT")).on(MatchOn::ToolResult),
        ScriptRule::when_contains("no store", report("NOT SENT: nobody to ask"))
            .on(MatchOn::ToolResult),
        ScriptRule::when_contains(
            "Notify",
            ScriptAnswer::ToolCalls(vec![ScriptToolCall {
                name: "send_note".to_owned(),
                arguments: json!({"to": "ops"}),
            }]),
        )
        .on(MatchOn::User),
    ])
}

struct World {
    sim: Sim,
    rt: Runtime,
    _dir: tempfile::TempDir,
}

async fn world(policy: Option<ApprovalPolicy>, database: bool) -> World {
    let mut config = SimConfig::from_catalog_toml(thinkers::model::catalog::BUNDLED_TOML)
        .unwrap()
        .calm();
    config.script = Some(script());
    config.log_bodies = true;
    let sim = Sim::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut b = Runtime::builder(Catalog::bundled().with_sim_url(&sim.base_url()));
    if database {
        b = b.database(dir.path().join("t.db").to_string_lossy().into_owned());
    }
    if let Some(p) = policy {
        b = b.approval_policy(p);
    }
    World {
        sim,
        rt: b.build().await.unwrap(),
        _dir: dir,
    }
}

fn job(sent: &Arc<AtomicUsize>, ask: bool) -> thinkers::thinker::ThinkerJob<Report> {
    let thinker = Thinker::<Report>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You send the notes you are asked to send.",
    )
    .tool(SendNote {
        sent: Arc::clone(sent),
        ask,
    })
    .class("notifier");
    let mut job = thinker.ask(ThinkerInput::query("Notify ops that the deploy is done."));
    job.pin_model("sim-small-a".to_owned());
    job
}

fn pending_of(e: &Error) -> Vec<thinkers::PendingCall> {
    match e {
        Error::AwaitingApproval { pending } => pending.clone(),
        other => panic!("expected AwaitingApproval, got {other}"),
    }
}

#[tokio::test]
async fn an_approved_call_runs_once_when_the_run_goes_on() {
    let w = world(None, true).await;
    let sent = Arc::new(AtomicUsize::new(0));
    let err =
        w.rt.run_durable("deploy-1", job(&sent, true))
            .await
            .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AwaitingApproval);
    let pending = pending_of(&err);
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tool, "send_note");
    assert!(err.to_string().contains(&pending[0].id), "{err}");
    assert_eq!(
        sent.load(Ordering::SeqCst),
        0,
        "nothing ran before a person decided"
    );

    // The record says the run waits; the approval names the call.
    w.rt.flush().await.unwrap();
    let records = w.rt.open_store().unwrap().records();
    let runs = records.list_workflows(5).await.unwrap();
    assert_eq!(runs[0].status, JobStatus::AwaitingApproval);
    let jobs = records.workflow_jobs(runs[0].workflow).await.unwrap();
    assert!(
        jobs.iter()
            .any(|j| j.class == "send_note" && j.status == JobStatus::AwaitingApproval),
        "the paused call is in the trajectory"
    );
    let asked = w.rt.approvals(true).await.unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].arguments, json!({"to": "ops"}));
    assert_eq!(asked[0].run, "deploy-1");

    let decided = w.rt.approve(&pending[0].id).await.unwrap();
    assert_eq!(decided.status, ApprovalStatus::Approved);
    assert!(w.rt.approvals(true).await.unwrap().is_empty());
    // Approving twice is harmless; denying an approved call is refused, naming it.
    w.rt.approve(&pending[0].id).await.unwrap();
    let again =
        w.rt.deny(&pending[0].id, "changed my mind")
            .await
            .unwrap_err();
    assert!(again.to_string().contains(&pending[0].id), "{again}");

    assert_eq!(
        w.sim.requests().len(),
        1,
        "the turn that asked for the call"
    );
    let out =
        w.rt.run_durable("deploy-1", job(&sent, true))
            .await
            .unwrap();
    assert_eq!(out.summary, "SENT");
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    assert_eq!(
        w.sim.requests().len(),
        2,
        "the first turn came from the response cache; only the answer was asked for"
    );
    // The same run once more: the call is answered from the journal, the turns from the cache.
    let out =
        w.rt.run_durable("deploy-1", job(&sent, true))
            .await
            .unwrap();
    assert_eq!(out.summary, "SENT");
    assert_eq!(
        sent.load(Ordering::SeqCst),
        1,
        "a journaled call never runs twice"
    );
    assert_eq!(w.sim.requests().len(), 2, "nothing was paid twice");
    // Outside a durable run the embedded cache answers nothing: a plain run asks the model.
    let _ = w.rt.run(job(&sent, false)).await.unwrap();
    assert_eq!(
        w.sim.requests().len(),
        4,
        "a plain run is never served from the cache"
    );
    // A different run key is a different run: it asks again.
    let err =
        w.rt.run_durable("deploy-2", job(&sent, true))
            .await
            .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AwaitingApproval);
    w.rt.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_denied_call_is_answered_with_the_reason_and_never_runs() {
    let w = world(None, true).await;
    let sent = Arc::new(AtomicUsize::new(0));
    let err =
        w.rt.run_durable("deploy-3", job(&sent, true))
            .await
            .unwrap_err();
    let id = pending_of(&err)[0].id.clone();
    w.rt.deny(&id, "ops is asleep").await.unwrap();
    let out =
        w.rt.run_durable("deploy-3", job(&sent, true))
            .await
            .unwrap();
    assert_eq!(out.summary, "NOT SENT: a person denied it");
    assert_eq!(sent.load(Ordering::SeqCst), 0);
    let last = w.sim.requests().pop().unwrap().raw_body;
    assert!(last.contains("ops is asleep"), "the model read the reason");
    let unknown = w.rt.approve("nope").await.unwrap_err();
    assert!(unknown.to_string().contains("nope"), "{unknown}");
    w.rt.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_runtime_policy_asks_for_tools_that_do_not_ask_themselves() {
    let w = world(Some(ApprovalPolicy::new().tool("send_note")), true).await;
    let sent = Arc::new(AtomicUsize::new(0));
    let err =
        w.rt.run_durable("deploy-4", job(&sent, false))
            .await
            .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AwaitingApproval);
    assert_eq!(sent.load(Ordering::SeqCst), 0);
    let effects = world(Some(ApprovalPolicy::new().side_effects()), true).await;
    let err = effects
        .rt
        .run_durable("deploy-5", job(&sent, false))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AwaitingApproval);
    w.rt.shutdown().await.unwrap();
    effects.rt.shutdown().await.unwrap();
}

#[tokio::test]
async fn without_a_store_a_call_that_needs_approval_is_refused_not_run() {
    let w = world(None, false).await;
    let sent = Arc::new(AtomicUsize::new(0));
    let _ = w.rt.run(job(&sent, true)).await;
    assert_eq!(
        sent.load(Ordering::SeqCst),
        0,
        "an unapproved call never runs"
    );
    let told = w
        .sim
        .requests()
        .into_iter()
        .any(|r| r.raw_body.contains("needs a person"));
    assert!(told, "the model was told why");
    w.rt.shutdown().await.unwrap();
}

/// A model that reuses a call id (`call_0` on every turn, as some OpenAI-compatible servers do)
/// makes two identical calls in two turns of one durable run: both run. The journal keys a call
/// by the message that holds it too, so the second is not answered with the first's result.
#[tokio::test]
async fn a_reused_call_id_in_a_later_turn_still_runs() {
    let w = world(None, true).await;
    let sent = Arc::new(AtomicUsize::new(0));
    let turns = thinkers::thinker::ScriptedTurns::new()
        .then_calls(&[("call_0", "send_note", json!({"to": "ops"}))])
        .then_calls(&[("call_0", "send_note", json!({"to": "ops"}))])
        .then_answer(json!({"summary": "TWICE"}));
    let thinker = Thinker::<Report>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You send the notes you are asked to send.",
    )
    .tool(SendNote {
        sent: Arc::clone(&sent),
        ask: false,
    })
    .turns(turns)
    .class("notifier");
    let out =
        w.rt.run_durable(
            "twice",
            thinker.ask(ThinkerInput::query("Notify ops twice.")),
        )
        .await
        .unwrap();
    assert_eq!(out.summary, "TWICE");
    assert_eq!(sent.load(Ordering::SeqCst), 2, "each turn's call ran");
    w.rt.shutdown().await.unwrap();
}

/// A sim whose model asks `send_note` for `to`.
async fn sim_sending_to(to: &str) -> Sim {
    let mut config = SimConfig::from_catalog_toml(thinkers::model::catalog::BUNDLED_TOML)
        .unwrap()
        .calm();
    config.script = Some(Script::new(vec![
        ScriptRule::when_contains(
            "note sent",
            ScriptAnswer::Json(json!({"reasoning": "done", "answer": {"summary": "SENT"}})),
        )
        .on(MatchOn::ToolResult),
        ScriptRule::when_contains(
            "Notify",
            ScriptAnswer::ToolCalls(vec![ScriptToolCall {
                name: "send_note".to_owned(),
                arguments: json!({ "to": to }),
            }]),
        )
        .on(MatchOn::User),
    ]));
    Sim::start(config).await.unwrap()
}

#[tokio::test]
async fn an_approval_covers_the_arguments_it_was_given_and_no_others() {
    // The run asks to send a note to ops, and a person approves that. The run is replayed in a
    // runtime whose provider answers the same turn with the same call (same place, same call id)
    // to everyone: the approval does not cover it, and it waits for a decision of its own.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db").to_string_lossy().into_owned();
    let sent = Arc::new(AtomicUsize::new(0));
    let (ops, everyone) = (
        sim_sending_to("ops").await,
        sim_sending_to("everyone").await,
    );
    let rt = |sim: &Sim| {
        Runtime::builder(Catalog::bundled().with_sim_url(&sim.base_url()))
            .database(db.clone())
            .build()
    };
    let first = rt(&ops).await.unwrap();
    let err = first
        .run_durable("bound-1", job(&sent, true))
        .await
        .unwrap_err();
    let approved = first.approve(&pending_of(&err)[0].id).await.unwrap();
    assert_eq!(approved.arguments, json!({"to": "ops"}));
    first.shutdown().await.unwrap();

    let replay = rt(&everyone).await.unwrap();
    let err = replay
        .run_durable("bound-1", job(&sent, true))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AwaitingApproval, "{err}");
    assert_eq!(
        sent.load(Ordering::SeqCst),
        0,
        "the approval for ops sent nothing to everyone"
    );
    let waiting = replay.approvals(true).await.unwrap();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let other = &waiting[0];
    assert_eq!(other.arguments, json!({"to": "everyone"}));
    assert_eq!(
        (&other.place, &other.call_id),
        (&approved.place, &approved.call_id),
        "the same call of the run, with other arguments"
    );
    assert_ne!(other.arguments_hash, approved.arguments_hash);
    // Approved in its turn, the call with the arguments approved runs.
    replay.approve(&other.id).await.unwrap();
    let out = replay
        .run_durable("bound-1", job(&sent, true))
        .await
        .unwrap();
    assert_eq!(out.summary, "SENT");
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    replay.shutdown().await.unwrap();
}
