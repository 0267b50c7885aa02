//! Admission: budgets are never exceeded, surplus is returned, FIFO per budget.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use thinkers::ErrorKind;
use thinkers::dispatch::{Limits, Rate};
use tokio::time::Instant;

use crate::support::{SeatJob, dispatcher_with};

const LIMIT: u64 = 10_000;

/// `limit` tokens per minute with the conservative default burst.
fn tpm(limit: u64) -> Limits {
    Limits {
        tokens: Some(Rate::per_minute(limit)),
        ..Limits::default()
    }
}

/// `limit` tokens per minute from a bucket that holds the whole minute and refills at the rate.
fn tpm_whole_minute(limit: u64) -> Limits {
    Limits {
        tokens: Some(Rate::per_minute(limit).with_burst(Duration::from_secs(60))),
        ..Limits::default()
    }
}

/// One grant: when, what it reserved, and when (and how much) its surplus came back.
#[derive(Debug, Clone, Copy)]
struct Grant {
    at: Instant,
    reserved: u64,
    refund: Option<(Instant, u64)>,
}

/// The bucket's guarantee: for every interval between two grants, what was granted in it, less
/// what came back in it, is at most the bucket (10,000) plus the refill over the interval.
fn check_bucket(grants: &[Grant]) {
    let rate = LIMIT as f64 / 60.0;
    let mut by_time = grants.to_vec();
    by_time.sort_by_key(|g| g.at);
    let mut refunds: Vec<(Instant, u64)> = grants.iter().filter_map(|g| g.refund).collect();
    refunds.sort_by_key(|r| r.0);
    let mut refunded = vec![0u64];
    for (_, n) in &refunds {
        refunded.push(refunded.last().unwrap() + n);
    }
    let mut granted = vec![0u64];
    for g in &by_time {
        granted.push(granted.last().unwrap() + g.reserved);
    }
    for i in 0..by_time.len() {
        let from = by_time[i].at;
        // Refunds from `from` on: one at the very instant of the grant at `from` may have come
        // after it (a settle and a grant due in the same timer tick run in either order), so it
        // counts as returned inside the interval; likewise one at `to`.
        let r0 = refunds.partition_point(|r| r.0 < from);
        for j in i..by_time.len() {
            let to = by_time[j].at;
            let r1 = refunds.partition_point(|r| r.0 <= to);
            let out = (granted[j + 1] - granted[i]) as f64;
            let back = (refunded[r1] - refunded[r0]) as f64;
            let bound = LIMIT as f64 + rate * (to - from).as_secs_f64() + 1.0;
            assert!(
                out - back <= bound,
                "{out} granted less {back} returned between {from:?} and {to:?} exceeds {bound}"
            );
        }
    }
}

fn run_case(jobs: Vec<(u64, Option<u64>, u64)>) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let (d, _) = dispatcher_with("model:e", tpm_whole_minute(LIMIT));
        let grants = Arc::new(Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        for (reserve, used, hold_ms) in jobs {
            let g = grants.clone();
            let mut job = SeatJob::new("model:e", reserve);
            job.used = used;
            job.hold = Duration::from_millis(hold_ms);
            let hold = job.hold;
            job.on_grant = Some(Arc::new(move |_| {
                let at = Instant::now();
                g.lock().unwrap().push(Grant {
                    at,
                    reserved: reserve,
                    refund: used.map(|u| (at + hold, reserve - u)),
                });
            }));
            handles.push(d.submit(job));
        }
        for h in handles {
            h.await.unwrap();
        }
        let grants = grants.lock().unwrap().clone();
        assert_eq!(grants.len(), 1000);
        check_bucket(&grants);
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, .. ProptestConfig::default() })]

    /// 1,000 concurrent jobs with random reservations (some settling below what they reserved)
    /// never take more from the 10,000-token bucket than it holds plus its refill.
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

/// `d` within 30 ms of `expected`: the timer rounds each wait up to its next millisecond.
fn about(d: Duration, expected: Duration) -> bool {
    d.abs_diff(expected) < Duration::from_millis(30)
}

#[tokio::test(start_paused = true)]
async fn reconciliation_returns_surplus() {
    let (d, _) = dispatcher_with("model:e", tpm_whole_minute(LIMIT));
    let t0 = Instant::now();
    let mut a = SeatJob::new("model:e", 8_000);
    a.used = Some(1_000);
    d.run(a).await.unwrap();
    // 1,000 used + 8,000 reserved fits: admitted at once.
    let b = d.run(SeatJob::new("model:e", 8_000)).await.unwrap();
    assert_eq!(b, t0, "the surplus of the first job was returned");
    // Now 9,000 are booked and nothing was reported: the next 8,000 waits for 7,000 to refill.
    let c = d.run(SeatJob::new("model:e", 8_000)).await.unwrap();
    assert!(
        about(c - t0, Duration::from_secs(42)),
        "7,000 tokens at 10,000 per minute take 42 s: {:?}",
        c - t0
    );
}

#[tokio::test(start_paused = true)]
async fn unreported_usage_keeps_the_whole_reservation() {
    let (d, _) = dispatcher_with("model:e", tpm_whole_minute(LIMIT));
    let t0 = Instant::now();
    d.run(SeatJob::new("model:e", 8_000)).await.unwrap();
    let b = d.run(SeatJob::new("model:e", 8_000)).await.unwrap();
    assert!(about(b - t0, Duration::from_secs(36)), "{:?}", b - t0);
}

#[tokio::test(start_paused = true)]
async fn waiters_are_served_first_come_first_served() {
    let (d, _) = dispatcher_with("model:e", tpm_whole_minute(LIMIT));
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
    assert!(about(b - t0, Duration::from_secs(48)), "{:?}", b - t0);
    assert!(s >= b, "the small job waited its turn");
}

#[tokio::test(start_paused = true)]
async fn the_default_pacing_spends_the_figure_at_its_rate_without_a_burst() {
    // 150,000 per minute is 2,500 per second: one ask of 1,000 at once, then one every 0.4 s
    // (the whole rate; the bucket this replaced refilled at 96 % of it), and never a burst. Each
    // uses what it asked (a call whose usage never comes back counts whole in the window).
    let (d, _) = dispatcher_with("model:e", tpm(150_000));
    let t0 = Instant::now();
    let handles: Vec<_> = (0..25)
        .map(|_| {
            let mut job = SeatJob::new("model:e", 1_000);
            job.used = Some(1_000);
            d.submit(job)
        })
        .collect();
    let mut starts = Vec::new();
    for h in handles {
        starts.push(h.await.unwrap() - t0);
    }
    starts.sort_unstable();
    assert_eq!(starts[0], Duration::ZERO, "an idle axis admits at once");
    assert!(starts[1] > Duration::ZERO, "but holds one ask at a time");
    assert!(
        about(starts[24], Duration::from_millis(9_600)),
        "{:?}",
        starts[24]
    );
}

#[tokio::test(start_paused = true)]
async fn model_calls_without_a_catalog_rate_start_alone_then_double_per_round_trip() {
    // No rate in the catalog: the first call probes the provider (whose headers may state its
    // limits) alone; each call that ends lets one more out at once, so a provider that states
    // nothing refuses the first few calls beyond its limit rather than every call in flight.
    let (d, _) = dispatcher_with("model:e", Limits::default());
    let t0 = Instant::now();
    // An ask of no tokens (a tool's slot, not a model call) is no probe.
    let free = d.run(SeatJob::new("model:e", 0)).await.unwrap() - t0;
    assert_eq!(free, Duration::ZERO);
    let handles: Vec<_> = (0..11)
        .map(|_| {
            let mut j = SeatJob::new("model:e", 100);
            j.hold = Duration::from_secs(1);
            d.submit(j)
        })
        .collect();
    let mut starts = Vec::new();
    for h in handles {
        starts.push((h.await.unwrap() - t0).as_secs());
    }
    starts.sort_unstable();
    assert_eq!(starts, vec![0, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
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

/// A seat job whose first attempt is throttled by the provider (no budget named, so nothing is
/// paused): it records the time of every grant.
struct ThrottledOnce {
    reserve: u64,
    throttled: bool,
    grants: Arc<Mutex<Vec<Instant>>>,
}

impl thinkers::job::Job for ThrottledOnce {
    type Output = ();
    fn class(&self) -> std::borrow::Cow<'static, str> {
        "throttled_once".into()
    }
    fn requirements(
        &mut self,
        req: &mut thinkers::job::Requirements,
        _cx: &thinkers::job::JobContext,
    ) -> thinkers::Result<()> {
        req.seat(thinkers::job::Seat {
            entry: "e".into(),
            budget: "model:e".into(),
            input_tokens: self.reserve,
            output_tokens: 0,
            reasoning_tokens: 0,
        });
        Ok(())
    }
    async fn execute(
        &mut self,
        _res: &thinkers::job::Resources,
        _cx: &thinkers::job::JobContext,
    ) -> thinkers::Result<()> {
        self.grants.lock().unwrap().push(Instant::now());
        if self.throttled {
            return Ok(());
        }
        self.throttled = true;
        Err(thinkers::Error::throttled(
            None,
            Some(Duration::from_secs(1)),
        ))
    }
}

#[tokio::test(start_paused = true)]
async fn a_throttled_attempt_gives_its_tokens_back() {
    let (d, _) = dispatcher_with("model:e", tpm(LIMIT));
    let t0 = Instant::now();
    let grants = Arc::new(Mutex::new(Vec::new()));
    d.run(ThrottledOnce {
        reserve: 8_000,
        throttled: false,
        grants: grants.clone(),
    })
    .await
    .unwrap();
    let grants = grants.lock().unwrap().clone();
    assert_eq!(grants.len(), 2);
    assert_eq!(
        grants[1] - t0,
        Duration::from_secs(1),
        "the retry runs after the throttle's wait: the provider charged nothing for the first \
         attempt, so its 8,000 tokens were given back"
    );
}

#[tokio::test(start_paused = true)]
async fn a_pause_releases_waiters_at_the_rate_not_at_once() {
    // 6,000 tokens per minute: 100 per second.
    let (d, _) = dispatcher_with("model:e", tpm(6_000));
    let t0 = Instant::now();
    d.admission()
        .store()
        .pause("model:e", Duration::from_secs(10));
    let handles: Vec<_> = (0..10)
        .map(|_| d.submit(SeatJob::new("model:e", 100)))
        .collect();
    let mut starts = Vec::new();
    for h in handles {
        starts.push(h.await.unwrap() - t0);
    }
    starts.sort_unstable();
    assert!(starts[0] >= Duration::from_secs(10), "{starts:?}");
    for pair in starts.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(990),
            "100 tokens at 100 per second (less the burst's share) take a second: {starts:?}"
        );
    }
}
