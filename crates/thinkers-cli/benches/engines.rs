//! The two engines on this machine, in one run: workflows per second and the latency each
//! journaled step adds, for the PostgreSQL lease queue (one `thinkers worker`) and Restate (one
//! `thinkers worker --engine restate` behind a real `restate-server`), both against the same
//! thinkers-sim (fixed 5 ms answers) and PostgreSQL.
//!
//! * Throughput: `WORKFLOWS` `chain` workflows of 3 model calls submitted at once; workflows per
//!   second from the first submission to the last finish (the rows' own timestamps).
//! * Per-step latency: one `chain` at a time, 1 step and then `LONG` steps, three times each;
//!   the slope (median long minus median short, over the extra steps) is the time one more step
//!   takes, which cancels the fixed costs (submission, claim, start). Every Restate step is a
//!   journaled `ctx.run` (a round trip to the server) besides the PostgreSQL queue's costs.
//!
//! Run: `cargo bench -p thinkers-cli --features restate --bench engines` with
//! `THINKERS_RESTATE_SERVER` (scripts/install-restate-server.sh) and `THINKERS_TEST_PG_URL`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[allow(dead_code, unreachable_pub)]
#[path = "../../thinkers/tests/conversations/pg.rs"]
mod pg;

// The test support, as top-level modules (`restate` reaches `queue` as `super::queue`).
#[allow(unreachable_pub, dead_code)]
#[path = "../tests/support/queue.rs"]
mod queue;
#[allow(unreachable_pub, dead_code)]
#[path = "../tests/support/restate.rs"]
mod restate;

use std::time::Duration;

use anyhow::{Context as _, Result};
use queue::spawn_worker;
use restate::{RestateServer, service_addr, spawn_service};
use serde_json::json;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::queue::{QueueId, WorkflowQueue, WorkflowState};
use thinkers::restate::RestateIngress;
use thinkers::store::PgStore;
use thinkers_sim::{Profile, Sim, SimConfig};

const ENTRY: &str = "sim-small-a";
const WORKFLOWS: usize = 60;
const LONG: u32 = 11;

#[derive(Clone, Copy)]
enum Engine {
    Postgres,
    Restate,
}

struct Bench {
    store: PgStore,
    pg_queue: WorkflowQueue,
    restate_queue: WorkflowQueue,
    ingress: RestateIngress,
}

impl Bench {
    async fn submit(&self, engine: Engine, steps: u32, topic: &str) -> Result<QueueId> {
        let input = json!({"topic": topic, "steps": steps, "entry": ENTRY});
        Ok(match engine {
            Engine::Postgres => self.pg_queue.submit_unchecked("chain", &input).await?,
            Engine::Restate => {
                self.ingress
                    .submit_unchecked(&self.restate_queue, "chain", input)
                    .await?
            }
        })
    }

    /// Wait for `ids`; (first submission, last finish) in ms.
    async fn finished(&self, ids: &[QueueId]) -> Result<(i64, i64)> {
        let queue = WorkflowQueue::new(&self.store);
        let (mut first, mut last) = (i64::MAX, 0);
        for id in ids {
            let status = queue
                .wait(*id, Duration::from_millis(5), Duration::from_secs(300))
                .await?
                .context("a workflow did not finish")?;
            anyhow::ensure!(
                matches!(status.state, WorkflowState::Succeeded { .. }),
                "workflow failed: {:?}",
                status.state
            );
            first = first.min(status.submitted_at_ms);
            last = last.max(status.finished_at_ms.unwrap_or_default());
        }
        Ok((first, last))
    }

    async fn throughput(&self, engine: Engine) -> Result<f64> {
        let mut ids = Vec::new();
        for i in 0..WORKFLOWS {
            ids.push(self.submit(engine, 3, &format!("throughput {i}")).await?);
        }
        let (first, last) = self.finished(&ids).await?;
        Ok(WORKFLOWS as f64 / ((last - first) as f64 / 1000.0))
    }

    async fn latency(&self, engine: Engine, steps: u32, round: usize) -> Result<f64> {
        let id = self
            .submit(engine, steps, &format!("latency {steps} {round}"))
            .await?;
        let (first, last) = self.finished(&[id]).await?;
        Ok((last - first) as f64)
    }

    /// Milliseconds one more step takes.
    async fn per_step(&self, engine: Engine) -> Result<f64> {
        let (mut short, mut long) = (Vec::new(), Vec::new());
        for round in 0..3 {
            short.push(self.latency(engine, 1, round).await?);
            long.push(self.latency(engine, LONG, round).await?);
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        Ok((median(long) - median(short)) / f64::from(LONG - 1))
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let Some(db) = pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let Some(restate) = RestateServer::start_with("1m").await? else {
        return Ok(());
    };
    let mut config = SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm();
    for model in &mut config.models {
        model
            .profile
            .get_or_insert_with(Profile::default)
            .latency_ms = [5, 5];
    }
    let sim = Sim::start(config).await?;
    let url = sim.base_url();
    let store = PgStore::open(&db).await?;
    let pg_queue = WorkflowQueue::new(&store).named("bench");
    let _worker = spawn_worker(&db, "bench", &url, &["--concurrency", "16"])?;
    let addr = service_addr()?;
    let _service = spawn_service(&db, &addr, &url, "bench-restate", &[])?;
    restate.register(&addr).await?;
    let bench = Bench {
        pg_queue,
        restate_queue: WorkflowQueue::new(&store).named("bench"),
        ingress: RestateIngress::new(&restate.ingress),
        store,
    };
    // Warm both (connections, calibration).
    bench.latency(Engine::Postgres, 1, 99).await?;
    bench.latency(Engine::Restate, 1, 99).await?;

    let pg_rate = bench.throughput(Engine::Postgres).await?;
    let restate_rate = bench.throughput(Engine::Restate).await?;
    let pg_step = bench.per_step(Engine::Postgres).await?;
    let restate_step = bench.per_step(Engine::Restate).await?;
    println!(
        "engines: {WORKFLOWS} chain workflows of 3 model calls (sim answers in 5 ms), one \
         process each"
    );
    println!("  postgres queue (1 worker, concurrency 16): {pg_rate:.1} workflows/s");
    println!("  restate (1 service process):               {restate_rate:.1} workflows/s");
    println!("per step (slope of 1 vs {LONG} sequential model calls, median of 3):");
    println!("  postgres queue: {pg_step:.1} ms per step");
    println!("  restate:        {restate_step:.1} ms per step");
    println!(
        "  added by Restate's journal: {:.1} ms per journaled step",
        restate_step - pg_step
    );
    Ok(())
}
