use super::*;
use crate::job::kernel::bucket::THROTTLE_DECREASE;

const B: &str = "model:e";

fn ask(input: u64, output: u64) -> Ask {
    Ask {
        budget: B.into(),
        tokens: input + output,
        input_tokens: input,
        output_tokens: output,
        requests: 1,
        slots: 1,
    }
}

fn store(limits: Limits) -> MemoryBudgets {
    let s = MemoryBudgets::new();
    s.configure(B, limits);
    s
}

/// The provider states a minute's room (6,000) on the output axis.
fn minutes_output_room() -> RateObservation {
    RateObservation {
        output_tokens: AxisObservation {
            remaining: Some(6_000),
            reset: None,
            limit: None,
            reset_slack: Duration::ZERO,
        },
        ..RateObservation::default()
    }
}

fn granted(s: &MemoryBudgets, a: &Ask) -> Lease {
    match s.reserve_now(a) {
        Reservation::Granted(l) => l,
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn wait(s: &MemoryBudgets, a: &Ask) -> f64 {
    match s.reserve_now(a) {
        Reservation::Wait(Some(d)) => d.as_secs_f64(),
        other => panic!("expected a timed wait, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_output_limit_books_the_output_budget_then_settles_to_what_was_used() {
    // otpm = 6,000: 100 a second. A call booking 1,000 output tokens holds 10 s of the axis
    // until it ends; it used 100, so the next may go a second after the first.
    let s = store(Limits {
        output_tokens: Some(Rate::per_minute(6_000)),
        ..Limits::default()
    });
    // The provider states a minute's room: its window holds both calls.
    s.observe(B, minutes_output_room());
    let lease = granted(&s, &ask(5_000, 1_000));
    assert!((wait(&s, &ask(5_000, 1_000)) - 10.0).abs() < 1e-3);
    s.settle(
        &lease,
        SeatUse {
            input: 5_000,
            output: 100,
        },
    );
    s.release(&lease);
    assert!((wait(&s, &ask(5_000, 1_000)) - 1.0).abs() < 1e-3);
}

#[tokio::test(start_paused = true)]
async fn input_and_output_limits_pace_apart_and_the_tighter_binds() {
    // itpm = 60,000 (1,000 a second) and otpm = 6,000 (100 a second): an ask of 2,000 in and 50
    // out waits 2 s for the input axis; one of 100 in and 500 out waits 5 s for the output axis,
    // less the 0.5 s that axis was idle for before it (up to a grant's time is banked).
    let s = store(Limits {
        input_tokens: Some(Rate::per_minute(60_000)),
        output_tokens: Some(Rate::per_minute(6_000)),
        ..Limits::default()
    });
    let first = granted(&s, &ask(2_000, 50));
    let w = wait(&s, &ask(100, 10));
    assert!((w - 2.0).abs() < 1e-3, "{w}");
    tokio::time::advance(Duration::from_secs(2)).await;
    // The first call used what it asked (a call still out holds its place in the window).
    s.settle(
        &first,
        SeatUse {
            input: 2_000,
            output: 50,
        },
    );
    s.release(&first);
    granted(&s, &ask(100, 500));
    let w = wait(&s, &ask(100, 10));
    assert!((w - 4.5).abs() < 1e-3, "{w}");
}

#[tokio::test(start_paused = true)]
async fn an_ask_above_a_whole_output_figure_is_refused_with_its_numbers() {
    let s = store(Limits {
        output_tokens: Some(Rate::per_minute(4_000)),
        ..Limits::default()
    });
    match s.reserve_now(&ask(10, 8_192)) {
        Reservation::Never(why) => {
            assert!(
                why.contains("8192") && why.contains("otpm") && why.contains("4000"),
                "{why}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn separate_stated_limits_pace_a_budget_the_catalog_left_without_rates() {
    // Anthropic states input and output apart; the catalog gave no rate. Each stated figure
    // becomes its own axis at its own rate, never one axis at the lower figure.
    let s = store(Limits::default());
    s.observe(
        B,
        RateObservation {
            input_tokens: AxisObservation {
                limit: Some(60_000),
                ..AxisObservation::default()
            },
            output_tokens: AxisObservation {
                limit: Some(6_000),
                ..AxisObservation::default()
            },
            ..RateObservation::default()
        },
    );
    let rates = s.rates(B);
    let of = |axis| {
        rates
            .iter()
            .find(|r| r.axis == axis)
            .map(|r| (r.per_minute, r.source))
    };
    assert_eq!(of(Axis::InputTokens), Some((60_000.0, RateSource::Header)));
    assert_eq!(of(Axis::OutputTokens), Some((6_000.0, RateSource::Header)));
    assert_eq!(of(Axis::Tokens), None);
    granted(&s, &ask(3_000, 100));
    let w = wait(&s, &ask(10, 10));
    assert!((w - 3.0).abs() < 1e-3, "input paces at 1,000 a second: {w}");
}

#[tokio::test(start_paused = true)]
async fn the_standing_rate_says_where_it_came_from() {
    let s = store(Limits {
        tokens: Some(Rate::per_minute(150_000)),
        requests: Some(Rate::per_minute(600)),
        ..Limits::default()
    });
    let source = |axis| {
        s.rates(B)
            .into_iter()
            .find(|r| r.axis == axis)
            .map(|r| (r.per_minute.round(), r.source))
    };
    assert_eq!(source(Axis::Tokens), Some((150_000.0, RateSource::Catalog)));
    s.observe(
        B,
        RateObservation {
            tokens: AxisObservation {
                limit: Some(100_000),
                ..AxisObservation::default()
            },
            ..RateObservation::default()
        },
    );
    assert_eq!(source(Axis::Tokens), Some((100_000.0, RateSource::Header)));
    // A throttle while sending at the rate cuts it: the rate is now the one learned. The token
    // axis has a stated limit (the truth): cut a little. The request axis has none: it learns
    // what went through, one request in the second up to the pause's end (less the margin, but
    // never below a tenth of the rate).
    granted(&s, &ask(1_000, 0));
    s.pause(B, Duration::from_secs(1));
    assert_eq!(source(Axis::Tokens), Some((95_000.0, RateSource::Throttle)));
    assert_eq!(source(Axis::Requests), Some((60.0, RateSource::Throttle)));
}

#[tokio::test(start_paused = true)]
async fn a_throttle_on_a_budget_without_figures_or_tokens_paces_its_requests() {
    // No figure in the catalog and none in headers (a service's host, say), and the asks carry no
    // tokens: the probe goes alone, then nine more at once; the provider refuses the next and
    // asks for 1 s. Ten went through in that second: from then on one goes every 0.105 s (a
    // margin below that), not another burst of them all.
    let s = store(Limits::default());
    let probe = granted(&s, &ask(0, 0));
    s.release(&probe);
    for _ in 0..9 {
        granted(&s, &ask(0, 0));
    }
    s.pause(B, Duration::from_secs(1));
    assert!((wait(&s, &ask(0, 0)) - 1.0).abs() < 1e-3);
    tokio::time::advance(Duration::from_secs(1)).await;
    granted(&s, &ask(0, 0));
    let w = wait(&s, &ask(0, 0));
    assert!((w - 0.1 / THROTTLE_DECREASE).abs() < 1e-3, "{w}");
    let rates = s.rates(B);
    assert_eq!(rates.len(), 1, "{rates:?}");
    assert_eq!(rates[0].axis, Axis::Requests);
    assert_eq!(rates[0].source, RateSource::Throttle);
}

/// What a call of [`refused_with_five_out`] uses of the 600 tokens it reserves.
const USED: SeatUse = SeatUse {
    input: 100,
    output: 20,
};

/// A budget with no figure anywhere: five calls of 600 tokens finished at [`USED`] (120), then
/// five more are out when the provider refuses one and asks for 1 s; the five still out.
fn refused_with_five_out() -> (MemoryBudgets, Vec<Lease>) {
    let s = store(Limits::default());
    for _ in 0..5 {
        let l = granted(&s, &ask(100, 500));
        s.settle(&l, USED);
        s.release(&l);
    }
    let out: Vec<Lease> = (0..5).map(|_| granted(&s, &ask(100, 500))).collect();
    s.pause(B, Duration::from_secs(1));
    (s, out)
}

#[tokio::test(start_paused = true)]
async fn calls_refused_with_the_burst_leave_the_rate_a_throttle_taught() {
    // No figure anywhere. Five calls finished (120 tokens each of 600 reserved), five are out
    // when the provider refuses one and asks for 1 s. Three of the five come back refused too:
    // the provider never counted them, so its second held 5 x 120 + 2 x 600 = 1,800 tokens, not
    // the 3,600 the burst had out when the first refusal came.
    // The budget paces a margin below what went through.
    let (s, out) = refused_with_five_out();
    let per_minute = |s: &MemoryBudgets| s.rates(B)[0].per_minute / THROTTLE_DECREASE;
    assert!((per_minute(&s) - 3_600.0 * 60.0).abs() < 1.0);
    for (i, l) in out.iter().enumerate() {
        s.settle(l, if i < 3 { SeatUse::NONE } else { USED });
        s.release(l);
    }
    assert!(
        (per_minute(&s) - 1_800.0 * 60.0).abs() < 1.0,
        "{}",
        per_minute(&s)
    );
    // A call that comes back refused after the pause ended is one of the paced budget's own.
    tokio::time::advance(Duration::from_secs(1)).await;
    let late = granted(&s, &ask(100, 500));
    s.settle(&late, SeatUse::NONE);
    let after = per_minute(&s) / (1_800.0 * 60.0);
    assert!(
        (1.0..1.002).contains(&after),
        "{after}: only its climb of 1 s"
    );
}

#[tokio::test(start_paused = true)]
async fn a_throttle_on_a_budget_without_figures_paces_the_tokens_the_provider_counted() {
    // No figure anywhere (Gemini states none). Each call reserves 600 tokens and uses 120; the
    // provider counts a call in flight at its reservation (on arrival) and a finished one at its
    // use. The probe and four more finished, five are still out when the provider refuses and
    // asks for 1 s: its second held 5 x 120 + 5 x 600 = 3,600 tokens, 30 calls' use. Pacing
    // the ten requests that went through would send 10 a second; the tokens send 30, less the
    // margin the budget keeps below what went through (28.5).
    let (s, out) = refused_with_five_out();
    for l in &out {
        s.settle(l, USED);
        s.release(l);
    }
    let rates = s.rates(B);
    assert_eq!(rates.len(), 1, "{rates:?}");
    assert_eq!(rates[0].axis, Axis::Tokens);
    assert_eq!(rates[0].source, RateSource::Throttle);
    assert!(
        (rates[0].per_minute - 3_600.0 * THROTTLE_DECREASE * 60.0).abs() < 1.0,
        "{rates:?}"
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    let start = tokio::time::Instant::now();
    let mut calls = 0;
    while start.elapsed() < Duration::from_secs(1) {
        match s.reserve_now(&ask(100, 500)) {
            Reservation::Granted(l) => {
                calls += 1;
                s.settle(&l, USED);
                s.release(&l);
            }
            Reservation::Wait(Some(d)) => tokio::time::advance(d).await,
            other => panic!("expected a grant or a timed wait, got {other:?}"),
        }
    }
    // 28.5 at the rate, and at most one more for the grant's time a late waiter may bank.
    assert!(
        (28..=30).contains(&calls),
        "{calls} calls in the second after the pause"
    );
}
