//! What durable model calls cost: a model call's row committed before its answer is handed on
//! (group commit in the batching recorder), against rows queued and flushed at the end.
//!
//! For SQLite (a file) and, when it answers, PostgreSQL (a fresh schema of
//! `THINKERS_TEST_PG_URL`, default `postgres://postgres@127.0.0.1:5432/test`): µs per call with
//! one call at a time, and calls per second with 50 in flight, durable calls on and off, in the
//! same run. `THINKERS_BENCH_CALLS` sets the calls per measurement (default 2,000).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::Instant;

use thinkers::job::JobId;
use thinkers::record::{JobStart, LlmRun, Recorder, now_ms};
use thinkers_store::{Store, open};

fn run(job: JobId) -> LlmRun {
    LlmRun {
        job,
        workflow: job,
        class: "bench".to_owned(),
        entry: "sim-small-a".to_owned(),
        model: "sim-small-a".to_owned(),
        input_tokens: 1_200,
        output_tokens: 300,
        output_budget: 1_024,
        latency_ms: 400,
        stop_reason: "end_turn".to_owned(),
        cost: Some(0.001),
        currency: "USD".to_owned(),
        at_ms: now_ms(),
        ..LlmRun::default()
    }
}

/// µs per call, one call at a time (the job's start row queued before each, as in a run).
async fn one_at_a_time(rec: &Arc<dyn Recorder>, calls: usize) -> f64 {
    let started = Instant::now();
    for _ in 0..calls {
        let id = JobId::new();
        rec.job_started(JobStart {
            id,
            parent: None,
            workflow: id,
            class: "bench".to_owned(),
            ordinal: None,
            started_at_ms: now_ms(),
        });
        rec.llm_run_durable(run(id)).await.unwrap();
    }
    rec.flush().await.unwrap();
    started.elapsed().as_secs_f64() * 1e6 / calls as f64
}

/// Calls per second with `tasks` calling at once.
async fn in_flight(rec: &Arc<dyn Recorder>, calls: usize, tasks: usize) -> f64 {
    let started = Instant::now();
    let per_task = calls / tasks;
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let rec = Arc::clone(rec);
            tokio::spawn(async move {
                for _ in 0..per_task {
                    rec.llm_run_durable(run(JobId::new())).await.unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    rec.flush().await.unwrap();
    (per_task * tasks) as f64 / started.elapsed().as_secs_f64()
}

async fn measure(name: &str, store: &Store, calls: usize) {
    for durable in [false, true] {
        let rec = store.recorder_with(durable).unwrap();
        // Warm the connection and the statement cache.
        one_at_a_time(&rec, 50).await;
        let seq = one_at_a_time(&rec, calls).await;
        let par = in_flight(&rec, calls, 50).await;
        let mode = if durable { "on " } else { "off" };
        println!("{name:<12} durable {mode} {seq:>12.1} {par:>20.0}");
        rec.close().await.unwrap();
    }
}
async fn pg_store() -> Option<Store> {
    use sqlx::Connection as _;
    let base = std::env::var("THINKERS_TEST_PG_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("bench_gc_{}", std::process::id());
    let mut c = sqlx::PgConnection::connect(&base).await.ok()?;
    for statement in [
        format!("DROP SCHEMA IF EXISTS {schema} CASCADE"),
        format!("CREATE SCHEMA {schema}"),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut c)
            .await
            .ok()?;
    }
    c.close().await.ok()?;
    open(&format!("{base}?options=-c%20search_path%3D{schema}"))
        .await
        .ok()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let calls = std::env::var("THINKERS_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000);
    rt.block_on(async {
        println!("group commit: {calls} calls per measurement, 50 in flight for calls/s");
        println!(
            "{:<12} {:<11} {:>12} {:>20}",
            "store", "mode", "µs/call (1)", "calls/s (50 in flight)"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.db");
        let sqlite = open(&path.to_string_lossy()).await.unwrap();
        measure("sqlite", &sqlite, calls).await;
        match pg_store().await {
            Some(pg) => measure("postgres", &pg, calls).await,
            None => println!("postgres     (skipped: no answer)"),
        }
    });
}
