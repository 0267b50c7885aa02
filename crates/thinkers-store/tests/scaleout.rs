//! Scale-out against the real services: two runtimes (as two workers would be) record into one
//! PostgreSQL schema and admit through one Redis budget, calling thinkers-sim over HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[allow(dead_code)]
#[path = "conversations/pg.rs"]
mod pg;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use thinkers::Runtime;
use thinkers::conversation::Message;
use thinkers::dispatch::BudgetStore;
use thinkers::job::Seat;
use thinkers::llm::{ChatRequest, LlmCall};
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::model::{Catalog, Grade, OutputSize};
use thinkers_redis::RedisBudgets;
use thinkers_sim::{Sim, SimConfig};
use thinkers_store::{LlmRunFilter, RuntimeBuilderExt as _, RuntimeExt as _, Store};

const ENTRY: &str = "sim-small-a";
const CALLS_PER_WORKER: usize = 15;

async fn redis_url() -> Result<Option<String>> {
    let url = std::env::var("THINKERS_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned());
    match RedisBudgets::connect(&url).await {
        Ok(_) => Ok(Some(url)),
        Err(e) if std::env::var("THINKERS_REQUIRE_SERVICES").is_ok_and(|v| v == "1") => {
            anyhow::bail!("Redis is required but does not answer at {url}: {e}")
        }
        Err(e) => {
            eprintln!("\n*** SKIPPED: Redis does not answer at {url} ({e}) ***\n");
            Ok(None)
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_record_into_one_postgres_and_share_one_redis_budget() -> Result<()> {
    let (Some(db), Some(redis)) = (pg::fresh_schema_url().await?, redis_url().await?) else {
        return Ok(());
    };
    let sim = Sim::start(SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm()).await?;
    let prefix = format!("thinkers-test:{}", uuid::Uuid::new_v4().simple());
    let mut workers = Vec::new();
    for _ in 0..2 {
        let budgets = RedisBudgets::connect_with(&redis, &prefix, Duration::from_secs(5)).await?;
        let rt = Runtime::builder(Catalog::bundled().with_sim_url(&sim.base_url()))
            .database(db.clone())
            .budgets(Arc::new(budgets.clone()))
            .build()
            .await?;
        assert!(
            budgets.limits(&Seat::budget_for(ENTRY)).is_some(),
            "the runtime configured the entry's budget in the shared store"
        );
        workers.push((rt, budgets));
    }
    let mut calls = Vec::new();
    for (w, (rt, _)) in workers.iter().enumerate() {
        for i in 0..CALLS_PER_WORKER {
            let request = ChatRequest::new(
                "Answer in one short sentence.",
                vec![Message::user_text(format!("worker {w}, question {i}"))],
            );
            calls
                .push(rt.dispatcher().submit(
                    LlmCall::new(Grade::Small, OutputSize::Verdict, request).pinned(ENTRY),
                ));
        }
    }
    for c in calls {
        c.await?;
    }
    for (rt, budgets) in &workers {
        rt.dispatcher().recorder().flush().await?;
        // Admission went through Redis: the decisions saw tokens in the shared window.
        let headroom = budgets
            .headroom(&Seat::budget_for(ENTRY))
            .expect("configured");
        assert!(headroom < 1.0, "headroom {headroom}");
    }
    // Either worker reads every call from the shared database.
    let store = workers[0].0.open_store().expect("a store");
    assert!(matches!(store, Store::Postgres(_)));
    let runs = store
        .records()
        .llm_runs(LlmRunFilter::new().entry(ENTRY))
        .await?;
    assert_eq!(runs.len(), 2 * CALLS_PER_WORKER);
    let workflows = store.records().list_workflows(100).await?;
    assert_eq!(workflows.len(), 2 * CALLS_PER_WORKER);
    let stats = sim.stats();
    let model = runs[0].model.clone();
    assert_eq!(stats.model(&model).requests, (2 * CALLS_PER_WORKER) as u64);
    assert_eq!(stats.totals.rate_limited, 0, "no 429 served");
    Ok(())
}
