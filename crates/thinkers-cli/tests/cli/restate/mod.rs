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

/// A service process SIGKILLed mid-step: each outcome of a step cut off, and a fan-out replayed.
mod crashes;
/// Service processes sharing one limit through Redis.
mod limits;

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use futures::{FutureExt as _, StreamExt as _};
use serde_json::{Value, json};
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers_sim::{Sim, SimConfig};

use crate::support::cli::{count, finish, run_ok, status, wait_for};
use crate::support::errands::{ledger_lines, paid_once, sim};
use crate::support::restate::{RestateServer, service_addr, spawn_service};
use crate::support::{self, pg};

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
    let mut services = Vec::new();
    for name in names {
        services.push(spawn_service(db, &addr, &sim.base_url(), name, &[]).await?);
    }
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
    let _a = spawn_service(&db, &addr, &url, "service-c", &[]).await?;
    let _b = spawn_service(&db, &addr, &url, "service-d", &[]).await?;
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
