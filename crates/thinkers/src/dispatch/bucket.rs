//! One rate axis of a budget as a token bucket (tokens or requests).
//!
//! The bucket holds at most `capacity` units and refills continuously. A grant takes its units
//! out; a settlement puts back what was reserved and not used; a throttle pause empties it and
//! holds the refill until the pause ends, so waiters come out at the refill rate afterwards, not
//! all at once.
//!
//! **Sizing.** A figure of `amount` per `per` is spent as the rate `ρ = amount / per`.
//!
//! * With the default burst (no `burst` in the [`Rate`]), the bucket assumes the provider may
//!   enforce the figure over windows as short as [`ASSUMED_WINDOW`] (10 s; providers commonly
//!   enforce per-minute limits over shorter periods), or the figure's own period if shorter. It holds [`BURST_SHARE`] (4 %) of that
//!   window's share of the figure and refills at `ρ − capacity / window` (96 % of ρ), so that for
//!   every interval `T` at least one window long, grants ≤ `capacity + refill·T` ≤ `ρ·T`: no
//!   window of that length ever sees more than its share of the figure, whether the provider
//!   keeps a sliding window, a fixed one or a bucket.
//! * With an explicit burst (the catalog's `burst_seconds`), the provider is taken to accept a
//!   burst of that size: the capacity is `ρ·burst` and the refill is the whole `ρ`.
//!
//! **Learning.** A provider's `limit` header smaller than the bucket's window share (or, with an
//! explicit burst, smaller than the burst) says it enforces the figure over a shorter window
//! `limit / ρ`: the window shrinks to that (never below 1 s), the capacity to [`BURST_SHARE`] of
//! the header's limit, and the refill follows the formula above. A `remaining` header below the
//! bucket's level lowers the level to it (another client, or a stricter provider, spent it). A
//! throttle (a pause) multiplies the refill by [`THROTTLE_DECREASE`] (at most once per pause,
//! never below [`FACTOR_FLOOR`]); the factor climbs back by [`FACTOR_RECOVERY`] per second.
//!
//! An ask larger than the capacity (but within the figure) grows the bucket to its size, and the
//! refill pays for the larger bucket as above for a window after it: a burst of one large ask
//! costs what a burst of many small ones does. (The window before the ask was refilled for the
//! smaller bucket, so a window holding the first of a run of larger asks may see the difference
//! once.) The growth stops at
//! half the window's share (the refill never falls below half the rate); a larger ask is granted
//! from a full bucket and leaves it in debt, repaid at the refill rate: over any interval `T`,
//! grants ≤ `max(capacity, largest ask) + refill·T`.

use std::time::Duration;

use tokio::time::Instant;

use crate::job::Rate;

/// The shortest window a provider is assumed to enforce a figure over, unless a header says
/// shorter or the catalog gives an explicit burst.
pub const ASSUMED_WINDOW: Duration = Duration::from_secs(10);

/// The default capacity as a share of the figure over the window; the refill gives up as much.
pub const BURST_SHARE: f64 = 0.04;

/// The refill factor after a throttle is the factor before it times this.
pub const THROTTLE_DECREASE: f64 = 0.8;

/// The lowest refill factor throttles can bring a bucket to.
pub const FACTOR_FLOOR: f64 = 0.25;

/// How much of the refill factor comes back per second without a throttle (1 % per 10 s).
pub const FACTOR_RECOVERY: f64 = 0.001;

/// The shortest window a limit header can teach.
const MIN_WINDOW: Duration = Duration::from_secs(1);

/// One bucket.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    rate: Rate,
    /// The shortest window the provider is believed to enforce the figure over; `None` with an
    /// explicit burst the provider accepts.
    window: Option<Duration>,
    level: f64,
    /// When `level` was computed; in the future during a pause (nothing refills before it).
    at: Instant,
    factor: f64,
    factor_at: Instant,
    /// The end of the last pause that lowered the factor: a pause ending before it does not
    /// lower it again (several calls throttled by one event).
    throttled_until: Instant,
    /// The largest ask of the last window, and when it was seen.
    largest: u64,
    largest_at: Instant,
    /// Its level never moved but by refilling: a bucket grown by an ask starts full.
    fresh: bool,
}

impl Bucket {
    /// A full bucket for `rate`.
    pub(crate) fn new(rate: Rate, now: Instant) -> Self {
        let mut b = Self {
            rate,
            window: rate.burst.is_none().then_some(ASSUMED_WINDOW.min(rate.per)),
            level: 0.0,
            at: now,
            factor: 1.0,
            factor_at: now,
            throttled_until: now,
            largest: 0,
            largest_at: now,
            fresh: true,
        };
        b.level = b.capacity();
        b
    }

    /// The configured rate.
    pub(crate) fn rate(&self) -> Rate {
        self.rate
    }

    /// The figure's rate per second.
    fn per_second(&self) -> f64 {
        self.rate.amount as f64 / self.rate.per.as_secs_f64().max(1e-9)
    }

    /// The most the bucket holds: its burst, or the largest ask it has seen (up to half the
    /// window's share).
    pub(crate) fn capacity(&self) -> f64 {
        let rho = self.per_second();
        let share = |w: Duration| BURST_SHARE * rho * w.as_secs_f64();
        let burst = match (self.rate.burst, self.window) {
            (Some(b), None) => rho * b.as_secs_f64(),
            (Some(b), Some(w)) => (rho * b.as_secs_f64()).min(share(w)),
            (None, w) => share(w.unwrap_or(ASSUMED_WINDOW)),
        };
        let growth = self
            .window
            .map_or(self.rate.amount as f64, |w| rho * w.as_secs_f64() / 2.0);
        burst
            .max((self.largest as f64).min(growth))
            .min(self.rate.amount as f64)
    }

    fn factor(&self, now: Instant) -> f64 {
        let since = now.saturating_duration_since(self.factor_at).as_secs_f64();
        (self.factor + FACTOR_RECOVERY * since).min(1.0)
    }

    /// Units per second the bucket refills at now.
    pub(crate) fn refill(&self, now: Instant) -> f64 {
        let rho = self.per_second();
        let paid = self
            .window
            .map_or(0.0, |w| self.capacity() / w.as_secs_f64());
        (self.factor(now) * (rho - paid)).max(rho * 1e-6)
    }

    /// Bring the level up to `now`.
    fn advance(&mut self, now: Instant) {
        if now > self.at {
            let dt = (now - self.at).as_secs_f64();
            self.level = (self.level + self.refill(now) * dt).min(self.capacity());
            self.at = now;
        }
    }

    /// `None` when `need` can be taken now; otherwise how long until it can.
    pub(crate) fn check(&mut self, now: Instant, need: u64) -> Option<Duration> {
        self.advance(now);
        let window = self.window.unwrap_or(ASSUMED_WINDOW);
        if need >= self.largest || now.saturating_duration_since(self.largest_at) > window {
            // A larger bucket (paid for by the refill for a window after the ask); it starts no
            // fuller than it was, unless nothing was ever taken from it.
            self.largest = need;
            self.largest_at = now;
            if self.fresh {
                self.level = self.capacity();
            }
            self.level = self.level.min(self.capacity());
        }
        // An ask larger than the bucket is granted from a full one.
        let need = (need as f64).min(self.capacity());
        if self.at <= now && self.level >= need {
            return None;
        }
        let hold = self.at.saturating_duration_since(now);
        let short = (need - self.level).max(0.0) / self.refill(now);
        // Rounded up, so the waiter finds the units there when it wakes.
        Some(hold + Duration::from_secs_f64(short) + Duration::from_micros(1))
    }

    /// Take `n` units (after a successful [`Self::check`]).
    pub(crate) fn take(&mut self, n: u64) {
        self.level -= n as f64;
        self.fresh = false;
    }

    /// Adjust a grant of `reserved` units to `used`: the surplus goes back, an overrun is taken.
    pub(crate) fn settle(&mut self, now: Instant, reserved: u64, used: u64) {
        self.advance(now);
        self.level = (self.level + reserved as f64 - used as f64).min(self.capacity());
        self.fresh = false;
    }

    /// A throttle pause until `until`: empty the bucket, refill nothing before `until`, and lower
    /// the refill factor (once per pause).
    pub(crate) fn pause(&mut self, now: Instant, until: Instant) {
        self.advance(now);
        self.level = self.level.min(0.0);
        self.at = self.at.max(until);
        self.fresh = false;
        if now >= self.throttled_until {
            self.factor = (self.factor(now) * THROTTLE_DECREASE).max(FACTOR_FLOOR);
            self.factor_at = now;
        }
        self.throttled_until = self.throttled_until.max(until);
    }

    /// Learn from a provider's headers: `limit` (its figure or its shorter window's size) and
    /// `remaining` (its room now).
    pub(crate) fn observe(&mut self, now: Instant, limit: Option<u64>, remaining: Option<u64>) {
        self.advance(now);
        if let Some(limit) = limit.filter(|l| *l > 0) {
            let rho = self.per_second();
            let limit = limit as f64;
            let ours = match (self.rate.burst, self.window) {
                (_, Some(w)) => rho * w.as_secs_f64(),
                (Some(b), None) => rho * b.as_secs_f64(),
                (None, None) => rho * ASSUMED_WINDOW.as_secs_f64(),
            };
            if limit < ours {
                let w = Duration::from_secs_f64(limit / rho).max(MIN_WINDOW);
                self.window = Some(w);
                self.level = self.level.min(self.capacity());
            }
        }
        if let Some(r) = remaining
            && (r as f64) < self.level
        {
            self.level = r as f64;
            self.fresh = false;
        }
    }

    /// The fraction of the capacity free now (0 in debt or during a pause).
    pub(crate) fn headroom(&mut self, now: Instant) -> f64 {
        self.advance(now);
        if self.at > now {
            return 0.0;
        }
        (self.level / self.capacity().max(1e-9)).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[tokio::test(start_paused = true)]
    async fn the_default_bucket_holds_four_percent_of_ten_seconds_and_refills_at_96_percent() {
        let now = Instant::now();
        // 150,000 per minute: 2,500 per second; 25,000 per 10 s.
        let mut b = Bucket::new(Rate::per_minute(150_000), now);
        assert!((b.capacity() - 1_000.0).abs() < 1e-6);
        assert!((b.refill(now) - 2_400.0).abs() < 1e-6);
        assert_eq!(b.check(now, 1_000), None);
        b.take(1_000);
        let wait = b.check(now, 480).unwrap();
        assert!((wait.as_secs_f64() - 0.2).abs() < 1e-3, "{wait:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_explicit_burst_refills_at_the_whole_rate() {
        let now = Instant::now();
        let mut b = Bucket::new(Rate::per_minute(6_000).with_burst(secs(10.0)), now);
        assert!((b.capacity() - 1_000.0).abs() < 1e-6);
        assert!((b.refill(now) - 100.0).abs() < 1e-6);
        assert_eq!(b.check(now, 1_000), None);
        b.take(1_000);
        assert!(b.check(now, 100).is_some());
        assert_eq!(b.check(now + secs(1.0), 100), None);
    }

    #[tokio::test(start_paused = true)]
    async fn an_ask_larger_than_the_bucket_grows_it_and_slows_the_refill() {
        let now = Instant::now();
        // 6,000 per minute: a bucket of 40 refilling at 96 per second.
        let mut b = Bucket::new(Rate::per_minute(6_000), now);
        assert!((b.capacity() - 40.0).abs() < 1e-6);
        assert_eq!(b.check(now, 40), None);
        b.take(40);
        // An ask of 200 waits for the bucket to hold it, and the refill pays for the larger
        // bucket: 100 − 200 / 10 = 80 per second.
        let wait = b.check(now, 200).unwrap();
        assert!((b.capacity() - 200.0).abs() < 1e-6);
        assert!((b.refill(now) - 80.0).abs() < 1e-6);
        assert!((wait.as_secs_f64() - 2.5).abs() < 1e-3, "{wait:?}");
        assert_eq!(b.check(now + wait, 200), None);
        // Past half the window's share (500), an ask takes a full bucket into debt.
        let later = now + wait;
        b.take(200);
        let wait = b.check(later, 900).unwrap();
        assert!((b.capacity() - 500.0).abs() < 1e-6);
        assert!((wait.as_secs_f64() - 10.0).abs() < 1e-3, "{wait:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_empties_the_bucket_and_holds_the_refill() {
        let now = Instant::now();
        let mut b = Bucket::new(Rate::per_minute(6_000).with_burst(secs(10.0)), now);
        b.pause(now, now + secs(5.0));
        let refill = b.refill(now);
        assert!((refill - 80.0).abs() < 1e-6, "the factor fell by a fifth");
        let wait = b.check(now, 80).unwrap();
        assert!((wait.as_secs_f64() - 6.0).abs() < 1e-3, "{wait:?}");
        // A second throttle of the same pause does not lower it again.
        b.pause(now + secs(1.0), now + secs(5.0));
        assert!(b.refill(now + secs(1.0)) > 80.0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_shorter_window_in_the_limit_header_is_learned() {
        let now = Instant::now();
        // The catalog says 300,000 per minute; the provider says its limit is 25,000 (per 5 s
        // at the catalog's rate).
        let mut b = Bucket::new(Rate::per_minute(300_000), now);
        b.observe(now, Some(25_000), Some(20_000));
        assert!((b.capacity() - 1_000.0).abs() < 1e-6);
        assert!((b.refill(now) - (5_000.0 - 200.0)).abs() < 1e-6);
        // The per-minute figure itself teaches nothing.
        let mut b = Bucket::new(Rate::per_minute(300_000), now);
        b.observe(now, Some(300_000), None);
        assert!((b.capacity() - 2_000.0).abs() < 1e-6);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lower_remaining_lowers_the_level() {
        let now = Instant::now();
        let mut b = Bucket::new(Rate::per_minute(6_000).with_burst(secs(10.0)), now);
        b.observe(now, None, Some(300));
        assert!(b.check(now, 301).is_some());
        assert_eq!(b.check(now, 300), None);
        b.observe(now, None, Some(5_000));
        assert!(
            b.check(now, 301).is_some(),
            "a higher remaining raises nothing"
        );
    }
}
