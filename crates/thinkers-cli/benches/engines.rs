//! The workflow engine on this machine: workflows per second and the time one journaled step
//! takes, for one `thinkers worker` service process behind a real `restate-server`, against
//! thinkers-sim (fixed 5 ms answers) and PostgreSQL.
//!
//! * Throughput: `WORKFLOWS` `chain` workflows of 3 model calls submitted at once; workflows per
//!   second from the first submission to the last finish (the rows' own timestamps).
//! * Per-step latency: one `chain` at a time, 1 step and then `LONG` steps, three times each;
//!   the slope (median long minus median short, over the extra steps) is the time one more step
//!   takes, which cancels the fixed costs (submission, start). Every step is a journaled
//!   `ctx.run` (a round trip to the server) besides its model call.
//!
//! Run: `cargo bench -p thinkers-cli --bench engines` with
//! `THINKERS_RESTATE_SERVER` (scripts/install-restate-server.sh) and `THINKERS_TEST_PG_URL`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[allow(dead_code, unreachable_pub)]
#[path = "../../thinkers-store/tests/conversations/pg.rs"]
mod pg;

// The test support, as top-level modules (`restate` reaches `cli` as `super::cli`).
#[allow(unreachable_pub, dead_code)]
#[path = "../tests/cli/support/cli.rs"]
mod cli;
#[allow(unreachable_pub, dead_code)]
#[path = "../tests/cli/support/restate.rs"]
mod restate;

use std::time::Duration;

use anyhow::{Context as _, Result};
use restate::{RestateServer, service_addr, spawn_service};
use serde_json::json;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers_sim::{Profile, Sim, SimConfig};
use thinkers_store::PgStore;
use thinkers_workflows::restate::RestateIngress;
use thinkers_workflows::{WorkflowId, WorkflowState, Workflows};

const ENTRY: &str = "sim-small-a";
const WORKFLOWS: usize = 60;
const LONG: u32 = 11;

struct Bench {
    workflows: Workflows,
    ingress: RestateIngress,
}

impl Bench {
    async fn submit(&self, steps: u32, topic: &str) -> Result<WorkflowId> {
        let input = json!({"topic": topic, "steps": steps, "entry": ENTRY});
        Ok(self
            .ingress
            .submit_unchecked(&self.workflows, "chain", input)
            .await?)
    }

    /// Wait for `ids`; (first submission, last finish) in ms.
    async fn finished(&self, ids: &[WorkflowId]) -> Result<(i64, i64)> {
        let (mut first, mut last) = (i64::MAX, 0);
        for id in ids {
            let status = self
                .workflows
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

    async fn throughput(&self) -> Result<f64> {
        let mut ids = Vec::new();
        for i in 0..WORKFLOWS {
            ids.push(self.submit(3, &format!("throughput {i}")).await?);
        }
        let (first, last) = self.finished(&ids).await?;
        Ok(WORKFLOWS as f64 / ((last - first) as f64 / 1000.0))
    }

    async fn latency(&self, steps: u32, round: usize) -> Result<f64> {
        let id = self
            .submit(steps, &format!("latency {steps} {round}"))
            .await?;
        let (first, last) = self.finished(&[id]).await?;
        Ok((last - first) as f64)
    }

    /// Milliseconds one more step takes.
    async fn per_step(&self) -> Result<f64> {
        let (mut short, mut long) = (Vec::new(), Vec::new());
        for round in 0..3 {
            short.push(self.latency(1, round).await?);
            long.push(self.latency(LONG, round).await?);
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
    let addr = service_addr()?;
    let _service = spawn_service(&db, &addr, &url, "bench-restate", &[]).await?;
    restate.register(&addr).await?;
    let bench = Bench {
        workflows: Workflows::new(&store),
        ingress: RestateIngress::new(&restate.ingress),
    };
    // Warm up (connections, calibration).
    bench.latency(1, 99).await?;

    let rate = bench.throughput().await?;
    let step = bench.per_step().await?;
    println!(
        "restate: {WORKFLOWS} chain workflows of 3 model calls (sim answers in 5 ms), one \
         service process: {rate:.1} workflows/s"
    );
    println!("per step (slope of 1 vs {LONG} sequential model calls, median of 3): {step:.1} ms");
    Ok(())
}
