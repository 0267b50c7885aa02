//! Issue 28, point 4: a server-requested wait (`retry-after`, `retry-after-ms`, or Gemini's
//! `google.rpc.RetryInfo` in the body) is honoured on every retryable status, and capped by the
//! client's `max_retry_wait`.

use std::time::{Duration, Instant};

use thinkers_sim::{FaultKind, FaultRule};

use crate::support::{Timeouts, arrivals, call, entry, faulty, model, requests};

const RETRYABLE: [u16; 8] = [500, 502, 503, 504, 408, 409, 429, 529];

/// The gap between the first two requests the sim saw for `model`.
fn gap(sim: &thinkers_sim::Sim, model: &str) -> Duration {
    let times = arrivals(sim, model);
    assert!(
        times.len() >= 2,
        "{model}: {} request(s), no retry",
        times.len()
    );
    (times[1] - times[0]).to_std().unwrap()
}

#[tokio::test]
async fn every_retryable_status_waits_as_long_as_the_server_asks() {
    let f = faulty(&Timeouts::default(), "THINKERS_SIM_KEY", None).await;
    let mut jobs = Vec::new();
    for anthropic in [false, true] {
        for (i, status) in RETRYABLE.into_iter().enumerate() {
            let m = model(anthropic, i);
            // The OpenAI entries are asked in milliseconds, the Anthropic ones once in seconds.
            let rule = FaultRule::new(FaultKind::RetryAfter)
                .status(status)
                .for_model(&m);
            let (rule, wait) = if anthropic && status == 503 {
                (rule.retry_after_secs(2), Duration::from_secs(2))
            } else {
                (rule.retry_after_ms(1500), Duration::from_millis(1500))
            };
            f.sim.inject(rule);
            let rt = &f.rt;
            let e = entry(anthropic, i);
            jobs.push(async move { (status, m, wait, rt.run(call(&e)).await) });
        }
    }
    let started = Instant::now();
    let done = tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(jobs))
        .await
        .expect("every call ends within 30 s");
    let mut failures = Vec::new();
    for (status, m, wait, result) in done {
        if let Err(e) = result {
            failures.push(format!("{m} (HTTP {status}): failed: {e}"));
            continue;
        }
        assert_eq!(requests(&f.sim, &m), 2, "{m}: one refused, one served");
        let gap = gap(&f.sim, &m);
        // The log's clock and the client's timers differ by a few milliseconds at most.
        if gap + Duration::from_millis(20) < wait {
            failures.push(format!(
                "{m} (HTTP {status}): retried after {gap:?}, the server asked {wait:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the calls ran side by side"
    );
}

#[tokio::test]
async fn a_requested_wait_above_the_cap_is_cut_to_the_cap() {
    let t = Timeouts {
        max_retry_wait: Some(Duration::from_secs(1)),
        ..Timeouts::default()
    };
    let f = faulty(&t, "THINKERS_SIM_KEY", None).await;
    let mut jobs = Vec::new();
    for anthropic in [false, true] {
        for (i, status) in [(0usize, 503u16), (1, 429)] {
            let m = model(anthropic, i);
            f.sim.inject(
                FaultRule::new(FaultKind::RetryAfter)
                    .status(status)
                    .retry_after_secs(30)
                    .for_model(&m),
            );
            let rt = &f.rt;
            let e = entry(anthropic, i);
            jobs.push(async move { (status, m, rt.run(call(&e)).await) });
        }
    }
    let done = tokio::time::timeout(Duration::from_secs(10), futures::future::join_all(jobs))
        .await
        .expect("a 30 s wait is capped at 1 s: every call ends within 10 s");
    for (status, m, result) in done {
        result.unwrap_or_else(|e| panic!("{m} (HTTP {status}): {e}"));
        let gap = gap(&f.sim, &m);
        assert!(
            gap >= Duration::from_millis(950) && gap < Duration::from_secs(5),
            "{m} (HTTP {status}): retried after {gap:?}; the cap is 1 s"
        );
    }
}

#[tokio::test]
async fn a_gemini_retry_info_delay_is_honoured_like_a_header() {
    // Gemini's 429 names no wait in a header: only its `google.rpc.RetryInfo` detail says 1 s.
    let sim = thinkers_sim::Sim::start(
        thinkers_sim::SimConfig::builder()
            .log_bodies(true)
            .model(thinkers_sim::SimModel::new("gemini-w"))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let toml = crate::gemini::catalog(&sim, &[("g-w", "gemini-w")]);
    let rt = crate::support::runtime(&toml, &Timeouts::default(), None).await;
    sim.inject(
        FaultRule::new(FaultKind::RateLimit429)
            .for_model("gemini-w")
            .times(1),
    );
    let started = Instant::now();
    rt.run(call("g-w")).await.unwrap();
    assert_eq!(requests(&sim, "gemini-w"), 2, "one refused, one served");
    let gap = gap(&sim, "gemini-w");
    // The dispatcher's own throttle backoff here is 10 ms: only the RetryInfo asks for 1 s.
    assert!(
        gap + Duration::from_millis(20) >= Duration::from_secs(1),
        "retried after {gap:?}; RetryInfo asked for 1 s"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}
