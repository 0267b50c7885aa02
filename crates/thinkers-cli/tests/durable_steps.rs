//! Human approval and durable steps, through the real binary: `thinkers submit` puts an
//! `errands` workflow (a thinker whose `do_errand` tool appends to a ledger file, its own
//! counter) on the PostgreSQL queue; `thinkers worker` processes run it against thinkers-sim
//! over HTTP; `thinkers approvals` / `approve` / `deny` decide from another process.
//!
//! * Approval: each errand waits for a person; the workflow parks `awaiting_approval` (its job
//!   rows say so, no worker holds it, Redis holds no slot for it); the worker is killed; a second
//!   process approves; a new worker replays it. Every errand ran exactly once.
//! * Denial: the model reads the denial and its reason and answers without the errand.
//! * Crash safety: a worker SIGKILLed inside the third of three errands (journaled as started,
//!   never finished); another worker parks the workflow with that errand's outcome unknown; a
//!   person approves running it again; the workflow completes; each errand ran once and the sim
//!   saw no body twice.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[allow(dead_code, unreachable_pub)]
#[path = "../../thinkers/tests/conversations/pg.rs"]
mod pg;

#[allow(unreachable_pub, dead_code)]
mod support {
    pub mod errands;
    pub mod queue;
}

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use futures::FutureExt as _;
use serde_json::{Value, json};
use support::errands::{ledger_lines, paid_once, sim};
use support::queue::{count, finish, run_ok, spawn_worker, status, unique, wait_for};

/// The tests of this file run one at a time: each starts worker processes.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const ENTRY: &str = "sim-small-a";

fn submit_args<'a>(input: &'a str, db: &'a str, queue: &'a str) -> [&'a str; 8] {
    [
        "submit", "errands", "--input", input, "--db", db, "--queue", queue,
    ]
}

async fn pending(db: &str) -> Result<Vec<Value>> {
    let out = run_ok(&["approvals", "--db", db, "--json"]).await?;
    let all: Vec<Value> = serde_json::from_str(&out)?;
    Ok(all)
}

/// Wait until the workflow parks for a person, and return the one pending approval.
async fn parked(db: &str, queue: &str, id: &str) -> Result<Value> {
    wait_for(
        "the workflow to wait for approval",
        Duration::from_secs(60),
        || {
            status(db, queue, id).map(|s| {
                let s = s?;
                ensure!(s["status"] != "failed", "the workflow failed: {s}");
                Ok(s["status"] == "awaiting_approval")
            })
        },
    )
    .await?;
    let waiting = pending(db).await?;
    ensure!(waiting.len() == 1, "one pending call: {waiting:?}");
    Ok(waiting[0].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_workflow_survives_its_worker_and_runs_each_errand_once() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(db) = pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let redis = std::env::var("THINKERS_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned());
    // Worker A shares its budgets through Redis under a prefix of this test's own, so what it
    // holds can be read from here.
    let prefix = unique("approval-budgets");
    let budgets = thinkers::dispatch::RedisBudgets::connect_with(
        &redis,
        &prefix,
        thinkers::dispatch::DEFAULT_LEASE_TTL,
    )
    .await
    .with_context(|| format!("Redis at {redis}"))?;
    let budget = thinkers::model::Catalog::bundled()
        .entry(ENTRY)?
        .budget_name()
        .to_string();
    let sim = sim().await?;
    let url = sim.base_url();
    let queue = unique("approve");
    let dir = tempfile::tempdir()?;
    let ledger = dir.path().join("ledger.txt");
    let input = json!({
        "errands": ["errand-one", "errand-two", "errand-three"],
        "ledger": ledger, "approval": true, "entry": ENTRY,
    })
    .to_string();
    let id = run_ok(&submit_args(&input, &db, &queue)).await?;

    // Worker A runs the thinker up to its first call and parks the workflow.
    let mut a = spawn_worker(
        &db,
        &queue,
        &url,
        &[
            "--name",
            "worker-a",
            "--lease-secs",
            "2",
            "--redis",
            &redis,
            "--redis-prefix",
            &prefix,
        ],
    )?;
    let first = parked(&db, &queue, &id).await?;
    assert_eq!(first["tool"], "do_errand");
    assert_eq!(first["arguments"]["errand"], "errand-one");
    assert_eq!(first["status"], "pending");
    assert!(
        ledger_lines(&ledger).is_empty(),
        "nothing ran before approval"
    );
    let seen = status(&db, &queue, &id).await?;
    let run_a = seen["run"].as_str().context("A's run")?.to_owned();
    // The paused run's job rows say so, down to the call that waits; nothing runs.
    let waiting_rows = count(
        &db,
        &format!(
            "SELECT COUNT(*) FROM jobs WHERE workflow = '{run_a}' AND status = 'awaiting_approval'"
        ),
    )
    .await?;
    assert!(
        waiting_rows >= 2,
        "the thinker and the paused call: {waiting_rows}"
    );
    let running = count(
        &db,
        &format!("SELECT COUNT(*) FROM jobs WHERE workflow = '{run_a}' AND status = 'running'"),
    )
    .await?;
    assert_eq!(running, 0, "nothing of the paused run is running");
    let leased = count(
        &db,
        &format!(
            "SELECT COUNT(*) FROM workflow_queue WHERE id = '{id}' AND lease_until IS NOT NULL"
        ),
    )
    .await?;
    assert_eq!(leased, 0, "no worker holds the paused workflow");
    // The worker is alive and holds no slot of the entry's budget for the paused run.
    assert!(a.try_wait()?.is_none(), "worker A is still running");
    assert_eq!(
        budgets.held(&budget).await?,
        0,
        "nothing reserved while paused"
    );
    let tree = run_ok(&["trace", &run_a, "--db", &db]).await?;
    assert!(
        tree.contains("awaiting_approval") && tree.contains("do_errand"),
        "{tree}"
    );
    assert!(tree.contains("approvals asked in this run"), "{tree}");

    // A is stopped; another process approves; a new worker replays the run.
    a.start_kill()?;
    a.wait().await?;
    let out = run_ok(&["approve", first["id"].as_str().context("id")?, "--db", &db]).await?;
    assert!(out.contains("approved"), "{out}");
    assert_eq!(status(&db, &queue, &id).await?["status"], "queued");
    let _b = spawn_worker(
        &db,
        &queue,
        &url,
        &["--name", "worker-b", "--lease-secs", "2"],
    )?;
    for errand in ["errand-two", "errand-three"] {
        let next = parked(&db, &queue, &id).await?;
        assert_eq!(next["arguments"]["errand"], errand);
        run_ok(&["approve", next["id"].as_str().context("id")?, "--db", &db]).await?;
    }
    let last = finish(&db, &queue, &id, Duration::from_secs(60)).await?;
    assert_eq!(last["status"], "succeeded", "{last}");
    assert!(
        last["state"]["output"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("all three errands are done")),
        "{last}"
    );
    // Each errand ran exactly once, in order, across four attempts.
    assert_eq!(
        ledger_lines(&ledger),
        ["errand-one", "errand-two", "errand-three"]
    );
    assert_eq!(last["attempt"], 4, "{last}");
    // No model call was paid twice: the replays were answered from the response cache.
    assert_eq!(paid_once(&sim), 4, "three calls and the report");
    let decided = pending(&db).await?;
    assert!(decided.is_empty(), "{decided:?}");
    let all = run_ok(&["approvals", "--all", "--db", &db]).await?;
    assert_eq!(all.matches("approved").count(), 3, "{all}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_call_is_read_by_the_model_which_answers_without_it() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(db) = pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let sim = sim().await?;
    let queue = unique("deny");
    let dir = tempfile::tempdir()?;
    let ledger = dir.path().join("ledger.txt");
    let input = json!({
        "errands": ["errand-one"], "ledger": ledger, "approval": true, "entry": ENTRY,
    })
    .to_string();
    let id = run_ok(&submit_args(&input, &db, &queue)).await?;
    let _w = spawn_worker(&db, &queue, &sim.base_url(), &["--lease-secs", "2"])?;
    let asked = parked(&db, &queue, &id).await?;
    let approval = asked["id"].as_str().context("id")?;
    let out = run_ok(&[
        "deny",
        approval,
        "--reason",
        "the shop is closed today",
        "--db",
        &db,
    ])
    .await?;
    assert!(out.contains("denied"), "{out}");
    let last = finish(&db, &queue, &id, Duration::from_secs(60)).await?;
    assert_eq!(last["status"], "succeeded", "{last}");
    assert!(
        last["state"]["output"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("denied")),
        "{last}"
    );
    assert!(
        ledger_lines(&ledger).is_empty(),
        "a denied errand never ran"
    );
    // The model read the denial and the person's reason.
    let told = sim.requests().into_iter().any(|r| {
        r.raw_body.contains("A person denied this call")
            && r.raw_body.contains("the shop is closed today")
    });
    assert!(told, "the denial reached the model");
    paid_once(&sim);
    // Deciding it again the other way is refused, naming the id.
    let out = support::queue::thinkers()
        .args(["approve", approval, "--db", &db])
        .output()
        .await?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains(approval) && err.contains("denied"),
        "{err}"
    );
    // An unknown id is refused, naming it.
    let out = support::queue::thinkers()
        .args(["approve", "no-such-approval", "--db", &db])
        .output()
        .await?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no-such-approval"),
        "{err}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_never_repeats_a_finished_errand() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(db) = pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let sim = sim().await?;
    let url = sim.base_url();
    let queue = unique("crash");
    let dir = tempfile::tempdir()?;
    let ledger = dir.path().join("ledger.txt");
    // Each errand waits 1.5 s before its side effect: the kill lands inside the third.
    let input = json!({
        "errands": ["errand-one", "errand-two", "errand-three"],
        "ledger": ledger, "pause_ms": 1500, "entry": ENTRY,
    })
    .to_string();
    let id = run_ok(&submit_args(&input, &db, &queue)).await?;
    let mut a = spawn_worker(
        &db,
        &queue,
        &url,
        &["--name", "worker-a", "--lease-secs", "2"],
    )?;
    // Killed once two errands are journaled and the model's third call is answered (and
    // cached): the third errand is then inside its pause. A model call or an errand in flight at
    // the kill could be sent or run twice; none is.
    wait_for("two finished errands", Duration::from_secs(60), || {
        count(
            &db,
            "SELECT COUNT(*) FROM step_journal WHERE outcome <> '\"started\"'",
        )
        .map(|n| Ok(n? >= 2))
    })
    .await?;
    wait_for(
        "the third call's cached answer",
        Duration::from_secs(60),
        || count(&db, "SELECT COUNT(*) FROM response_cache").map(|n| Ok(n? >= 3)),
    )
    .await?;
    a.start_kill()?; // SIGKILL
    a.wait().await?;
    assert_eq!(ledger_lines(&ledger), ["errand-one", "errand-two"]);
    let started = Instant::now();
    let _b = spawn_worker(
        &db,
        &queue,
        &url,
        &["--name", "worker-b", "--lease-secs", "2"],
    )?;
    // The third errand started and never finished: B parks the workflow for a person to say
    // whether it runs again, and runs nothing of it meanwhile.
    let unknown = parked(&db, &queue, &id).await?;
    assert_eq!(unknown["kind"], "outcome_unknown", "{unknown}");
    assert_eq!(unknown["arguments"]["errand"], "errand-three");
    assert_eq!(ledger_lines(&ledger), ["errand-one", "errand-two"]);
    let approval = unknown["id"].as_str().context("id")?;
    run_ok(&["approve", approval, "--db", &db]).await?;
    let last = finish(&db, &queue, &id, Duration::from_secs(60)).await?;
    assert_eq!(last["status"], "succeeded", "{last}");
    assert_eq!(
        last["attempt"], 3,
        "claimed again after the lease passed, then after the decision"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    // The two finished errands came from the journal; the third ran once.
    assert_eq!(
        ledger_lines(&ledger),
        ["errand-one", "errand-two", "errand-three"]
    );
    assert_eq!(paid_once(&sim), 4, "no model call was paid twice");
    let run_b = last["run"].as_str().context("B's run")?;
    let tree = run_ok(&["trace", run_b, "--db", &db]).await?;
    assert_eq!(
        tree.matches("do_errand").count(),
        1,
        "only the third ran on B: {tree}"
    );
    Ok(())
}
