//! Workers as processes: the real `thinkers` binary (`submit`, `worker`, `status`) against the
//! real PostgreSQL (a fresh schema per test), Redis and thinkers-sim over HTTP.
//!
//! * A worker SIGKILLed mid-workflow: another worker claims the workflow once the lease passes
//!   and completes it; the model calls the dead worker completed are answered from the response
//!   cache, so the sim receives every request body exactly once.
//! * Three workers share one catalog entry's TPM limit through Redis: the sim, configured with
//!   the same limit, serves no 429 and at least 85% of the limit is used over its 60 s window.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[allow(dead_code, unreachable_pub)]
#[path = "../../thinkers/tests/conversations/pg.rs"]
mod pg;

#[allow(unreachable_pub, dead_code)]
mod support {
    pub mod queue;
}
use support::queue::{count, finish, run_ok, spawn_worker, status, thinkers, unique, wait_for};

use std::collections::HashSet;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use futures::FutureExt as _;
use serde_json::json;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::queue::WorkflowQueue;
use thinkers::store::PgStore;

/// The tests of this file run one at a time: each starts worker processes, and the utilisation
/// test measures a rate that the others' workers would take CPU from on a two-core machine.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
use thinkers_sim::{Profile, Sim, SimConfig};

const ENTRY: &str = "sim-small-a";

fn redis_url() -> String {
    std::env::var("THINKERS_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned())
}

async fn redis_or_skip() -> Result<Option<String>> {
    let url = redis_url();
    match thinkers::dispatch::RedisBudgets::connect(&url).await {
        Ok(_) => Ok(Some(url)),
        Err(e) if std::env::var("THINKERS_REQUIRE_SERVICES").is_ok_and(|v| v == "1") => {
            bail!("Redis is required but does not answer at {url}: {e}")
        }
        Err(e) => {
            eprintln!("\n*** SKIPPED: Redis does not answer at {url} ({e}) ***\n");
            Ok(None)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_workers_workflow_completes_on_another_without_paying_twice() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(db) = pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let mut config = SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm();
    config.log_bodies = true;
    let model = config
        .models
        .iter_mut()
        .find(|m| m.name == ENTRY)
        .context("the bundled catalog serves sim-small-a")?;
    model
        .profile
        .get_or_insert_with(Profile::default)
        .latency_ms = [300, 300];
    let sim = Sim::start(config).await?;
    let url = sim.base_url();
    let queue = unique("kill");
    const STEPS: usize = 4;

    let input = json!({"topic": "leases", "steps": STEPS, "entry": ENTRY, "pause_ms": 1500});
    let id = run_ok(&[
        "submit",
        "chain",
        "--input",
        &input.to_string(),
        "--db",
        &db,
        "--queue",
        &queue,
    ])
    .await?;
    assert_eq!(status(&db, &queue, &id).await?["status"], "queued");

    let mut a = spawn_worker(
        &db,
        &queue,
        &url,
        &["--name", "worker-a", "--lease-secs", "2"],
    )?;
    // Worker A answers its first call and stores it in the cache; it then pauses 1.5 s before
    // the second, and dies there.
    wait_for(
        "worker A's first cached answer",
        Duration::from_secs(30),
        || count(&db, "SELECT COUNT(*) FROM response_cache").map(|n| Ok(n? >= 1)),
    )
    .await?;
    a.start_kill()?; // SIGKILL
    a.wait().await?;
    let cached_by_a = count(&db, "SELECT COUNT(*) FROM response_cache").await?;
    assert_eq!(cached_by_a, 1, "A died in its pause after the first call");
    let seen = status(&db, &queue, &id).await?;
    assert_eq!(seen["status"], "running");
    assert_eq!(seen["state"]["worker"], "worker-a");
    assert_eq!(seen["attempt"], 1);
    let run_a = seen["run"].as_str().context("A's run")?.to_owned();

    let _b = spawn_worker(
        &db,
        &queue,
        &url,
        &["--name", "worker-b", "--lease-secs", "2"],
    )?;
    let deadline = Instant::now() + Duration::from_secs(40);
    let last = loop {
        let s = status(&db, &queue, &id).await?;
        if s["status"] == "succeeded" || s["status"] == "failed" {
            break s;
        }
        ensure!(
            Instant::now() < deadline,
            "the workflow did not finish on B: {s}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(last["status"], "succeeded", "{last}");
    assert_eq!(
        last["attempt"], 2,
        "claimed once more after the lease passed"
    );
    let run_b = last["run"].as_str().context("B's run")?;
    assert_ne!(run_b, run_a);
    let answers = last["state"]["output"]["answers"]
        .as_array()
        .context("the chain's answers")?;
    assert_eq!(answers.len(), STEPS);
    // Every call of B's run is recorded; the one A completed came from the cache.
    assert_eq!(last["model_calls"], STEPS as u64, "{last}");
    assert_eq!(last["cache_hits"], 1, "{last}");

    // The run's trajectory is in the database: the chain and its steps.
    let tree = run_ok(&["trace", run_b, "--db", &db]).await?;
    assert!(
        tree.contains("chain") && tree.matches("chain_step").count() == STEPS,
        "{tree}"
    );

    // The sim saw every body exactly once: nothing was paid twice.
    let bodies: Vec<String> = sim
        .requests()
        .into_iter()
        .filter(|r| r.model == ENTRY)
        .map(|r| r.raw_body)
        .collect();
    let distinct: HashSet<&String> = bodies.iter().collect();
    assert_eq!(bodies.len(), STEPS, "requests the sim received");
    assert_eq!(distinct.len(), STEPS, "no body sent twice");
    let stats = sim.stats();
    assert_eq!(stats.model(ENTRY).requests, STEPS as u64);
    assert_eq!(stats.totals.rate_limited, 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_share_one_tpm_limit_through_redis() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let (Some(db), Some(redis)) = (pg::fresh_schema_url().await?, redis_or_skip().await?) else {
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
        .get_or_insert_with(Profile::default)
        .latency_ms = [20, 60];
    let sim = Sim::start(config).await?;
    let url = sim.base_url();
    let queue = unique("tpm");
    let prefix = unique("thinkers-test-budget");

    // More work than one window admits: ~110 tokens per call settle, so ~1,400 calls fill it.
    let store = PgStore::open(&db).await?;
    let q = WorkflowQueue::new(&store).named(queue.clone());
    for i in 0..240 {
        let input = json!({"topic": format!("budget {i}"), "steps": 10, "entry": ENTRY});
        q.submit_unchecked("chain", &input).await?;
    }
    let catalog = catalog.to_string_lossy().into_owned();
    let mut workers = Vec::new();
    for w in 0..3 {
        workers.push(spawn_worker(
            &db,
            &queue,
            &url,
            &[
                "--name",
                &format!("tpm-{w}"),
                "--catalog",
                &catalog,
                "--redis",
                &redis,
                "--redis-prefix",
                &prefix,
                "--concurrency",
                "4",
                "--lease-secs",
                "10",
            ],
        )?);
    }
    wait_for("the first request", Duration::from_secs(30), || {
        std::future::ready(Ok(sim.stats().model(ENTRY).requests > 0))
    })
    .await?;
    let t0 = Instant::now();
    let start = sim.stats().model(ENTRY);
    tokio::time::sleep(WINDOW.saturating_sub(t0.elapsed())).await;
    let end = sim.stats().model(ENTRY);
    for mut w in workers {
        w.start_kill()?;
        w.wait().await?;
    }
    let used = (end.input_tokens + end.output_tokens) - (start.input_tokens + start.output_tokens);
    let utilisation = used as f64 / TPM as f64;
    eprintln!(
        "3 workers over one {TPM} TPM entry: {} requests, {used} tokens in the window \
         ({:.1}% of the limit), {} 429s",
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
    // Every worker took part.
    let per_worker = count(
        &db,
        "SELECT COUNT(DISTINCT worker) FROM workflow_queue WHERE worker IS NOT NULL",
    )
    .await?;
    assert_eq!(per_worker, 3);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_thinker_workflow_sends_byte_identical_bodies_and_is_served_from_the_cache()
-> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(db) = pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let mut config = SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm();
    config.log_bodies = true;
    let sim = Sim::start(config).await?;
    let queue = unique("replay");
    let _w = spawn_worker(&db, &queue, &sim.base_url(), &["--lease-secs", "5"])?;
    let input = json!({"question": "What is a seat?", "entry": ENTRY}).to_string();
    let args = [
        "submit", "explain", "--input", &input, "--db", &db, "--queue", &queue,
    ];
    let first = finish(&db, &queue, &run_ok(&args).await?, Duration::from_secs(60)).await?;
    assert_eq!(first["status"], "succeeded", "{first}");
    let calls = first["model_calls"].as_u64().context("model calls")?;
    assert!(calls >= 2, "the thinker used its tool: {first}");
    assert_eq!(first["cache_hits"], 0);
    let sent = sim.requests().len();
    assert_eq!(sent as u64, calls);

    // The same workflow again, as a replay after a lost worker would run it: every body is
    // byte-identical, so every call is answered from the cache and the sim sees nothing new.
    let second = finish(&db, &queue, &run_ok(&args).await?, Duration::from_secs(60)).await?;
    assert_eq!(second["status"], "succeeded", "{second}");
    assert_ne!(second["run"], first["run"]);
    assert_eq!(
        second["model_calls"], calls,
        "cache hits are recorded as model calls"
    );
    assert_eq!(second["cache_hits"], calls, "{second}");
    assert_eq!(sim.requests().len(), sent, "no request reached the sim");
    assert_eq!(second["state"]["output"], first["state"]["output"]);

    // A bad input names the field, an unknown workflow its name.
    let out = thinkers()
        .args([
            "submit",
            "explain",
            "--input",
            r#"{"question": 3}"#,
            "--db",
            &db,
        ])
        .output()
        .await?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("input.question"),
        "{err}"
    );
    let out = thinkers()
        .args(["submit", "explian", "--db", &db])
        .output()
        .await?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("explian") && err.contains("chain"),
        "{err}"
    );
    Ok(())
}
