//! Effects that never repeat silently, on the embedded SQLite store, with a real process killed
//! mid-effect.
//!
//! Each test runs twice: as the parent (the test itself), and as a child process (this test
//! binary run again with `--exact` on the same test and `THINKERS_EFFECT_CHILD` set). The child
//! starts a durable run whose tool call writes a marker and then never returns; the parent waits
//! for the marker, SIGKILLs the child (the journal holds the call as started, never finished),
//! and replays the run under the same key on the same database file:
//!
//! * an idempotent tool runs again, with the idempotency key the child's call had;
//! * any other tool is not run: the run pauses on an outcome-unknown call holding nothing, and
//!   each decision (run again, skip with a stated result, fail the run) does what it says.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use thinkers::durable::{ApprovalKind, ApprovalStatus, Decision};
use thinkers::model::{Catalog, Grade, ModelDependent as _, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers::tool::{Tool, ToolContext};
use thinkers::{Error, ErrorKind, Runtime};
use thinkers_sim::{MatchOn, Script, ScriptAnswer, ScriptRule, ScriptToolCall, Sim, SimConfig};
use thinkers_store::RuntimeBuilderExt as _;

/// Set in the child: the directory holding the database and the marker.
const CHILD: &str = "THINKERS_EFFECT_CHILD";
/// Set in the child: the sim's base URL.
const SIM_URL: &str = "THINKERS_EFFECT_SIM";
const RUN: &str = "payment-1";

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    /// What happened.
    pub summary: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChargeInput {
    /// Whom to charge.
    pub customer: String,
    /// How much, in cents.
    pub cents: u64,
}

/// How a `charge_card` call behaves in this process.
#[derive(Clone)]
enum Behaviour {
    /// Write the idempotency key to the marker file, then never return (the child).
    Hang(PathBuf),
    /// Note the idempotency key and answer (the parent).
    Charge(Arc<Mutex<Vec<Option<String>>>>),
}

/// Charges a card: an effect that must not happen twice.
struct ChargeCard {
    idempotent: bool,
    behaviour: Behaviour,
}

impl Tool for ChargeCard {
    const NAME: &'static str = "charge_card";
    type Input = ChargeInput;
    type Output = String;
    fn description(&self) -> Cow<'static, str> {
        "Charge a customer's card.".into()
    }
    fn idempotent(&self) -> bool {
        self.idempotent
    }
    async fn call(&self, input: &ChargeInput, cx: &ToolContext<'_>) -> thinkers::Result<String> {
        match &self.behaviour {
            Behaviour::Hang(marker) => {
                let key = cx.idempotency_key().unwrap_or_default();
                std::fs::write(marker, key).map_err(|e| Error::system("marker", e.to_string()))?;
                std::future::pending::<()>().await;
                unreachable!("the child is killed while the call hangs")
            }
            Behaviour::Charge(calls) => {
                calls
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(cx.idempotency_key());
                Ok(format!(
                    "charged {} cents to {}",
                    input.cents, input.customer
                ))
            }
        }
    }
}

fn script() -> Script {
    let report = |s: &str| {
        ScriptAnswer::Json(json!({"reasoning": "did what was asked", "answer": {"summary": s}}))
    };
    Script::new(vec![
        ScriptRule::when_contains("by hand", report("SETTLED BY HAND")).on(MatchOn::ToolResult),
        ScriptRule::when_contains("charged", report("CHARGED")).on(MatchOn::ToolResult),
        ScriptRule::when_contains(
            "Charge",
            ScriptAnswer::ToolCalls(vec![ScriptToolCall {
                name: "charge_card".to_owned(),
                arguments: json!({"customer": "ada", "cents": 500}),
            }]),
        )
        .on(MatchOn::User),
    ])
}

async fn runtime(db: &Path, sim_url: &str) -> Runtime {
    Runtime::builder(Catalog::bundled().with_sim_url(sim_url))
        .database(db.to_string_lossy().into_owned())
        .build()
        .await
        .unwrap()
}

fn job(tool: ChargeCard) -> thinkers::thinker::ThinkerJob<Report> {
    let thinker = Thinker::<Report>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You charge the cards you are asked to charge.",
    )
    .tool(tool)
    .class("payer");
    let mut job = thinker.ask(ThinkerInput::query("Charge ada 500 cents."));
    job.pin_model("sim-small-a".to_owned());
    job
}

/// The child's part: start the run and hang in the tool until killed.
async fn child(dir: &Path, idempotent: bool) {
    let sim_url = std::env::var(SIM_URL).unwrap();
    let rt = runtime(&dir.join("t.db"), &sim_url).await;
    let tool = ChargeCard {
        idempotent,
        behaviour: Behaviour::Hang(dir.join("started")),
    };
    let _ = rt.run_durable(RUN, job(tool)).await;
    panic!("the child's run ended; it should have been killed in the tool");
}

/// What the parent has after killing the child mid-call: the sim, the runtime on the child's
/// database, the key the child's call had, and the calls the parent's tool sees.
struct Crashed {
    sim: Sim,
    rt: Runtime,
    key: String,
    calls: Arc<Mutex<Vec<Option<String>>>>,
    _dir: tempfile::TempDir,
}

impl Crashed {
    fn tool(&self, idempotent: bool) -> ChargeCard {
        ChargeCard {
            idempotent,
            behaviour: Behaviour::Charge(Arc::clone(&self.calls)),
        }
    }

    fn calls(&self) -> Vec<Option<String>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Run `test` as a child that is SIGKILLed inside its tool call, and return the parent's view;
/// `None` in the child (which never returns from here).
async fn crash_mid_call(test: &str, idempotent: bool) -> Option<Crashed> {
    if let Ok(dir) = std::env::var(CHILD) {
        child(Path::new(&dir), idempotent).await;
        return None;
    }
    let mut config = SimConfig::from_catalog_toml(thinkers::model::catalog::BUNDLED_TOML)
        .unwrap()
        .calm();
    config.script = Some(script());
    config.log_bodies = true;
    let sim = Sim::start(config).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, dir.path())
        .env(SIM_URL, sim.base_url())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !marker.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the child ended ({status}) before its call started");
        }
        assert!(Instant::now() < deadline, "the child's call never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // SIGKILL: nothing of the child runs after this, not even a destructor.
    child.kill().unwrap();
    child.wait().unwrap();
    let key = std::fs::read_to_string(&marker).unwrap();
    assert_eq!(
        key.len(),
        64,
        "the child's call had an idempotency key: {key:?}"
    );
    let rt = runtime(&dir.path().join("t.db"), &sim.base_url()).await;
    Some(Crashed {
        sim,
        rt,
        key,
        calls: Arc::default(),
        _dir: dir,
    })
}

/// The replay pauses on the call, naming it as outcome unknown with its arguments; the tool did
/// not run. Returns the approval's id.
async fn paused_as_unknown(c: &Crashed) -> String {
    let err = c.rt.run_durable(RUN, job(c.tool(false))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AwaitingApproval, "{err}");
    assert!(
        c.calls().is_empty(),
        "a call of unknown outcome never runs by itself"
    );
    let waiting = c.rt.approvals(true).await.unwrap();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
    let a = &waiting[0];
    assert_eq!(a.kind, ApprovalKind::OutcomeUnknown);
    assert_eq!(a.tool, "charge_card");
    assert_eq!(a.arguments, json!({"customer": "ada", "cents": 500}));
    assert_eq!(a.run, RUN);
    // Asked again, it stays paused: nothing runs until someone decides.
    let again = c.rt.run_durable(RUN, job(c.tool(false))).await.unwrap_err();
    assert_eq!(again.kind(), ErrorKind::AwaitingApproval);
    assert!(c.calls().is_empty());
    a.id.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_call_cut_off_by_a_crash_runs_again_with_the_same_key() {
    let Some(c) = crash_mid_call(
        "effects::an_idempotent_call_cut_off_by_a_crash_runs_again_with_the_same_key",
        true,
    )
    .await
    else {
        return;
    };
    let out = c.rt.run_durable(RUN, job(c.tool(true))).await.unwrap();
    assert_eq!(out.summary, "CHARGED");
    assert_eq!(
        c.calls(),
        vec![Some(c.key.clone())],
        "run again once, same key"
    );
    // Finished now: a further replay answers it from the journal.
    c.rt.run_durable(RUN, job(c.tool(true))).await.unwrap();
    assert_eq!(c.calls().len(), 1);
    assert!(c.rt.approvals(false).await.unwrap().is_empty());
    c.rt.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_of_unknown_outcome_runs_again_only_when_a_person_says_so() {
    let Some(c) = crash_mid_call(
        "effects::a_call_of_unknown_outcome_runs_again_only_when_a_person_says_so",
        false,
    )
    .await
    else {
        return;
    };
    let id = paused_as_unknown(&c).await;
    let decided = c.rt.approve(&id).await.unwrap();
    assert_eq!(decided.status, ApprovalStatus::Approved);
    let out = c.rt.run_durable(RUN, job(c.tool(false))).await.unwrap();
    assert_eq!(out.summary, "CHARGED");
    assert_eq!(
        c.calls(),
        vec![Some(c.key.clone())],
        "run again once, with the key the first attempt had"
    );
    c.rt.run_durable(RUN, job(c.tool(false))).await.unwrap();
    assert_eq!(c.calls().len(), 1, "then answered from the journal");
    c.rt.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_of_unknown_outcome_skipped_with_a_result_never_runs() {
    let Some(c) = crash_mid_call(
        "effects::a_call_of_unknown_outcome_skipped_with_a_result_never_runs",
        false,
    )
    .await
    else {
        return;
    };
    let id = paused_as_unknown(&c).await;
    let skip = Decision::Skip {
        result: "settled by hand: ref 42".to_owned(),
    };
    assert_eq!(
        c.rt.decide(&id, &skip).await.unwrap().status,
        ApprovalStatus::Skipped
    );
    let out = c.rt.run_durable(RUN, job(c.tool(false))).await.unwrap();
    assert_eq!(out.summary, "SETTLED BY HAND");
    assert!(c.calls().is_empty(), "a skipped call never runs");
    let last = c.sim.requests().pop().unwrap().raw_body;
    assert!(last.contains("ref 42"), "the model read the stated result");
    c.rt.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_of_unknown_outcome_can_fail_its_run() {
    let Some(c) =
        crash_mid_call("effects::a_call_of_unknown_outcome_can_fail_its_run", false).await
    else {
        return;
    };
    let id = paused_as_unknown(&c).await;
    let fail = Decision::Fail {
        reason: "the bank reports a double charge".to_owned(),
    };
    c.rt.decide(&id, &fail).await.unwrap();
    let err = c.rt.run_durable(RUN, job(c.tool(false))).await.unwrap_err();
    assert_ne!(err.kind(), ErrorKind::AwaitingApproval);
    let text = err.to_string();
    assert!(text.contains("double charge"), "{text}");
    assert!(text.contains(&id), "{text}");
    assert!(c.calls().is_empty(), "a failed call never runs");
    c.rt.shutdown().await.unwrap();
}

#[tokio::test]
async fn every_call_a_thinker_makes_has_an_idempotency_key_of_its_own() {
    // Outside a durable run, with no store: the key is there, the same on the dispatcher's
    // retries, and another call (here another run) has another.
    let mut config = SimConfig::from_catalog_toml(thinkers::model::catalog::BUNDLED_TOML)
        .unwrap()
        .calm();
    config.script = Some(script());
    let sim = Sim::start(config).await.unwrap();
    let rt = Runtime::builder(Catalog::bundled().with_sim_url(&sim.base_url()))
        .build()
        .await
        .unwrap();
    let calls: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let tool = || ChargeCard {
        idempotent: false,
        behaviour: Behaviour::Charge(Arc::clone(&calls)),
    };
    rt.run(job(tool())).await.unwrap();
    rt.run(job(tool())).await.unwrap();
    let keys = calls.lock().unwrap().clone();
    assert_eq!(keys.len(), 2);
    let (a, b) = (keys[0].clone().unwrap(), keys[1].clone().unwrap());
    assert_eq!((a.len(), b.len()), (64, 64));
    assert_ne!(a, b, "two runs, two effects, two keys");
    rt.shutdown().await.unwrap();
}
