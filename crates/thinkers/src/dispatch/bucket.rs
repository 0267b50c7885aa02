//! One rate axis of a budget (tokens or requests), paced in virtual time.
//!
//! The axis keeps the time its grants are paid up to (`tat`). An ask is granted once `tat` is not
//! in the future (less the burst the catalog says the provider accepts), and a grant of `n` moves
//! `tat` on by `n / rate`: no burst builds up while the axis is idle, and grants leave one after
//! another at the rate. A request axis (asks of one, never settled) thus sends at the whole rate,
//! and never more than its share into any window whose share is a whole number of requests.
//!
//! **Settling.** A token grant settles to what it used: the unused units' time comes back (never
//! into the past: nothing is banked while idle), less a margin that keeps room, in a window's
//! share of the rate, for the next ask to arrive whole: providers charge an ask its reservation
//! when it arrives and its use once it ends, and may enforce a per-minute figure over short
//! windows. The window is [`ASSUMED_WINDOW`] until the provider states its room (`remaining`);
//! then it is how long the most room it ever stated lasts at the rate, from [`MIN_WINDOW`] to
//! [`LONGEST_WINDOW`] (a provider whose room holds a minute's figure enforces it over the minute).
//!
//! **The rate** is the lowest of: the catalog's figure (the user's ceiling: never exceeded), the
//! figure the provider states in its `limit` headers (a per-minute figure, as OpenAI and
//! Anthropic document them; it also paces an axis the catalog left out), and the rate learned
//! from throttles. A throttle (a pause: the provider answered 429) holds every grant until the
//! pause ends and no longer; if the axis was sending at its rate (busy), it also learns (once per
//! pause) what the provider really let through since the axis was last idle or throttled,
//! `units / (elapsed + the wait asked)`, when that is below the rate and the provider states no
//! limit in headers (whose figure is the truth), else [`THROTTLE_DECREASE`] of the rate; never
//! less than [`LARGEST_CUT`] of it. The learned rate climbs back by [`RECOVERY`] of itself per
//! second.
//!
//! **Headers.** A `remaining` count read while the axis is idle (our own grants do not explain
//! it) is room the provider has now: until its `reset`, an ask larger than that room (less our
//! grants since, plus the rate's refill) waits for the difference.
//!
//! Every wait is finite: durations are capped at [`MAX_WAIT`], instants added without overflow.

use std::time::Duration;

use tokio::time::Instant;

use super::budget::{Axis, AxisRate, RateSource};
use crate::job::Rate;

/// The window a provider is assumed to enforce a figure over, unless the catalog gives an
/// explicit burst.
pub const ASSUMED_WINDOW: Duration = Duration::from_secs(10);

/// A throttle that shows no lower rate went through cuts the rate to this share of itself.
pub const THROTTLE_DECREASE: f64 = 0.95;

/// How much of the learned rate comes back per second without a throttle.
pub const RECOVERY: f64 = 0.001;

/// The smallest share of the rate one throttle can leave.
pub const LARGEST_CUT: f64 = 0.1;

/// The longest window a provider is taken to enforce a figure over: the minute its figures are
/// stated for.
pub const LONGEST_WINDOW: Duration = Duration::from_secs(60);

/// The shortest window a provider is taken to enforce a figure over.
pub const MIN_WINDOW: Duration = Duration::from_secs(1);

/// The longest wait any pause or header can impose on an axis.
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// `at + d`, with `d` capped at [`MAX_WAIT`]: never overflows.
pub(crate) fn later(at: Instant, d: Duration) -> Instant {
    at.checked_add(d.min(MAX_WAIT)).unwrap_or(at)
}

fn secs(x: f64) -> Duration {
    Duration::try_from_secs_f64(x.max(0.0))
        .unwrap_or(MAX_WAIT)
        .min(MAX_WAIT)
}

/// One paced axis.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    /// The catalog's rate, `None` when the axis exists only because a provider stated one.
    rate: Option<Rate>,
    /// The per-second figure the provider states, when lower than the catalog's.
    stated: Option<f64>,
    /// The per-second rate learned from the last throttle, and when.
    learned: Option<(f64, Instant)>,
    /// Paid up to.
    tat: Instant,
    /// The end of the last pause: a pause ending before it learns nothing more.
    throttled_until: Instant,
    /// Units granted since the axis was last idle or throttled, and when that was.
    since: f64,
    since_at: Instant,
    /// The room the provider last said it had (`remaining`), when, and until when it counts
    /// (its `reset`); our grants since are taken out of it, the rate adds to it.
    room: Option<(f64, Instant, Instant)>,
    /// The most room the provider ever stated: its window holds at least that much.
    widest: Option<u64>,
    /// The provider states its limit in headers: a throttle then says nothing of the rate.
    heard: bool,
}

impl Bucket {
    /// An idle axis for the catalog's `rate`.
    pub(crate) fn new(rate: Rate, now: Instant) -> Self {
        Self::with(Some(rate), None, now)
    }

    /// An axis the catalog left out, at the provider's stated per-minute `figure`.
    pub(crate) fn stated(figure: u64, now: Instant) -> Self {
        Self::with(None, Some(figure as f64 / 60.0), now)
    }

    fn with(rate: Option<Rate>, stated: Option<f64>, now: Instant) -> Self {
        Self {
            rate,
            stated,
            learned: None,
            tat: now,
            throttled_until: now,
            since: 0.0,
            since_at: now,
            room: None,
            widest: None,
            heard: false,
        }
    }

    /// The catalog's rate (`None` for an axis the provider stated).
    pub(crate) fn rate(&self) -> Option<Rate> {
        self.rate
    }

    /// The catalog's per-second figure.
    fn catalog(&self) -> Option<f64> {
        self.rate
            .map(|r| r.amount as f64 / r.per.as_secs_f64().max(1e-9))
    }

    /// The rate before throttles: the catalog's figure, or the provider's if lower.
    fn top(&self) -> f64 {
        match (self.catalog(), self.stated) {
            (Some(c), Some(s)) => c.min(s),
            (Some(c), None) => c,
            (None, Some(s)) => s,
            (None, None) => f64::MAX,
        }
        .max(1e-9)
    }

    /// Units per second the axis grants at now.
    pub(crate) fn per_second(&self, now: Instant) -> f64 {
        let top = self.top();
        match self.learned {
            None => top,
            Some((r, at)) => {
                let climbed =
                    r * (1.0 + RECOVERY * now.saturating_duration_since(at).as_secs_f64());
                climbed.min(top)
            }
        }
    }

    /// The axis as it stands: its rate per minute now, the catalog's, and where the rate comes
    /// from.
    pub(crate) fn standing(&self, axis: Axis, now: Instant) -> AxisRate {
        let per_second = self.per_second(now);
        let source = if per_second < self.top() * (1.0 - 1e-9) {
            RateSource::Throttle
        } else if self.stated.is_some() {
            RateSource::Header
        } else {
            RateSource::Catalog
        };
        AxisRate {
            axis,
            per_minute: per_second * 60.0,
            catalog_per_minute: self.catalog().map(|c| c * 60.0),
            source,
        }
    }

    fn tolerance(&self) -> Duration {
        self.rate.and_then(|r| r.burst).unwrap_or(Duration::ZERO)
    }

    /// The shortest window the provider may enforce the rate over, in seconds: the assumed one
    /// until it states its room; then the time the most room it ever stated lasts at the rate
    /// (from [`MIN_WINDOW`] to [`LONGEST_WINDOW`]).
    fn window(&self, now: Instant) -> f64 {
        self.widest.map_or(ASSUMED_WINDOW.as_secs_f64(), |r| {
            (r as f64 / self.per_second(now))
                .clamp(MIN_WINDOW.as_secs_f64(), LONGEST_WINDOW.as_secs_f64())
        })
    }

    /// The room kept back after a grant of `reserved` that used `used`: enough that the next
    /// ask of the same size still fits in the window's share once this one settled (providers
    /// count an ask whole when it arrives and its use when it ends).
    fn margin(&self, reserved: u64, used: u64, now: Instant) -> f64 {
        if self.tolerance() > Duration::ZERO {
            return 0.0;
        }
        let share = self.per_second(now) * self.window(now);
        let (n, used) = (reserved as f64, used as f64);
        if n < share {
            n * used / (share - n)
        } else {
            0.0
        }
    }

    /// The provider's stated room now (what it said, less our grants since, plus the rate's
    /// refill) and until when it counts; `None` once its reset passed.
    fn room_now(&self, now: Instant) -> Option<(f64, Instant)> {
        let (room, at, until) = self.room?;
        let refill = self.per_second(now) * now.saturating_duration_since(at).as_secs_f64();
        (now < until).then_some((room + refill, until))
    }

    /// `None` when `need` can be taken now; otherwise how long until it can.
    pub(crate) fn check(&self, now: Instant, need: u64) -> Option<Duration> {
        let rate = self.per_second(now);
        // With a burst, an ask may run ahead of the rate by the burst less its own time.
        let ahead = self.tolerance().saturating_sub(secs(need as f64 / rate));
        let opens = self.tat.checked_sub(ahead).unwrap_or(now);
        let mut wait = opens.saturating_duration_since(now);
        if let Some((have, until)) = self.room_now(now)
            && have < need as f64
        {
            wait = wait.max(secs((need as f64 - have) / rate).min(until - now));
        }
        (!wait.is_zero()).then_some(wait)
    }

    /// Take `n` units (after a successful [`Self::check`]).
    pub(crate) fn take(&mut self, now: Instant, n: u64) {
        if self.tat < now {
            // Idle until now: what the provider lets through is counted from here.
            self.since = 0.0;
            self.since_at = now;
        }
        self.tat = later(self.tat.max(now), secs(n as f64 / self.per_second(now)));
        self.since += n as f64;
        if let Some((room, _, _)) = &mut self.room {
            *room -= n as f64;
        }
    }

    /// Adjust a grant of `reserved` units to `used`: the surplus's time goes back (never into
    /// the past: no burst is banked), an overrun's time is taken.
    pub(crate) fn settle(&mut self, now: Instant, reserved: u64, used: u64) {
        let rate = self.per_second(now);
        let owed = used as f64 + self.margin(reserved, used, now) - reserved as f64;
        if owed > 0.0 {
            self.tat = later(self.tat.max(now), secs(owed / rate));
        } else {
            let back = secs(-owed / rate);
            self.tat = self.tat.checked_sub(back).unwrap_or(now).max(now);
        }
        self.since = (self.since + used as f64 - reserved as f64).max(0.0);
        if let Some((room, _, _)) = &mut self.room {
            *room += reserved as f64 - used as f64;
        }
    }

    /// The provider throttled: hold every grant until `until`, and, if the axis was sending at
    /// its rate (the one the provider refused), learn the rate (once per pause).
    pub(crate) fn pause(&mut self, now: Instant, until: Instant) {
        let busy = self.tat >= now;
        self.tat = self.tat.max(until);
        if busy && now >= self.throttled_until {
            let before = self.per_second(now);
            let span = until.saturating_duration_since(self.since_at).as_secs_f64();
            let through = if span > 0.0 {
                self.since / span
            } else {
                before
            };
            // What went through is the rate when it is below ours; otherwise (a provider's
            // burst let more through before it refused) ours was still too high: cut it.
            let learned = if through < before && !self.heard {
                through
            } else {
                before * THROTTLE_DECREASE
            };
            let learned = learned.max(before * LARGEST_CUT);
            self.learned = Some((learned, now));
            self.since = 0.0;
            self.since_at = now;
        }
        self.throttled_until = self.throttled_until.max(until);
    }

    /// Learn from a provider's headers: `limit` (its per-minute figure), `remaining` (what it
    /// admits now) and `reset` (when it is whole again).
    pub(crate) fn observe(
        &mut self,
        now: Instant,
        limit: Option<u64>,
        remaining: Option<u64>,
        reset: Option<Duration>,
    ) {
        if let Some(limit) = limit.filter(|l| *l > 0) {
            self.heard = true;
            let stated = limit as f64 / 60.0;
            self.stated = self.catalog().is_none_or(|c| stated < c).then_some(stated);
        }
        if let Some(remaining) = remaining {
            self.widest = Some(self.widest.map_or(remaining, |w| w.max(remaining)));
            // A busy axis expects little room (its own grants fill the window); an idle one
            // that finds little, shares the limit with someone else.
            if self.tat <= now {
                let until = later(now, reset.unwrap_or(ASSUMED_WINDOW));
                self.room = Some((remaining as f64, now, until));
            }
        }
    }

    /// The share of the burst (or of the assumed window) not yet paid for, and not more than the
    /// provider's stated room: 0 while a pause holds the axis.
    pub(crate) fn headroom(&self, now: Instant) -> f64 {
        let ahead = self.tat.saturating_duration_since(now).as_secs_f64();
        let span = self.tolerance().max(ASSUMED_WINDOW).as_secs_f64();
        let mut free = 1.0 - ahead / span;
        if let Some((have, _)) = self.room_now(now) {
            free = free.min(have / (self.per_second(now) * span));
        }
        free.clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests;
