//! A service process SIGKILLed mid-step: each outcome of a step cut off, and a fan-out replayed.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use serde_json::{Value, json};
use thinkers_sim::Sim;

use super::*;

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
    let mut a = spawn_service(&db, &addr, &url, "service-a", &[]).await?;
    let mut b = spawn_service(&db, &addr, &url, "service-b", &[]).await?;
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
