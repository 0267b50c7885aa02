//! Workflows on Restate, through the real binary: a real `restate-server` on loopback (from the
//! npm package), `thinkers worker` service processes sharing one deployment
//! address, thinkers-sim over HTTP, PostgreSQL for the record and the approvals.
//!
//! * Crash safety: the service process running an `errands` workflow is SIGKILLed inside the
//!   third of three errands (journaled as started, never finished); on the other process the
//!   workflow waits with that errand's outcome unknown until a person approves running it again,
//!   then completes. Each errand ran once (the ledger file), the sim was paid once per model
//!   call (no body twice), the record holds both runs' trajectories in order. Skipped with a
//!   stated result instead, the errand never runs again and the model reads the result.
//! * Approval: the workflow waits for a person while both service processes restart; it
//!   completes after `thinkers approve`.
//! * Shared limits: three service processes share one entry's TPM limit through Redis; the
//!   sim, configured with the same limit, serves no 429 and at least 85% of it is used over
//!   its 60 s window.
//! * Parallel replay: a fan-out of twelve calls whose process dies with some journaled and
//!   some in flight completes on the other process; only calls in flight are sent again.
//! * The runs explorer's Deny resolves the workflow's promise; deciding again the other way is
//!   refused, the same way again is harmless.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[allow(dead_code, unreachable_pub)]
#[path = "../../thinkers/tests/conversations/pg.rs"]
mod pg;

#[allow(unreachable_pub, dead_code)]
mod support {
    pub mod cli;
    pub mod errands;
    pub mod host;
    pub mod restate;
}

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use futures::{FutureExt as _, StreamExt as _};
use serde_json::{Value, json};
use support::cli::{count, finish, run_ok, status, wait_for};
use support::errands::{ledger_lines, paid_once, sim};
use support::restate::{RestateServer, service_addr, spawn_service};
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers_sim::{Sim, SimConfig};

/// One test at a time: each starts a Restate server and service processes.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const ENTRY: &str = "sim-small-a";

async fn submit(db: &str, restate: &RestateServer, input: &Value) -> Result<String> {
    run_ok(&[
        "submit",
        "errands",
        "--restate",
        &restate.ingress,
        "--input",
        &input.to_string(),
        "--db",
        db,
    ])
    .await
}

/// A fresh PostgreSQL schema and a Restate server; `None` when either is missing and the
/// services are not required.
async fn database_and_server() -> Result<Option<(String, RestateServer)>> {
    let Some(db) = pg::fresh_schema_url().await? else {
        return Ok(None);
    };
    Ok(RestateServer::start().await?.map(|server| (db, server)))
}

/// The errands sim, and the `thinkers worker` processes `names` sharing one
/// address registered with `restate`.
async fn errand_services(
    db: &str,
    restate: &RestateServer,
    names: &[&str],
) -> Result<(Sim, String, Vec<tokio::process::Child>)> {
    let sim = sim().await?;
    let addr = service_addr()?;
    let services = names
        .iter()
        .map(|name| spawn_service(db, &addr, &sim.base_url(), name, &[]))
        .collect::<Result<Vec<_>>>()?;
    restate.register(&addr).await?;
    Ok((sim, addr, services))
}

/// Three errands, each waiting for a person's approval.
fn approved_errands(ledger: &std::path::Path) -> Value {
    json!({
        "errands": ["errand-one", "errand-two", "errand-three"],
        "ledger": ledger, "approval": true, "entry": ENTRY,
    })
}

/// Wait until workflow `id` waits for approval, and return the one call it waits on.
async fn pending_approval(db: &str, id: &str) -> Result<Value> {
    wait_for(
        "the workflow to wait for approval",
        Duration::from_secs(60),
        || {
            status(db, id).map(|s| {
                let s = s?;
                ensure!(s["status"] != "failed", "the workflow failed: {s}");
                Ok(s["status"] == "awaiting_approval")
            })
        },
    )
    .await?;
    let out = run_ok(&["approvals", "--db", db, "--json"]).await?;
    let waiting: Vec<Value> = serde_json::from_str(&out)?;
    ensure!(waiting.len() == 1, "one pending call: {waiting:?}");
    Ok(waiting[0].clone())
}

/// Wait for workflow `id` to succeed with every errand done, each once (the ledger); its last
/// status.
async fn all_errands_done(
    db: &str,
    id: &str,
    ledger: &std::path::Path,
    timeout: Duration,
) -> Result<Value> {
    let last = finish(db, id, timeout).await?;
    ensure!(last["status"] == "succeeded", "{last}");
    ensure!(
        last["state"]["output"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("all three errands are done")),
        "{last}"
    );
    let done = ledger_lines(ledger);
    ensure!(
        done == ["errand-one", "errand-two", "errand-three"],
        "each errand once, in order: {done:?}"
    );
    Ok(last)
}

async fn worker_of(db: &str, id: &str) -> Result<String> {
    let s = status(db, id).await?;
    Ok(s["state"]["worker"].as_str().unwrap_or_default().to_owned())
}

/// A workflow whose service process was SIGKILLed inside its third errand, waiting on the
/// other process for a decision on that errand.
struct Killed {
    sim: Sim,
    id: String,
    ledger: std::path::PathBuf,
    survivor: &'static str,
    /// The `outcome_unknown` approval the workflow waits on.
    approval: String,
    _services: Vec<tokio::process::Child>,
    _dir: tempfile::TempDir,
}

/// Run an `errands` workflow on two service processes and SIGKILL the one running it inside the
/// third errand (journaled as started, never finished); `idempotent` declares `do_errand`
/// idempotent. Returns the sim, the workflow, its ledger and the surviving process's name.
async fn kill_inside_the_third_errand(
    db: &str,
    restate: &RestateServer,
    idempotent: bool,
) -> Result<Killed> {
    let (sim, _, mut services) = errand_services(db, restate, &["service-a", "service-b"]).await?;
    let dir = tempfile::tempdir()?;
    let ledger = dir.path().join("ledger.txt");
    // Each errand waits 1.5 s before its side effect: the kill lands inside the third.
    let input = json!({
        "errands": ["errand-one", "errand-two", "errand-three"],
        "ledger": ledger, "pause_ms": 1500, "entry": ENTRY, "idempotent": idempotent,
    });
    let id = submit(db, restate, &input).await?;
    // Killed once two errands ran and the model asked for the third (whose answer is
    // journaled while the third errand pauses).
    wait_for(
        "two errands and three model calls",
        Duration::from_secs(60),
        || {
            let n = ledger_lines(&ledger).len();
            let calls = sim.requests().len();
            async move { Ok(n >= 2 && calls >= 3) }
        },
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let running_on = worker_of(db, &id).await?;
    let (victim, survivor) = match running_on.as_str() {
        "service-a" => (0, "service-b"),
        "service-b" => (1, "service-a"),
        other => anyhow::bail!("the workflow runs on an unknown worker `{other}`"),
    };
    services[victim].start_kill()?; // SIGKILL
    services[victim].wait().await?;
    ensure!(ledger_lines(&ledger) == ["errand-one", "errand-two"]);
    Ok(Killed {
        sim,
        id,
        ledger,
        survivor,
        approval: String::new(),
        _services: services,
        _dir: dir,
    })
}

/// [`kill_inside_the_third_errand`] with a tool that is not idempotent: on the survivor the
/// workflow waits for a person to say what became of the third errand, and runs nothing
/// meanwhile.
async fn killed_inside_the_third_errand(db: &str, restate: &RestateServer) -> Result<Killed> {
    let mut killed = kill_inside_the_third_errand(db, restate, false).await?;
    let unknown = pending_approval(db, &killed.id).await?;
    ensure!(unknown["kind"] == "outcome_unknown", "{unknown}");
    ensure!(unknown["tool"] == "do_errand", "{unknown}");
    ensure!(
        unknown["arguments"]["errand"] == "errand-three",
        "{unknown}"
    );
    ensure!(
        ledger_lines(&killed.ledger) == ["errand-one", "errand-two"],
        "nothing ran while the workflow waited"
    );
    killed.approval = unknown["id"].as_str().context("id")?.to_owned();
    Ok(killed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_errand_cut_off_by_a_crash_runs_again_with_the_same_key() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some((db, restate)) = database_and_server().await? else {
        return Ok(());
    };
    let killed = kill_inside_the_third_errand(&db, &restate, true).await?;
    // No person is asked: the survivor runs the third errand again, with the key it had.
    let last = all_errands_done(&db, &killed.id, &killed.ledger, Duration::from_secs(90)).await?;
    let pending = run_ok(&["approvals", "--all", "--db", &db, "--json"]).await?;
    let asked: Vec<Value> = serde_json::from_str(&pending)?;
    assert!(asked.is_empty(), "nobody was asked: {asked:?}");
    let keys = ledger_lines(&killed.ledger.with_extension("txt.keys"));
    let third: Vec<&String> = keys
        .iter()
        .filter(|l| l.starts_with("errand-three "))
        .collect();
    assert_eq!(third.len(), 2, "started twice: {keys:?}");
    assert_eq!(third[0], third[1], "with the same key: {keys:?}");
    assert!(
        third[0].len() > "errand-three ".len() + 16,
        "a key: {keys:?}"
    );
    let others: std::collections::HashSet<&String> = keys.iter().collect();
    assert_eq!(others.len(), 3, "one key per errand: {keys:?}");
    assert_eq!(paid_once(&killed.sim), 4, "no model call was paid twice");
    let row = count(
        &db,
        &format!(
            "SELECT COUNT(*) FROM workflows WHERE id = '{}' AND worker = '{}'",
            killed.id, killed.survivor
        ),
    )
    .await?;
    assert_eq!(row, 1, "the survivor finished it: {last}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_errand_cut_off_by_a_crash_and_failed_by_a_person_fails_the_workflow() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some((db, restate)) = database_and_server().await? else {
        return Ok(());
    };
    let killed = killed_inside_the_third_errand(&db, &restate).await?;
    let out = run_ok(&[
        "fail",
        &killed.approval,
        "--reason",
        "the counter may have taken it: check by hand",
        "--db",
        &db,
        "--restate",
        &restate.ingress,
    ])
    .await?;
    ensure!(out.contains("failed"), "{out}");
    let last = finish(&db, &killed.id, Duration::from_secs(90)).await?;
    assert_eq!(last["status"], "failed", "{last}");
    let error = last["state"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("check by hand") && error.contains(&killed.approval),
        "the error names the call and the person's reason: {error}"
    );
    assert_eq!(
        ledger_lines(&killed.ledger),
        ["errand-one", "errand-two"],
        "the failed errand never ran again"
    );
    assert_eq!(
        paid_once(&killed.sim),
        3,
        "no model call after the decision, none paid twice"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_service_process_never_repeats_a_finished_step() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some((db, restate)) = database_and_server().await? else {
        return Ok(());
    };
    let killed = killed_inside_the_third_errand(&db, &restate).await?;
    let Killed {
        sim,
        id,
        ledger,
        survivor,
        ..
    } = &killed;
    let out = run_ok(&[
        "approve",
        &killed.approval,
        "--db",
        &db,
        "--restate",
        &restate.ingress,
    ])
    .await?;
    ensure!(out.contains("approved"), "{out}");

    // Each errand ran once; the two finished ones came from the journal.
    let last = all_errands_done(&db, id, ledger, Duration::from_secs(90)).await?;
    // Every model call was paid once: the replay read the first three from the journal.
    assert_eq!(paid_once(sim), 4, "three tool-call turns and the report");
    let stats = sim.stats();
    assert_eq!(stats.model(ENTRY).requests, 4, "the sim's own count");
    assert_eq!(stats.totals.rate_limited, 0);
    let row = count(
        &db,
        &format!("SELECT COUNT(*) FROM workflows WHERE id = '{id}' AND worker = '{survivor}'"),
    )
    .await?;
    assert_eq!(row, 1, "the survivor {survivor} finished it");

    // The record: the killed run holds the first two errands, the finishing run the third,
    // and the finishing run's four model calls are in the record in turn order.
    let run_b = last["run"]
        .as_str()
        .context("the finishing run")?
        .to_owned();
    let roots = count(&db, "SELECT COUNT(*) FROM jobs WHERE parent IS NULL").await?;
    assert!(roots >= 2, "one root per execution: {roots}");
    let errands_a = count(
        &db,
        &format!(
            "SELECT COUNT(*) FROM jobs WHERE workflow <> '{run_b}' AND class = 'do_errand' \
             AND status = 'succeeded'"
        ),
    )
    .await?;
    assert_eq!(errands_a, 2, "the killed run ran errands one and two");
    let tree = run_ok(&["trace", &run_b, "--db", &db]).await?;
    assert_eq!(
        tree.matches("do_errand").count(),
        1,
        "only the third ran on the survivor: {tree}"
    );
    let calls = count(
        &db,
        &format!("SELECT COUNT(*) FROM llm_runs WHERE workflow = '{run_b}'"),
    )
    .await?;
    assert_eq!(calls, 4, "the replayed turns are on the record too");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_errand_cut_off_by_a_crash_and_skipped_with_a_result_never_runs_again() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some((db, restate)) = database_and_server().await? else {
        return Ok(());
    };
    let killed = killed_inside_the_third_errand(&db, &restate).await?;
    // The person found the third errand done by hand: the model reads that as its result.
    let out = run_ok(&[
        "skip",
        &killed.approval,
        "--result",
        "errand-three was done by hand at the counter",
        "--db",
        &db,
        "--restate",
        &restate.ingress,
    ])
    .await?;
    ensure!(out.contains("skipped"), "{out}");
    let last = finish(&db, &killed.id, Duration::from_secs(90)).await?;
    ensure!(last["status"] == "succeeded", "{last}");
    assert_eq!(
        ledger_lines(&killed.ledger),
        ["errand-one", "errand-two"],
        "the skipped errand never ran again"
    );
    let asked = killed
        .sim
        .requests()
        .pop()
        .context("the report's request")?;
    assert!(
        asked.raw_body.contains("done by hand at the counter"),
        "the model read the stated result"
    );
    assert_eq!(paid_once(&killed.sim), 4, "no model call was paid twice");
    let all = run_ok(&["approvals", "--all", "--db", &db]).await?;
    assert!(all.contains("skipped"), "{all}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_waits_through_restarts_of_every_service_process() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some((db, restate)) = database_and_server().await? else {
        return Ok(());
    };
    let (sim, addr, services) = errand_services(&db, &restate, &["service-a", "service-b"]).await?;
    let url = sim.base_url();
    let dir = tempfile::tempdir()?;
    let ledger = dir.path().join("ledger.txt");
    let id = submit(&db, &restate, &approved_errands(&ledger)).await?;

    let parked = || pending_approval(&db, &id);
    let first = parked().await?;
    assert_eq!(first["arguments"]["errand"], "errand-one");
    assert!(
        ledger_lines(&ledger).is_empty(),
        "nothing ran before approval"
    );
    // While it waits nothing of it runs on any process.
    let running = count(&db, "SELECT COUNT(*) FROM jobs WHERE status = 'running'").await?;
    assert_eq!(running, 0, "nothing of the paused workflow is running");

    // Both service processes go away and come back (the server's invocation may replay on
    // the new ones up to the promise, and wait there again).
    for mut p in services {
        p.start_kill()?;
        p.wait().await?;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _a = spawn_service(&db, &addr, &url, "service-c", &[])?;
    let _b = spawn_service(&db, &addr, &url, "service-d", &[])?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        ledger_lines(&ledger).is_empty(),
        "nothing ran across the restarts"
    );

    let approve = |approval: String| {
        let (db, ingress) = (db.clone(), restate.ingress.clone());
        async move {
            let out = run_ok(&["approve", &approval, "--db", &db, "--restate", &ingress]).await?;
            ensure!(out.contains("approved"), "{out}");
            anyhow::Ok(())
        }
    };
    approve(first["id"].as_str().context("id")?.to_owned()).await?;
    for errand in ["errand-two", "errand-three"] {
        let next = parked().await?;
        assert_eq!(next["arguments"]["errand"], errand);
        approve(next["id"].as_str().context("id")?.to_owned()).await?;
    }
    all_errands_done(&db, &id, &ledger, Duration::from_secs(60)).await?;
    assert_eq!(paid_once(&sim), 4, "no model call was paid twice");
    let all = run_ok(&["approvals", "--all", "--db", &db]).await?;
    assert_eq!(all.matches("approved").count(), 3, "{all}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_service_processes_share_one_tpm_limit_through_redis() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(db) = pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let redis = std::env::var("THINKERS_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned());
    thinkers::dispatch::RedisBudgets::connect(&redis)
        .await
        .with_context(|| format!("Redis at {redis}"))?;
    // Workflows wait for admission far longer than 3 s here; the server may let them.
    let Some(restate) = RestateServer::start_with("2m").await? else {
        return Ok(());
    };
    const TPM: u64 = 150_000;
    const WINDOW: Duration = Duration::from_secs(60);
    let original = "tpm = 2000000";
    ensure!(
        BUNDLED_TOML.contains(original),
        "the bundled catalog changed"
    );
    // The first entry of the bundled catalog is sim-small-a.
    let toml = BUNDLED_TOML.replacen(original, &format!("tpm = {TPM}"), 1);
    let dir = tempfile::tempdir()?;
    let catalog = dir.path().join("catalog.toml");
    std::fs::write(&catalog, &toml)?;
    let mut config = SimConfig::from_catalog_toml(&toml)?.calm();
    let model = config
        .models
        .iter_mut()
        .find(|m| m.name == ENTRY)
        .context("sim-small-a")?;
    assert_eq!(model.tpm, Some(TPM));
    model
        .profile
        .get_or_insert_with(thinkers_sim::Profile::default)
        .latency_ms = [20, 60];
    let sim = Sim::start(config).await?;
    let url = sim.base_url();
    let prefix = support::cli::unique("thinkers-test-budget");
    let catalog = catalog.to_string_lossy().into_owned();
    let addr = service_addr()?;
    let mut services = Vec::new();
    for w in 0..3 {
        services.push(spawn_service(
            &db,
            &addr,
            &url,
            &format!("tpm-{w}"),
            &[
                "--catalog",
                &catalog,
                "--redis",
                &redis,
                "--redis-prefix",
                &prefix,
            ],
        )?);
    }
    restate.register(&addr).await?;
    // More work than one window admits: ~110 tokens per call settle, so ~1,400 calls fill it
    // (48 × 50 = 2,400 calls).
    let store = thinkers::store::PgStore::open(&db).await?;
    let record = thinkers::workflows::Workflows::new(&store);
    let ingress = thinkers::restate::RestateIngress::new(&restate.ingress);
    // Every running invocation is journal traffic for the server, and 48 keep the budget busy. `THINKERS_RESTATE_WORKFLOWS` runs
    // more of them, each shorter (the same 2,400 calls), to measure utilisation at that load.
    let workflows: usize = std::env::var("THINKERS_RESTATE_WORKFLOWS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(48);
    let steps = (2_400 / workflows).max(10);
    let submissions = futures::stream::iter(0..workflows).map(|i| {
        let input = json!({"topic": format!("budget {i}"), "steps": steps, "entry": ENTRY});
        ingress.submit_unchecked(&record, "chain", input)
    });
    let ids: Vec<_> = submissions.buffer_unordered(16).collect().await;
    ensure!(ids.iter().all(Result::is_ok), "every submission was taken");
    wait_for("the first request", Duration::from_secs(30), || {
        std::future::ready(Ok(sim.stats().model(ENTRY).requests > 0))
    })
    .await?;
    // The window opens once all 240 are running (each first sets its row `running`).
    wait_for("every workflow to start", Duration::from_secs(60), || {
        count(
            &db,
            "SELECT COUNT(*) FROM workflows WHERE status = 'queued'",
        )
        .map(|n| Ok(n? == 0))
    })
    .await?;
    let t0 = std::time::Instant::now();
    let start = sim.stats().model(ENTRY);
    tokio::time::sleep(WINDOW.saturating_sub(t0.elapsed())).await;
    let end = sim.stats().model(ENTRY);
    let took_part = count(
        &db,
        "SELECT COUNT(DISTINCT worker) FROM workflows WHERE worker IS NOT NULL",
    )
    .await?;
    for mut s in services {
        s.start_kill()?;
        s.wait().await?;
    }
    let used = (end.input_tokens + end.output_tokens) - (start.input_tokens + start.output_tokens);
    let utilisation = used as f64 / TPM as f64;
    eprintln!(
        "3 Restate service processes over one {TPM} TPM entry, {workflows} workflows of {steps} \
         calls: {} requests, {used} tokens in the window ({:.1}% of the limit), {} 429s, \
         {took_part} processes ran workflows",
        end.requests,
        utilisation * 100.0,
        end.rate_limited
    );
    assert_eq!(end.rate_limited, 0, "the sim served no 429");
    assert_eq!(sim.stats().totals.rate_limited, 0);
    assert!(used <= TPM, "never above the limit: {used} tokens");
    assert!(
        utilisation >= 0.85,
        "utilisation {:.1}%",
        utilisation * 100.0
    );
    assert_eq!(took_part, 3, "every service process ran workflows");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_killed_mid_flight_replays_its_journaled_calls_in_any_order() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some((db, restate)) = database_and_server().await? else {
        return Ok(());
    };
    // Answers spread over 0.2 to 9 s, so when the process dies some calls are journaled and
    // some still in flight, and the journal holds them in the order they came back.
    let mut config = SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm();
    config.log_bodies = true;
    config
        .models
        .iter_mut()
        .find(|m| m.name == ENTRY)
        .context("sim-small-a")?
        .profile
        .get_or_insert_with(thinkers_sim::Profile::default)
        .latency_ms = [200, 9000];
    let sim = Sim::start(config).await?;
    let url = sim.base_url();
    let addr = service_addr()?;
    let mut a = spawn_service(&db, &addr, &url, "service-a", &[])?;
    let mut b = spawn_service(&db, &addr, &url, "service-b", &[])?;
    restate.register(&addr).await?;
    const CALLS: usize = 12;
    let input = json!({"topic": "tides", "calls": CALLS, "entries": [ENTRY]});
    let id = run_ok(&[
        "submit",
        "fanout",
        "--restate",
        &restate.ingress,
        "--input",
        &input.to_string(),
        "--db",
        &db,
    ])
    .await?;
    let recorded = || count(&db, "SELECT COUNT(*) FROM llm_runs");
    wait_for("three answers journaled", Duration::from_secs(60), || {
        recorded().map(|n| Ok(n? >= 3))
    })
    .await?;
    let running_on = worker_of(&db, &id).await?;
    let victim = match running_on.as_str() {
        "service-a" => &mut a,
        "service-b" => &mut b,
        other => anyhow::bail!("the workflow runs on an unknown worker `{other}`"),
    };
    victim.start_kill()?; // SIGKILL
    victim.wait().await?;
    // A recorded call was journaled first (the record is written after the journal holds it).
    let journaled = usize::try_from(recorded().await?)?;
    let sent = sim.requests().len();
    assert_eq!(sent, CALLS, "every call was sent before the kill");
    assert!(
        journaled < CALLS,
        "some calls were in flight at the kill: {journaled}"
    );

    let last = finish(&db, &id, Duration::from_secs(90)).await?;
    assert_eq!(last["status"], "succeeded", "{last}");
    let answers = last["state"]["output"]["answers"]
        .as_array()
        .context("answers")?;
    assert_eq!(answers.len(), CALLS, "{last}");
    // Only calls in flight at the kill were sent again.
    let bodies: Vec<String> = sim.requests().into_iter().map(|r| r.raw_body).collect();
    let distinct: std::collections::HashSet<&String> = bodies.iter().collect();
    assert_eq!(distinct.len(), CALLS);
    let again = bodies.len() - CALLS;
    assert!(
        again <= CALLS - journaled,
        "{again} calls sent again, but only {} were not journaled",
        CALLS - journaled
    );
    assert_eq!(sim.stats().totals.rate_limited, 0);
    // The finishing run's trajectory is the in-process one: the twelve calls, in one step
    // (they ran in parallel), each recorded, the journaled ones too.
    let run = last["run"].as_str().context("the finishing run")?;
    let steps = count(
        &db,
        &format!(
            "SELECT COUNT(*) FROM jobs WHERE workflow = '{run}' AND class = 'fanout_call' \
             AND status = 'succeeded' AND ordinal = 1"
        ),
    )
    .await?;
    assert_eq!(
        steps, CALLS as i64,
        "every call in step 1 of the finishing run"
    );
    let recorded_calls = count(
        &db,
        &format!("SELECT COUNT(*) FROM llm_runs WHERE workflow = '{run}'"),
    )
    .await?;
    assert_eq!(recorded_calls, CALLS as i64, "each call on the record once");
    eprintln!(
        "fan-out of {CALLS} killed with {journaled} calls journaled: {again} sent again, \
         the rest answered from the journal"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_from_the_runs_explorer_resolves_the_restate_promise_once() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some((db, restate)) = database_and_server().await? else {
        return Ok(());
    };
    let (sim, _, _services) = errand_services(&db, &restate, &["service-a"]).await?;
    let url = sim.base_url();
    let dir = tempfile::tempdir()?;
    let ledger = dir.path().join("ledger.txt");
    let id = submit(&db, &restate, &approved_errands(&ledger)).await?;
    let first = pending_approval(&db, &id).await?;
    let approval = first["id"].as_str().context("id")?.to_owned();

    // The runs explorer's Deny button posts this; the host resolves the promise on Restate.
    let host = support::host::serve(&db, &["--restate", &restate.ingress, "--sim-url", &url]);
    let path = format!("/api/runs/approvals/{approval}");
    let deny = r#"{"decision": "deny", "reason": "not today"}"#;
    let (status_line, body) = support::host::http(&host.addr, "POST", &path, deny);
    assert!(status_line.contains("200"), "{status_line} {body}");
    let last = finish(&db, &id, Duration::from_secs(60)).await?;
    assert_eq!(last["status"], "succeeded", "{last}");
    assert!(
        last["state"]["output"]["summary"]
            .as_str()
            .is_some_and(|s| s.contains("denied")),
        "the model read the denial: {last}"
    );
    assert!(
        ledger_lines(&ledger).is_empty(),
        "the denied errand never ran"
    );
    let told = sim.requests().into_iter().any(|r| {
        r.raw_body.contains("A person denied this call") && r.raw_body.contains("not today")
    });
    assert!(told, "the denial and the person's reason reached the model");

    // Deciding it again the other way is refused and changes nothing; the same way again
    // (a retry) is harmless.
    let approve = r#"{"decision": "approve"}"#;
    let (status_line, body) = support::host::http(&host.addr, "POST", &path, approve);
    assert!(!status_line.contains("200"), "{status_line} {body}");
    assert!(
        body.contains(&approval),
        "the refusal names the call: {body}"
    );
    let refused = support::cli::thinkers()
        .args([
            "approve",
            &approval,
            "--db",
            &db,
            "--restate",
            &restate.ingress,
        ])
        .output()
        .await?;
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains(&approval) && err.contains("denied"),
        "approving a denied call: {err}"
    );
    let unknown = support::cli::thinkers()
        .args(["approve", "no-such-approval", "--db", &db])
        .output()
        .await?;
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        !unknown.status.success() && err.contains("no-such-approval"),
        "an unknown id is named: {err}"
    );
    let (status_line, body) = support::host::http(&host.addr, "POST", &path, deny);
    assert!(status_line.contains("200"), "{status_line} {body}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = status(&db, &id).await?;
    assert_eq!(after["status"], "succeeded", "{after}");
    let text = run_ok(&["status", &id, "--db", &db]).await?;
    assert!(
        text.contains("Restate retries the invocation until it ends"),
        "{text}"
    );
    assert!(ledger_lines(&ledger).is_empty());
    assert_eq!(
        paid_once(&sim),
        2,
        "the first turn and the report, once each"
    );
    Ok(())
}

#[tokio::test]
async fn a_bad_submission_is_refused_before_anything_is_written() -> Result<()> {
    // Checked against the registry before connecting: neither the database nor the server
    // named here exists.
    let submit = |name: &'static str, input: &'static str| {
        support::cli::thinkers()
            .args(["submit", name, "--input", input])
            .args([
                "--db",
                "postgres://127.0.0.1:9/none",
                "--restate",
                "http://127.0.0.1:9",
            ])
            .output()
    };
    let out = submit("explain", r#"{"question": 3}"#).await?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("input.question"),
        "a bad input names the field: {err}"
    );
    let out = submit("explian", "{}").await?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("explian") && err.contains("chain"),
        "an unknown workflow is named, with the known ones: {err}"
    );
    Ok(())
}
