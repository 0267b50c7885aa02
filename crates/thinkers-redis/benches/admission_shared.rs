//! Added latency of one admission decision with budgets in Redis ([`RedisBudgets`]) versus in
//! process ([`MemoryBudgets`]): sequential decisions (one at a time, so each figure is a full
//! round trip) and 8 concurrent reservers.
//!
//! Needs Redis (`THINKERS_TEST_REDIS_URL`, default `redis://127.0.0.1:6379`). Run with
//! `cargo bench -p thinkers-redis --bench admission_shared`, or in the test profile
//! with `cargo test -p thinkers-redis --bench admission_shared`. Figures are printed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use thinkers::dispatch::{BudgetStore, Limits, MemoryBudgets, Rate, Reservation};
use thinkers::job::Ask;
use thinkers_redis::RedisBudgets;

const DECISIONS: usize = 2_000;

fn limits() -> Limits {
    // Large enough that every decision is a grant: the full path (purge, check, book).
    Limits {
        tokens: Some(Rate::per_minute(1_000_000_000)),
        input_tokens: None,
        output_tokens: None,
        requests: Some(Rate::per_minute(1_000_000_000)),
        concurrency: Some(1_000),
    }
}

fn ask() -> Ask {
    Ask {
        budget: "entry".into(),
        tokens: 100,
        input_tokens: 0,
        output_tokens: 0,
        requests: 1,
        slots: 1,
    }
}

/// Per-decision latencies of `n` sequential reserve + release pairs.
async fn sequential(store: &dyn BudgetStore, n: usize) -> Vec<Duration> {
    let ask = ask();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = store.try_reserve(&ask).await.unwrap();
        out.push(t.elapsed());
        match r {
            Reservation::Granted(lease) => store.release(&lease),
            other => panic!("expected a grant, got {other:?}"),
        }
    }
    out
}

/// Decisions per second with `tasks` reservers sharing the store.
async fn concurrent(store: Arc<dyn BudgetStore>, tasks: usize, per_task: usize) -> f64 {
    let t = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { sequential(store.as_ref(), per_task).await })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    (tasks * per_task) as f64 / t.elapsed().as_secs_f64()
}

fn report(name: &str, mut lat: Vec<Duration>) -> Duration {
    lat.sort();
    let mean = lat.iter().sum::<Duration>() / lat.len() as u32;
    let p = |q: f64| lat[((lat.len() - 1) as f64 * q) as usize];
    println!(
        "{name:<8} sequential: mean {mean:>10.1?}  p50 {:>10.1?}  p99 {:>10.1?}",
        p(0.5),
        p(0.99)
    );
    mean
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let url = std::env::var("THINKERS_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    let memory: Arc<dyn BudgetStore> = Arc::new(MemoryBudgets::new());
    memory.configure("entry", limits());
    let prefix = format!("thinkers-bench:{}", std::process::id());
    let redis = RedisBudgets::connect_with(&url, &prefix, Duration::from_secs(10))
        .await
        .expect("Redis answers (set THINKERS_TEST_REDIS_URL)");
    redis.configure("entry", limits());
    let redis: Arc<dyn BudgetStore> = Arc::new(redis);

    // Warm up (script load, connection).
    sequential(redis.as_ref(), 50).await;
    let m = report("memory", sequential(memory.as_ref(), DECISIONS).await);
    let r = report("redis", sequential(redis.as_ref(), DECISIONS).await);
    println!(
        "added latency per admission decision with Redis: {:.1?}",
        r.saturating_sub(m)
    );
    for tasks in [1, 8] {
        let mem = concurrent(Arc::clone(&memory), tasks, DECISIONS / tasks).await;
        let red = concurrent(Arc::clone(&redis), tasks, DECISIONS / tasks).await;
        println!(
            "{tasks} reserver(s): memory {mem:>10.0} decisions/s, redis {red:>8.0} decisions/s"
        );
    }
}
