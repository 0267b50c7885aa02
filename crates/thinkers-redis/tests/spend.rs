//! Spending caps kept in Redis: the record's total under a cap never passes it, with three
//! processes sharing one cap, and each run within its run cap while its calls go out at once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

use std::sync::Arc;

use thinkers::ErrorKind;
use thinkers::dispatch::SpendCap;
use thinkers::job::{ScopeGuard, doer};
use thinkers_redis::RedisBudgets;

use spend_support::{WORST, cap_error, capped, spent};
use support::{call, entry, fault_catalog_toml, fault_sim};

/// The spending caps' test runtime and readings.
#[allow(dead_code)]
#[path = "../../thinkers/tests/models/spend_support.rs"]
mod spend_support;
/// The fault sims and runtimes of the `thinkers` model tests.
#[allow(dead_code)]
#[path = "../../thinkers/tests/models/support.rs"]
mod support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_sharing_redis_never_pass_one_cap_together() {
    for cap in [
        SpendCap::per_axis("tenant", 0.012, "USD"),
        SpendCap::per_day(0.012, "USD"),
    ] {
        three_processes_share(cap).await;
    }
}

/// A run cap kept in Redis: three processes each run a fan-out of calls at once under one
/// run cap; each run stops within it (a run's calls all belong to its process, so the cap's key
/// is the run's, wherever its sums live).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_caps_kept_in_redis_hold_under_concurrent_calls() {
    let Some(store) = redis_store().await else {
        return;
    };
    let sim = fault_sim().await;
    let toml = fault_catalog_toml(&sim.openai_base_url(), &sim.base_url(), "THINKERS_SIM_KEY");
    let limit = 0.02;
    let mut runs = Vec::new();
    for w in 0..3 {
        let (rt, recorder) = capped(
            &toml,
            vec![SpendCap::per_run(limit, "USD")],
            Some(Arc::new(store.clone())),
        )
        .await;
        let e = entry(true, w);
        runs.push(tokio::spawn(async move {
            let target = e.clone();
            let err = rt
                .run(doer("fan-out", move |cx| {
                    let target = target.clone();
                    async move {
                        for _ in 0..40 {
                            let calls = (0..8).map(|_| cx.submit(call(&target)));
                            for result in futures::future::join_all(calls).await {
                                result?;
                            }
                        }
                        Ok(())
                    }
                }))
                .await
                .unwrap_err();
            (err, spent(&recorder, &e))
        }));
    }
    for run in runs {
        let (err, recorded) = run.await.unwrap();
        let (cap, ..) = cap_error(&err);
        assert!(cap.starts_with("run "), "{cap}");
        assert!(
            recorded <= limit,
            "a run spent {recorded} under a cap of {limit}"
        );
        assert!(recorded > 0.0);
    }
}

async fn redis_store() -> Option<RedisBudgets> {
    let url = std::env::var("THINKERS_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned());
    let prefix = format!("thinkers-test-spend:{}", uuid::Uuid::new_v4().simple());
    match RedisBudgets::connect_with(&url, &prefix, std::time::Duration::from_secs(5)).await {
        Ok(s) => Some(s),
        Err(e) if std::env::var("THINKERS_REQUIRE_SERVICES").is_ok_and(|v| v == "1") => {
            panic!("Redis is required but does not answer at {url}: {e}")
        }
        Err(e) => {
            eprintln!("\n*** SKIPPED: Redis does not answer at {url} ({e}) ***\n");
            None
        }
    }
}

async fn three_processes_share(cap: SpendCap) {
    let Some(store) = redis_store().await else {
        return;
    };
    let sim = fault_sim().await;
    let toml = fault_catalog_toml(&sim.openai_base_url(), &sim.base_url(), "THINKERS_SIM_KEY");
    let limit = cap.amount();
    let mut workers = Vec::new();
    let mut recorders = Vec::new();
    for w in 0..3 {
        let (rt, recorder) = capped(&toml, vec![cap.clone()], Some(Arc::new(store.clone()))).await;
        recorders.push(recorder);
        let e = entry(false, 4 + w);
        workers.push(tokio::spawn(async move {
            let scope = ScopeGuard::unbound().with_axis("tenant", "shared");
            // A process refused while another holds the cap tries again, until it has been
            // refused twenty times in a row.
            let (mut refused, mut in_a_row) = (0, 0);
            while in_a_row < 20 {
                match rt.dispatcher().submit_scoped(call(&e), scope.clone()).await {
                    Ok(_) => in_a_row = 0,
                    Err(err) => {
                        assert_eq!(err.kind(), ErrorKind::SpendCapReached, "{err}");
                        refused += 1;
                        in_a_row += 1;
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    }
                }
            }
            refused
        }));
    }
    for w in workers {
        assert!(w.await.unwrap() >= 20);
    }
    let total: f64 = recorders
        .iter()
        .enumerate()
        .map(|(w, r)| spent(r, &entry(false, 4 + w)))
        .sum();
    assert!(
        total <= limit,
        "three processes spent {total} under a shared {:?} cap of {limit}",
        cap.scope()
    );
    assert!(total > limit - WORST * 1.1, "they used the cap: {total}");
}
