//! Workflows per second and model calls per second through the PostgreSQL queue with 1, 2 and 4
//! workers on this machine, against thinkers-sim (calm: no latency, no faults) in a child
//! process. Each worker is a `queue::Worker` with its own runtime, connection pool and
//! dispatcher (as a `thinkers worker` process would have), concurrency 4, all in this process.
//!
//! Each workflow is a doer making `CALLS` model calls one after another; every workflow has its
//! own topic, so nothing is answered from the response cache (which is on, as in production).
//!
//! Needs PostgreSQL (`THINKERS_TEST_PG_URL`, default `postgres://postgres@127.0.0.1:5432/test`).
//! Run with `cargo bench -p thinkers --features postgres --bench workers`. Figures are printed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;
use sqlx::Connection as _;
use thinkers::Runtime;
use thinkers::conversation::Message;
use thinkers::job::doer;
use thinkers::llm::{ChatRequest, LlmCall, ResponseCacheService};
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::model::{Catalog, Grade, OutputSize};
use thinkers::queue::{Worker, WorkerConfig, WorkflowQueue, WorkflowRegistry};
use thinkers::store::{PgResponseCache, PgStore};
use thinkers_sim::SimConfig;
use tokio_util::sync::CancellationToken;

const WORKFLOWS: usize = 240;
const CALLS: usize = 3;
const CONCURRENCY: usize = 4;

#[derive(Deserialize)]
struct Input {
    topic: String,
}

fn registry() -> WorkflowRegistry {
    let mut r = WorkflowRegistry::new();
    r.register("notes", |input: Input| {
        Ok(doer("notes", move |cx| {
            let topic = input.topic.clone();
            async move {
                let mut last = String::new();
                for step in 0..CALLS {
                    let request = ChatRequest::new(
                        "Answer in one sentence.",
                        vec![Message::user_text(format!(
                            "{topic} — note {step}; before: {last}"
                        ))],
                    );
                    let call = LlmCall::new(Grade::Small, OutputSize::Verdict, request)
                        .pinned("sim-small-a");
                    last = cx.submit_in_step(call).await?.response.text();
                }
                Ok(last.len())
            }
        }))
    });
    r
}

async fn fresh_schema() -> String {
    let base = std::env::var("THINKERS_TEST_PG_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("bench_{}", uuid::Uuid::new_v4().simple());
    let mut c = sqlx::PgConnection::connect(&base)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL does not answer at {base}: {e}"));
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&mut c)
        .await
        .unwrap();
    c.close().await.unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}options[search_path]={schema}")
}

async fn round(workers: usize, sim_url: &str) -> (f64, f64) {
    let url = fresh_schema().await;
    let store = PgStore::open(&url).await.unwrap();
    let queue = WorkflowQueue::new(&store);
    for i in 0..WORKFLOWS {
        queue
            .submit(&registry(), "notes", json!({"topic": format!("topic {i}")}))
            .await
            .unwrap();
    }
    let stop = CancellationToken::new();
    let mut tasks = Vec::new();
    let started = Instant::now();
    for _ in 0..workers {
        let wstore = PgStore::open(&url).await.unwrap();
        let runtime = Runtime::builder(Catalog::bundled().with_sim_url(sim_url))
            .database(url.clone())
            .service(Arc::new(ResponseCacheService::new(Arc::new(
                PgResponseCache::new(&wstore),
            ))))
            .build()
            .await
            .unwrap();
        let worker = Worker::new(
            &wstore,
            runtime,
            registry(),
            WorkerConfig {
                concurrency: CONCURRENCY,
                poll: Duration::from_millis(10),
                ..WorkerConfig::default()
            },
        );
        let s = stop.clone();
        tasks.push(tokio::spawn(async move { worker.run(s).await }));
    }
    loop {
        let c = queue.counts().await.unwrap();
        assert_eq!(c.failed, 0, "a workflow failed");
        if c.finished() == WORKFLOWS as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    stop.cancel();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    store.close().await;
    (WORKFLOWS as f64 / secs, (WORKFLOWS * CALLS) as f64 / secs)
}

fn main() {
    if common::serve_sim_if_child(|| SimConfig::from_catalog_toml(BUNDLED_TOML).unwrap().calm()) {
        return;
    }
    let (mut sim, url) = common::spawn_sim();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "queue throughput: {WORKFLOWS} workflows × {CALLS} model calls, concurrency {CONCURRENCY} \
         per worker, calm sim in a child process, {} CPUs",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    for workers in [1, 2, 4] {
        let (wps, cps) = rt.block_on(round(workers, &url));
        println!("  {workers} worker(s): {wps:>7.1} workflows/s  {cps:>7.1} model calls/s");
    }
    sim.kill().ok();
}
