use super::*;

fn s(x: f64) -> Duration {
    Duration::from_secs_f64(x)
}

/// Grant asks of `n` as fast as the axis allows for `span`, settling each to `used` at once (a
/// token axis; a request axis is never settled); returns the grant times as seconds from `t0`.
fn run(b: &mut Bucket, t0: Instant, span: Duration, n: u64, used: Option<u64>) -> Vec<f64> {
    let mut now = t0;
    let mut at = Vec::new();
    while now < t0 + span {
        match b.check(now, n) {
            Some(wait) => now += wait,
            None => {
                b.take(now, n);
                if let Some(used) = used {
                    b.settle(now, n, used);
                }
                at.push((now - t0).as_secs_f64());
            }
        }
    }
    at
}

/// The most units any half-open window of `window` seconds holds.
fn busiest(at: &[f64], window: f64, n: u64) -> u64 {
    at.iter()
        .map(|&start| {
            at.iter()
                .filter(|&&t| t >= start && t < start + window)
                .count() as u64
                * n
        })
        .max()
        .unwrap_or(0)
}

/// The most a sliding window of `window` seconds holds when an ask of `n` arrives: the earlier
/// grants still in it at their `used` size, plus the ask.
fn at_arrival(at: &[f64], window: f64, n: u64, used: u64) -> u64 {
    at.iter()
        .map(|&t| at.iter().filter(|&&e| e < t && e > t - window).count() as u64 * used + n)
        .max()
        .unwrap_or(0)
}

#[tokio::test(start_paused = true)]
async fn a_request_axis_runs_at_the_whole_rate() {
    // rpm = 10: one request every 6 s, ten in any minute, never eleven (the half-rate pacing of
    // the bucket this replaced sent them 12 s apart).
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(10), t0);
    let at = run(&mut b, t0, s(240.0), 1, None);
    assert_eq!(at.len(), 40, "{at:?}");
    assert!((at[1] - at[0] - 6.0).abs() < 1e-3, "{at:?}");
    assert_eq!(busiest(&at, 60.0, 1), 10);
}

#[tokio::test(start_paused = true)]
async fn equal_token_asks_never_overfill_a_ten_second_window() {
    // 150,000 per minute, asks of 1,300 fully used: 19 fit in 10 s' share (25,000).
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(150_000), t0);
    let at = run(&mut b, t0, s(120.0), 1_300, Some(1_300));
    assert!(busiest(&at, 10.0, 1_300) <= 25_000);
    assert!(busiest(&at, 60.0, 1_300) <= 150_000);
    assert!(busiest(&at, 1.0, 1_300) <= 2 * 1_300);
    let used = at.len() as f64 * 1_300.0 / 120.0;
    assert!(used >= 0.94 * 2_500.0, "{used} per second");
    // Asks that use less leave room for more, and still keep room for one more whole ask in
    // every 10 s: used units in the window plus one reservation stay within the share.
    let mut b = Bucket::new(Rate::per_minute(150_000), t0);
    let at = run(&mut b, t0, s(120.0), 1_300, Some(600));
    assert!(at_arrival(&at, 10.0, 1_300, 600) <= 25_000);
    let used = at.len() as f64 * 600.0 / 120.0;
    assert!(used >= 0.94 * 2_500.0, "{used} per second");
}

#[tokio::test(start_paused = true)]
async fn unused_output_comes_back_as_time() {
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(60_000), t0);
    // 1,000 per second; an ask of 1,000 that used 250 leaves 0.75 s for the next ask.
    b.take(t0, 1_000);
    b.settle(t0, 1_000, 250);
    let wait = b.check(t0, 1_000).unwrap();
    // 0.25 s for the 250 used, and the margin that keeps a whole ask's room in 10 s' share:
    // 1,000 · 250 / (10,000 − 1,000) units.
    let margin = 1_000.0 * 250.0 / 9_000.0 / 1_000.0;
    assert!(
        (wait.as_secs_f64() - 0.25 - margin).abs() < 1e-3,
        "{wait:?}"
    );
    // No time is banked in the past: an idle axis grants one ask at once, then paces again.
    let later = t0 + s(30.0);
    assert_eq!(b.check(later, 1_000), None);
    b.take(later, 1_000);
    b.settle(later, 1_000, 0);
    assert_eq!(b.check(later, 1_000), None);
    b.take(later, 1_000);
    assert!(b.check(later, 1_000).is_some());
}

#[tokio::test(start_paused = true)]
async fn a_stated_limit_below_the_catalog_lowers_the_rate() {
    // The catalog says 80 per minute, the provider's headers 8: one request per 7.5 s.
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(80), t0);
    b.observe(t0, Some(8), None, None);
    let at = run(&mut b, t0, s(60.0), 1, None);
    assert_eq!(at.len(), 8, "{at:?}");
    // A stated limit above the catalog's leaves the catalog's figure: it is the user's ceiling.
    let mut b = Bucket::new(Rate::per_minute(10), t0);
    b.observe(t0, Some(1_000), None, None);
    assert!((b.per_second(t0) - 10.0 / 60.0).abs() < 1e-9);
    // An axis the catalog left out runs at the stated figure.
    let b = Bucket::stated(120, t0);
    assert!((b.per_second(t0) - 2.0).abs() < 1e-9);
}

#[tokio::test(start_paused = true)]
async fn a_pause_holds_for_what_was_asked_and_no_longer() {
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(6_000), t0);
    b.pause(t0, t0 + s(2.5));
    assert_eq!(b.check(t0 + s(2.5), 1), None);
    let wait = b.check(t0 + s(1.0), 1).unwrap();
    assert!((wait.as_secs_f64() - 1.5).abs() < 1e-3, "{wait:?}");
}

#[tokio::test(start_paused = true)]
async fn a_throttle_learns_what_the_provider_let_through() {
    // The catalog says 40 per minute; the provider allows 8 per fixed minute.
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(40), t0);
    let at = run(&mut b, t0, s(12.0), 1, None);
    assert_eq!(at.len(), 8, "{at:?}");
    // The ninth is refused until the minute ends: 8 went through in 60 s.
    let now = t0 + s(12.0);
    b.pause(now, t0 + s(60.0));
    let learned = b.per_second(now) * 60.0;
    assert!((learned - 8.0).abs() < 0.01, "{learned} per minute");
    assert_eq!(b.check(t0 + s(60.0), 1), None, "and no longer than asked");
    // A second throttle of the same pause teaches nothing more.
    b.pause(now + s(0.1), t0 + s(60.0));
    assert!((b.per_second(now) * 60.0 - learned).abs() < 1e-9);
    // The learned rate climbs back slowly, never above the catalog's.
    let climbed = b.per_second(now + s(100.0)) * 60.0;
    assert!(climbed > learned && climbed < learned * 1.2, "{climbed}");
    assert!(b.per_second(now + s(1e6)) * 60.0 <= 40.0 + 1e-9);
}

#[tokio::test(start_paused = true)]
async fn a_throttle_that_shows_no_lower_rate_cuts_the_rate_a_little() {
    // A refusal that shows no lower rate went through (here right after the first grant) cuts
    // the rate a little: 0.95 of itself.
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(60), t0);
    b.take(t0, 1);
    b.pause(t0, t0 + s(0.001));
    assert!((b.per_second(t0) - 0.95).abs() < 1e-9);
}

#[tokio::test(start_paused = true)]
async fn a_throttle_on_an_idle_axis_learns_nothing() {
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(80), t0);
    b.take(t0, 1);
    let now = t0 + s(30.0);
    b.pause(now, now + s(1.0));
    assert!((b.per_second(now) * 60.0 - 80.0).abs() < 1e-9);
}

#[tokio::test(start_paused = true)]
async fn a_low_remaining_waits_for_the_difference_or_the_reset() {
    let t0 = Instant::now();
    // 1,000 per second; our ask (100) is long paid for, but another client spent the room.
    let mut b = Bucket::new(Rate::per_minute(60_000), t0);
    b.take(t0, 100);
    let now = t0 + s(5.0);
    assert_eq!(b.check(now, 100), None);
    b.observe(now, None, Some(40), Some(s(3.0)));
    let wait = b.check(now, 100).unwrap();
    assert!((wait.as_secs_f64() - 0.06).abs() < 1e-3, "{wait:?}");
    // A reset sooner than the rate's catch-up is waited for instead.
    let mut b = Bucket::new(Rate::per_minute(60_000), t0);
    b.take(t0, 100);
    b.observe(now, None, Some(0), Some(s(0.02)));
    let wait = b.check(now, 100).unwrap();
    assert!((wait.as_secs_f64() - 0.02).abs() < 1e-3, "{wait:?}");
    // Room for the last ask holds nothing.
    b.observe(now + s(1.0), None, Some(100), Some(s(5.0)));
    assert_eq!(b.check(now + s(1.0), 100), None);
}

#[tokio::test(start_paused = true)]
async fn the_largest_wait_a_header_can_carry_does_not_overflow() {
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(600), t0);
    b.take(t0, 1);
    b.pause(t0, later(t0, Duration::from_secs(u64::MAX)));
    b.observe(t0, Some(u64::MAX), Some(0), Some(Duration::MAX));
    let wait = b.check(t0, 1).unwrap();
    assert!(wait <= MAX_WAIT, "{wait:?}");
    b.settle(t0, 0, u64::MAX);
    assert!(b.check(t0, 1).unwrap() <= MAX_WAIT + MAX_WAIT);
}

#[tokio::test(start_paused = true)]
async fn an_explicit_burst_is_granted_at_once_then_paced_at_the_rate() {
    let t0 = Instant::now();
    // 600 per minute with 10 s' burst: 100 requests at once, then 10 per second.
    let mut b = Bucket::new(Rate::per_minute(600).with_burst(s(10.0)), t0);
    let at = run(&mut b, t0, s(2.0), 1, None);
    assert!(at.iter().filter(|&&t| t == 0.0).count() >= 100);
    assert!((119..=121).contains(&at.len()), "{}", at.len());
}

#[tokio::test(start_paused = true)]
async fn a_provider_that_never_states_more_room_than_a_second_keeps_a_seconds_margin() {
    // 2,500 per second. An ask of 800 that used 370 keeps room for the next ask in 10 s' share
    // (25,000) until the provider shows it never has more than 2,000 of room: its window is a
    // second or less, and the margin keeps room in one second's share (2,500).
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(150_000), t0);
    b.take(t0, 800);
    b.settle(t0, 800, 370);
    let ten = (370.0 + 800.0 * 370.0 / 24_200.0) / 2_500.0;
    let wait = b.check(t0, 800).unwrap().as_secs_f64();
    assert!((wait - ten).abs() < 1e-3, "{wait}");
    let later = t0 + s(5.0);
    b.observe(later, None, Some(2_000), None);
    b.take(later, 800);
    b.settle(later, 800, 370);
    let one = (370.0 + 800.0 * 370.0 / 1_700.0) / 2_500.0;
    let wait = b.check(later, 800).unwrap().as_secs_f64();
    assert!((wait - one).abs() < 1e-3, "{wait}");
    // Room stated while the axis is busy is its own grants' doing: it holds nothing.
    b.observe(later, None, Some(0), Some(s(5.0)));
    assert!((b.check(later, 800).unwrap().as_secs_f64() - one).abs() < 1e-3);
}

#[tokio::test(start_paused = true)]
async fn a_provider_that_states_its_limit_is_believed_over_a_throttle() {
    // The headers said 40 per minute; a refusal after 8 (a burst, another client) cuts the
    // rate a little instead of to what went through.
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(40), t0);
    b.observe(t0, Some(40), None, None);
    run(&mut b, t0, s(12.0), 1, None);
    let now = t0 + s(12.0);
    b.pause(now, t0 + s(60.0));
    let learned = b.per_second(now) * 60.0;
    assert!((learned - 38.0).abs() < 0.01, "{learned} per minute");
}

#[tokio::test(start_paused = true)]
async fn stated_room_gets_back_what_a_grant_did_not_use() {
    // 1,000 per second; the provider said 1,000 remain. A grant of 800 that used 100 leaves 900
    // of that room (and 200 more a fifth of a second later), not 200: another 800 goes then.
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(60_000), t0);
    // (Once 20,000 were stated, the provider's window is known to be 10 s or more.)
    b.observe(t0, None, Some(20_000), Some(s(60.0)));
    b.observe(t0, None, Some(1_000), Some(s(60.0)));
    b.take(t0, 800);
    b.settle(t0, 800, 100);
    assert_eq!(b.check(t0 + s(0.2), 800), None);
}

#[tokio::test(start_paused = true)]
async fn a_provider_that_states_a_minutes_room_keeps_a_minutes_margin() {
    // 2,500 per second. Until the provider states its room, the margin keeps the next ask's room
    // in 10 s' share (25,000); once it stated 150,000 (a token bucket holding the minute, or a
    // fixed minute), it enforces the figure over the minute, and the margin is a minute's share.
    let t0 = Instant::now();
    let mut b = Bucket::new(Rate::per_minute(150_000), t0);
    b.take(t0, 800);
    b.settle(t0, 800, 370);
    let ten = (370.0 + 800.0 * 370.0 / 24_200.0) / 2_500.0;
    assert!((b.check(t0, 800).unwrap().as_secs_f64() - ten).abs() < 1e-3);
    let later = t0 + s(5.0);
    b.observe(later, None, Some(150_000), None);
    b.take(later, 800);
    b.settle(later, 800, 370);
    let minute = (370.0 + 800.0 * 370.0 / 149_200.0) / 2_500.0;
    let wait = b.check(later, 800).unwrap().as_secs_f64();
    assert!((wait - minute).abs() < 1e-3, "{wait} vs {minute}");
}
