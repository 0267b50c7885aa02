//! Admission: budgets are never exceeded, surplus is returned, FIFO per budget.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use thinkers::ErrorKind;
use thinkers::dispatch::{Limits, Rate};
use tokio::time::Instant;

use crate::support::{SeatJob, dispatcher_with};

const LIMIT: u64 = 10_000;

fn tpm(limit: u64) -> Limits {
    Limits {
        tokens: Some(Rate::per_minute(limit)),
        ..Limits::default()
    }
}

/// For every grant, the tokens of all grants in the 60 s window ending at it fit the limit.
fn check_windows(grants: &[(Instant, u64)]) {
    for (g, _) in grants {
        let sum: u64 = grants
            .iter()
            .filter(|(t, _)| *t <= *g && *t + Duration::from_secs(60) > *g)
            .map(|(_, n)| n)
            .sum();
        assert!(sum <= LIMIT, "window ending at {g:?} holds {sum} > {LIMIT}");
    }
}

fn run_case(jobs: Vec<(u64, Option<u64>, u64)>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let (d, _) = dispatcher_with("model:e", tpm(LIMIT));
        let grants = Arc::new(Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        for (reserve, used, hold_ms) in jobs {
            let g = grants.clone();
            let mut job = SeatJob::new("model:e", reserve);
            job.used = used;
            job.hold = Duration::from_millis(hold_ms);
            job.on_grant = Some(Arc::new(move |counted| {
                g.lock().unwrap().push((Instant::now(), counted));
            }));
            handles.push(d.submit(job));
        }
        for h in handles {
            h.await.unwrap();
        }
        let grants = grants.lock().unwrap().clone();
        assert_eq!(grants.len(), 1000);
        check_windows(&grants);
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, .. ProptestConfig::default() })]

    /// 1,000 concurrent jobs with random reservations (some settling below what they reserved)
    /// never push the 10,000-token budget over its limit in any 60 s window.
    #[test]
    fn budget_is_never_exceeded(
        jobs in prop::collection::vec(
            (1u64..=LIMIT, prop::option::of(0u64..=100), 0u64..90_000),
            1000,
        )
    ) {
        let jobs = jobs
            .into_iter()
            .map(|(reserve, pct, hold)| (reserve, pct.map(|p| reserve * p / 100), hold))
            .collect();
        run_case(jobs);
    }
}

#[tokio::test(start_paused = true)]
async fn reconciliation_returns_surplus() {
    let (d, _) = dispatcher_with("model:e", tpm(LIMIT));
    let t0 = Instant::now();
    let mut a = SeatJob::new("model:e", 8_000);
    a.used = Some(1_000);
    d.run(a).await.unwrap();
    // 1,000 used + 8,000 reserved fits: admitted at once.
    let b = d.run(SeatJob::new("model:e", 8_000)).await.unwrap();
    assert_eq!(b, t0, "the surplus of the first job was returned");
    // Now 9,000 are booked and nothing was reported: the next 8,000 waits for the window.
    let c = d.run(SeatJob::new("model:e", 8_000)).await.unwrap();
    assert_eq!(
        c - t0,
        Duration::from_millis(60_600),
        "a window entry lives for its minute plus the 1 % skew allowance"
    );
}

#[tokio::test(start_paused = true)]
async fn unreported_usage_keeps_the_whole_reservation() {
    let (d, _) = dispatcher_with("model:e", tpm(LIMIT));
    let t0 = Instant::now();
    d.run(SeatJob::new("model:e", 8_000)).await.unwrap();
    let b = d.run(SeatJob::new("model:e", 8_000)).await.unwrap();
    assert_eq!(b - t0, Duration::from_millis(60_600));
}

#[tokio::test(start_paused = true)]
async fn waiters_are_served_first_come_first_served() {
    let (d, _) = dispatcher_with("model:e", tpm(LIMIT));
    let t0 = Instant::now();
    let first = d.submit(SeatJob::new("model:e", 9_000));
    tokio::task::yield_now().await;
    let big = d.submit(SeatJob::new("model:e", 9_000));
    tokio::task::yield_now().await;
    // Would fit right now (1,000 free) but must not overtake the big waiter.
    let small = d.submit(SeatJob::new("model:e", 500));
    let (f, b, s) = (
        first.await.unwrap(),
        big.await.unwrap(),
        small.await.unwrap(),
    );
    assert_eq!(f, t0);
    assert_eq!(b - t0, Duration::from_millis(60_600));
    assert!(s >= b, "the small job waited its turn");
}

#[tokio::test(start_paused = true)]
async fn concurrency_limit_holds() {
    let limits = Limits {
        concurrency: Some(2),
        ..Limits::default()
    };
    let (d, _) = dispatcher_with("service:x", limits);
    let t0 = Instant::now();
    let handles: Vec<_> = (0..5)
        .map(|_| {
            let mut j = SeatJob::new("service:x", 0);
            j.hold = Duration::from_secs(10);
            d.submit(j)
        })
        .collect();
    let mut starts = Vec::new();
    for h in handles {
        starts.push((h.await.unwrap() - t0).as_secs());
    }
    starts.sort_unstable();
    assert_eq!(starts, vec![0, 0, 10, 10, 20]);
}

#[tokio::test(start_paused = true)]
async fn a_reservation_larger_than_the_limit_is_refused_by_name() {
    let (d, rec) = dispatcher_with("model:e", tpm(LIMIT));
    let err = d.run(SeatJob::new("model:e", LIMIT + 1)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unadmittable);
    assert!(err.to_string().contains("model:e"), "{err}");
    assert!(err.to_string().contains("10001"), "{err}");
    assert_eq!(
        rec.jobs()[0].end.as_ref().unwrap().error_kind.as_deref(),
        Some("unadmittable")
    );
}

#[tokio::test(start_paused = true)]
async fn an_unconfigured_budget_is_refused_by_name() {
    let (d, _) = dispatcher_with("model:e", tpm(LIMIT));
    let err = d.run(SeatJob::new("model:nope", 1)).await.unwrap_err();
    assert!(err.to_string().contains("model:nope"), "{err}");
}
