//! Unit tests of the limit shapes and kinds, on paused tokio time.

use super::*;

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn ms(m: u64) -> Duration {
    Duration::from_millis(m)
}

fn tokens(n: u64) -> Cost {
    Cost {
        input: n,
        output: 0,
    }
}

fn cost(input: u64, output: u64) -> Cost {
    Cost { input, output }
}

fn window(limits: Limits) -> (Window, Instant) {
    let t0 = Instant::now();
    (Window::new(limits, t0), t0)
}

/// Admits and immediately finishes (so concurrency never binds).
fn admit(w: &mut Window, at: Instant, c: Cost) -> Result<u64, Box<Refusal>> {
    let ticket = w.admit(at, c)?;
    w.finish(ticket.id, ticket.generation);
    Ok(ticket.id)
}

#[test]
fn go_durations() {
    assert_eq!(go_duration(Duration::ZERO), "0s");
    assert_eq!(go_duration(Duration::from_micros(10)), "1ms");
    assert_eq!(go_duration(ms(250)), "250ms");
    assert_eq!(go_duration(ms(1500)), "1.5s");
    assert_eq!(go_duration(secs(1)), "1s");
    assert_eq!(go_duration(secs(360)), "6m0s");
    assert_eq!(go_duration(ms(61_250)), "1m1.25s");
    assert_eq!(go_duration(secs(3723)), "1h2m3s");
}

#[test]
fn shapes_parse_and_name_the_bad_value() {
    assert_eq!("sliding".parse(), Ok(LimitShape::Sliding));
    assert_eq!("fixed".parse(), Ok(LimitShape::Fixed));
    assert_eq!("token_bucket".parse(), Ok(LimitShape::TokenBucket));
    let err = "leaky".parse::<LimitShape>().unwrap_err();
    assert_eq!(err.value, "leaky");
    assert!(err.to_string().contains("limit_shape `leaky`"), "{err}");
    assert_eq!(LimitShape::default(), LimitShape::Sliding);
    assert_eq!(LimitShape::TokenBucket.to_string(), "token_bucket");
}

// --- sliding ---------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn requests_per_minute_slide() {
    let (mut w, t0) = window(Limits {
        rpm: Some(2),
        ..Limits::default()
    });
    admit(&mut w, t0, tokens(1)).unwrap();
    admit(&mut w, t0 + secs(10), tokens(1)).unwrap();
    let refused = admit(&mut w, t0 + secs(20), tokens(1)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::Requests);
    assert_eq!(refused.retry_after, secs(40));
    let requests = refused.state.requests.unwrap();
    assert_eq!(requests.remaining, 0);
    assert_eq!(requests.figure, 2);
    // Fully replenished when the newest request leaves the window.
    assert_eq!(requests.reset, secs(50));
    admit(&mut w, t0 + secs(60), tokens(1)).unwrap();
}

#[tokio::test(start_paused = true)]
async fn tokens_per_minute_with_settling() {
    let (mut w, t0) = window(Limits {
        tpm: Some(100),
        ..Limits::default()
    });
    let a = w.admit(t0, cost(30, 50)).unwrap().id;
    let refused = admit(&mut w, t0, tokens(30)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::Tokens);
    assert!(!refused.too_large);
    assert_eq!(refused.retry_after, WINDOW);
    assert_eq!(
        (refused.used, refused.requested, refused.figure),
        (80, 30, 100)
    );
    // Giving back unused output makes room.
    let state = w.settle(t0, a, cost(30, 20));
    assert_eq!(state.tokens.unwrap().remaining, 50);
    admit(&mut w, t0 + secs(5), tokens(30)).unwrap();
    let huge = admit(&mut w, t0, tokens(101)).unwrap_err();
    assert!(huge.too_large);
    assert_eq!(huge.retry_after, Duration::ZERO);
    let refused = admit(&mut w, t0 + secs(6), tokens(40)).unwrap_err();
    assert_eq!(refused.retry_after, secs(54));
}

#[tokio::test(start_paused = true)]
async fn a_per_minute_figure_over_ten_seconds_admits_its_share() {
    let (mut w, t0) = window(Limits {
        tpm: Some(150_000),
        window: secs(10),
        ..Limits::default()
    });
    admit(&mut w, t0, tokens(20_000)).unwrap();
    let refused = admit(&mut w, t0, tokens(5_001)).unwrap_err();
    let state = refused.state.tokens.unwrap();
    assert_eq!(state.remaining, 5_000);
    // The header figure is the per-minute one, not the window's share.
    assert_eq!(state.figure, 150_000);
    assert_eq!(refused.retry_after, secs(10));
    admit(&mut w, t0, tokens(5_000)).unwrap();
    admit(&mut w, t0 + secs(10), tokens(25_000)).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_one_second_sliding_window_refuses_the_second_half_allowance_ask() {
    // 6,000 per minute over 1 s: 100 tokens in any second.
    let (mut w, t0) = window(Limits {
        tpm: Some(6_000),
        window: secs(1),
        ..Limits::default()
    });
    admit(&mut w, t0, tokens(60)).unwrap();
    let refused = admit(&mut w, t0 + ms(400), tokens(60)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::Tokens);
    assert_eq!(
        refused.retry_after,
        ms(600),
        "until the first ask leaves the second"
    );
    assert_eq!(refused.state.tokens.unwrap().remaining, 40);
    // It does not slide back: at 999 ms the first ask is still in the window.
    assert!(admit(&mut w, t0 + ms(999), tokens(60)).is_err());
    admit(&mut w, t0 + ms(1000), tokens(60)).unwrap();
    // The window is sliding, not fixed: at 1.5 s the ask of 1.0 s is still in it.
    assert!(admit(&mut w, t0 + ms(1500), tokens(60)).is_err());
}

// --- fixed -----------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_fixed_window_resets_at_its_boundary() {
    // 600 per minute per fixed 10 s window: 100 per window, windows at 0, 10, 20 s…
    let (mut w, t0) = window(Limits {
        tpm: Some(600),
        shape: LimitShape::Fixed,
        window: secs(10),
        ..Limits::default()
    });
    admit(&mut w, t0 + secs(9), tokens(100)).unwrap();
    let refused = admit(&mut w, t0 + ms(9_500), tokens(1)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::Tokens);
    assert_eq!(refused.retry_after, ms(500), "until the boundary at 10 s");
    let state = refused.state.tokens.unwrap();
    assert_eq!(
        (state.figure, state.remaining, state.reset),
        (600, 0, ms(500))
    );
    // At the boundary the whole allowance is back, though the 100 were spent 1 s earlier (a
    // sliding window would refuse until 19 s).
    admit(&mut w, t0 + secs(10), tokens(100)).unwrap();
    assert!(admit(&mut w, t0 + ms(19_999), tokens(1)).is_err());
    admit(&mut w, t0 + secs(20), tokens(1)).unwrap();
    let state = w.state_at(t0 + secs(25));
    assert_eq!(state.tokens.unwrap().remaining, 99);
    assert_eq!(state.tokens.unwrap().reset, secs(5));
    // An empty window is fully replenished.
    assert_eq!(
        w.state_at(t0 + secs(30)).tokens.unwrap().reset,
        Duration::ZERO
    );
}

#[tokio::test(start_paused = true)]
async fn a_fixed_window_settles_only_a_charge_it_still_holds() {
    let (mut w, t0) = window(Limits {
        tpm: Some(60),
        shape: LimitShape::Fixed,
        window: secs(1),
        ..Limits::default()
    });
    // 1 token per 1 s window.
    let a = w.admit(t0, cost(0, 1)).unwrap();
    let state = w.settle(t0 + ms(500), a.id, cost(0, 0));
    assert_eq!(
        state.tokens.unwrap().remaining,
        1,
        "settled in the same window"
    );
    let b = w.admit(t0 + ms(600), cost(1, 0)).unwrap();
    // Settled in the next window: that window's usage is untouched.
    let c = w.admit(t0 + ms(1_100), tokens(1)).unwrap();
    let state = w.settle(t0 + ms(1_200), b.id, cost(0, 0));
    assert_eq!(state.tokens.unwrap().remaining, 0);
    assert!(w.admit(t0 + ms(1_300), tokens(1)).is_err());
    w.finish(c.id, c.generation);
}

#[tokio::test(start_paused = true)]
async fn requests_per_fixed_minute() {
    let (mut w, t0) = window(Limits {
        rpm: Some(3),
        shape: LimitShape::Fixed,
        ..Limits::default()
    });
    for at in [0, 30, 59] {
        admit(&mut w, t0 + secs(at), tokens(1)).unwrap();
    }
    let refused = admit(&mut w, t0 + ms(59_250), tokens(1)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::Requests);
    assert_eq!(refused.retry_after, ms(750));
    for _ in 0..3 {
        admit(&mut w, t0 + secs(60), tokens(1)).unwrap();
    }
}

// --- token bucket ----------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_bucket_admits_a_burst_up_to_capacity_then_at_the_refill_rate() {
    // 60 requests per minute: a bucket of 60, one back per second.
    let (mut w, t0) = window(Limits {
        rpm: Some(60),
        shape: LimitShape::TokenBucket,
        ..Limits::default()
    });
    for _ in 0..60 {
        admit(&mut w, t0, tokens(1)).unwrap();
    }
    let refused = admit(&mut w, t0, tokens(1)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::Requests);
    assert_eq!(refused.retry_after, secs(1));
    let state = refused.state.requests.unwrap();
    assert_eq!((state.figure, state.remaining), (60, 0));
    assert_eq!(state.reset, secs(60), "time until the bucket is full again");
    // Half a second later the next request is half a second away.
    let refused = admit(&mut w, t0 + ms(500), tokens(1)).unwrap_err();
    assert_eq!(refused.retry_after, ms(500));
    admit(&mut w, t0 + secs(1), tokens(1)).unwrap();
    assert!(admit(&mut w, t0 + secs(1), tokens(1)).is_err());
    // Ten seconds refill ten.
    for _ in 0..10 {
        admit(&mut w, t0 + secs(11), tokens(1)).unwrap();
    }
    assert!(admit(&mut w, t0 + secs(11), tokens(1)).is_err());
    // The bucket never holds more than its capacity.
    let state = w.state_at(t0 + secs(3600)).requests.unwrap();
    assert_eq!((state.remaining, state.reset), (60, Duration::ZERO));
}

#[tokio::test(start_paused = true)]
async fn a_token_bucket_gives_back_unused_output_and_says_the_true_wait() {
    // 6,000 tokens per minute: a bucket of 6,000, 100 back per second.
    let (mut w, t0) = window(Limits {
        tpm: Some(6_000),
        shape: LimitShape::TokenBucket,
        ..Limits::default()
    });
    let a = w.admit(t0, cost(1_000, 4_000)).unwrap();
    assert_eq!(w.state_at(t0).tokens.unwrap().remaining, 1_000);
    let state = w.settle(t0, a.id, cost(1_000, 500));
    assert_eq!(state.tokens.unwrap().remaining, 4_500);
    w.finish(a.id, a.generation);
    let refused = admit(&mut w, t0, tokens(5_000)).unwrap_err();
    assert_eq!(
        refused.retry_after,
        secs(5),
        "500 missing at 100 per second"
    );
    assert_eq!(refused.used, 1_500);
    admit(&mut w, t0 + secs(5), tokens(5_000)).unwrap();
    assert!(
        admit(&mut w, t0 + secs(5), tokens(6_001))
            .unwrap_err()
            .too_large
    );
}

#[tokio::test(start_paused = true)]
async fn a_bucket_over_ten_seconds_holds_the_share() {
    let (mut w, t0) = window(Limits {
        tpm: Some(60_000),
        shape: LimitShape::TokenBucket,
        window: secs(10),
        ..Limits::default()
    });
    // Capacity 10,000, refill 1,000 per second.
    admit(&mut w, t0, tokens(10_000)).unwrap();
    let refused = admit(&mut w, t0, tokens(2_500)).unwrap_err();
    assert_eq!(refused.retry_after, ms(2_500));
    assert_eq!(refused.state.tokens.unwrap().reset, secs(10));
    assert!(admit(&mut w, t0, tokens(10_001)).unwrap_err().too_large);
}

// --- input and output tokens ------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn itpm_and_otpm_refuse_independently() {
    let (mut w, t0) = window(Limits {
        itpm: Some(1_000),
        otpm: Some(200),
        ..Limits::default()
    });
    // Input heavy: fills the input limit, leaves the output one.
    admit(&mut w, t0, cost(900, 10)).unwrap();
    let refused = admit(&mut w, t0 + secs(1), cost(200, 10)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::InputTokens);
    assert_eq!(
        (refused.figure, refused.used, refused.requested),
        (1_000, 900, 200)
    );
    assert_eq!(refused.retry_after, secs(59));
    // A small input with output still fits.
    admit(&mut w, t0 + secs(2), cost(50, 150)).unwrap();
    // Output heavy: the output limit refuses though input has room.
    let refused = admit(&mut w, t0 + secs(3), cost(10, 100)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::OutputTokens);
    assert_eq!(refused.retry_after, secs(59), "until the 150 of 2 s leave");
    let state = refused.state;
    assert_eq!(state.input_tokens.unwrap().remaining, 50);
    assert_eq!(state.output_tokens.unwrap().remaining, 40);
    assert!(state.tokens.is_none() && state.requests.is_none());
}

#[tokio::test(start_paused = true)]
async fn otpm_is_charged_max_tokens_then_settled_to_the_output() {
    let (mut w, t0) = window(Limits {
        otpm: Some(1_000),
        shape: LimitShape::TokenBucket,
        ..Limits::default()
    });
    let a = w.admit(t0, cost(5_000, 800)).unwrap();
    let refused = w.admit(t0, cost(1, 300)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::OutputTokens);
    let state = w.settle(t0, a.id, cost(5_000, 100));
    assert_eq!(state.output_tokens.unwrap().remaining, 900);
    w.admit(t0, cost(1, 300)).unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_longest_wait_binds_when_several_limits_are_broken() {
    let (mut w, t0) = window(Limits {
        rpm: Some(2),
        tpm: Some(100),
        ..Limits::default()
    });
    admit(&mut w, t0, tokens(1)).unwrap();
    admit(&mut w, t0 + secs(20), tokens(90)).unwrap();
    // Requests fit again at 60 s (when the first leaves), tokens only at 80 s: tokens bind.
    let refused = admit(&mut w, t0 + secs(30), tokens(20)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::Tokens);
    assert_eq!(refused.retry_after, secs(50));
    // When only requests are short, requests bind.
    let refused = admit(&mut w, t0 + secs(30), tokens(5)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::Requests);
    assert_eq!(refused.retry_after, secs(30));
    // A request too large for one limit is too large whatever the others say.
    let refused = admit(&mut w, t0 + secs(30), tokens(101)).unwrap_err();
    assert!(refused.too_large);
    assert_eq!(refused.kind, LimitKind::Tokens);
}

// --- concurrency -----------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn concurrency_refuses_the_next_in_flight() {
    let (mut w, t0) = window(Limits {
        max_concurrency: Some(2),
        ..Limits::default()
    });
    let a = w.admit(t0, tokens(1)).unwrap();
    let b = w.admit(t0, tokens(1)).unwrap();
    assert_eq!((a.in_flight, b.in_flight), (1, 2));
    let refused = w.admit(t0, tokens(1)).unwrap_err();
    assert_eq!(refused.kind, LimitKind::Concurrency);
    assert_eq!((refused.figure, refused.used), (2, 2));
    assert_eq!(refused.retry_after, CONCURRENCY_RETRY);
    assert!(!refused.too_large);
    // Settling does not end the request; finishing does.
    w.settle(t0, a.id, tokens(1));
    assert!(w.admit(t0, tokens(1)).is_err());
    w.finish(a.id, a.generation);
    w.finish(a.id, a.generation);
    assert_eq!(w.in_flight(), 1, "finishing twice counts once");
    let c = w.admit(t0, tokens(1)).unwrap();
    assert_eq!(c.in_flight, 2);
    // A reset forgets the requests in flight; their late finish changes nothing.
    w.clear(t0);
    assert_eq!(w.in_flight(), 0);
    let d = w.admit(t0, tokens(1)).unwrap();
    w.finish(b.id, b.generation);
    w.finish(c.id, c.generation);
    assert_eq!(w.in_flight(), 1);
    w.finish(d.id, d.generation);
    assert_eq!(w.in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn clearing_realigns_fixed_windows_and_fills_buckets() {
    let (mut w, t0) = window(Limits {
        rpm: Some(1),
        shape: LimitShape::Fixed,
        window: secs(10),
        ..Limits::default()
    });
    w.clear(t0 + secs(3));
    admit(&mut w, t0 + secs(4), tokens(1)).unwrap();
    let refused = admit(&mut w, t0 + secs(12), tokens(1)).unwrap_err();
    assert_eq!(
        refused.retry_after,
        secs(1),
        "windows now start at 3 s, 13 s…"
    );
    let (mut b, t0) = window(Limits {
        tpm: Some(60),
        shape: LimitShape::TokenBucket,
        ..Limits::default()
    });
    admit(&mut b, t0, tokens(60)).unwrap();
    b.clear(t0);
    admit(&mut b, t0, tokens(60)).unwrap();
}
