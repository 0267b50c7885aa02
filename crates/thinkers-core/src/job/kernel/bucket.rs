//! One rate axis of a budget (tokens or requests), paced in virtual time, with a ledger of what
//! the provider still counts against its window.
//!
//! **Pacing.** The axis keeps the time its grants are paid up to (`tat`). An ask is granted once
//! `tat` is not in the future (less the burst the catalog says the provider accepts), and a grant
//! moves `tat` on by what it is expected to spend at the rate: a request axis (asks of one, never
//! settled) thus sends at the whole rate, and never more than its share into any window whose
//! share is a whole number of requests. A token grant is expected to spend the share of its
//! reservation that token grants on the axis have used (smoothed over settles; the whole
//! reservation until the first settles), and its settle pays the difference to what it really
//! used. On an axis without a ledger time never goes back into the past: nothing is banked while
//! idle. On a ledgered axis (below) a grant's time runs on from where the last one's ended as
//! long as that is within the grant's own time of now, so a waiter woken late (a timer's tick, a
//! round trip to a shared store) costs the rate nothing: at most one grant beyond the rate goes
//! in any stretch, and the ledger, not the pacing, holds the provider's window.
//!
//! **The ledger (token axes)** of what the provider still counts is in `bucket/ledger.rs`.
//!
//! **The rate** is the lowest of: the catalog's figure (the user's ceiling: never exceeded), the
//! figure the provider states in its `limit` headers (a per-minute figure, as OpenAI and
//! Anthropic document them; it also paces an axis the catalog left out), and the rate learned
//! from throttles. A throttle (a pause: the provider answered 429) holds every grant until the
//! pause ends and no longer; if the axis was sending at its rate (busy), it also learns (once per
//! pause) what the provider really let through since the axis was last idle or a pause ended,
//! `units / (elapsed + the wait asked)`, when that is below the rate and the provider states no
//! limit in headers (whose figure is the truth), else the rate; it paces at [`THROTTLE_DECREASE`]
//! of that (a margin below what the provider refused), never less than [`LARGEST_CUT`] of the
//! rate. The learned rate climbs back by [`RECOVERY`] of itself per second.
//!
//! **Headers.** A `remaining` count read while the axis is idle (our own grants do not explain
//! it) is room the provider has now: until its `reset`, an ask larger than that room (less our
//! grants since, plus the rate's refill) waits for the difference.
//!
//! Every wait is finite: durations are capped at [`MAX_WAIT`], instants added without overflow.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::budget::{Axis, AxisRate, RateSource};
use crate::job::Rate;
use ledger::{Grant, UNSEEN};

/// The window a provider is assumed to enforce a figure over until it states its room or reset.
pub const ASSUMED_WINDOW: Duration = Duration::from_secs(10);

/// The share of the rate a throttle shows (what went through, or the rate the provider refused)
/// that the axis paces at after it.
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

/// How much of the smoothed share of a reservation that grants use each settle moves it.
pub const USE_SMOOTHING: f64 = 0.125;

/// The longest wait any pause or header can impose on an axis.
pub const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

/// `at + d`, with `d` capped at [`MAX_WAIT`]: never overflows.
pub fn later(at: Instant, d: Duration) -> Instant {
    at.checked_add(d.min(MAX_WAIT)).unwrap_or(at)
}

/// `at - d`, or `at` where that is before the clock's origin.
fn earlier(at: Instant, d: Duration) -> Instant {
    at.checked_sub(d).unwrap_or(at)
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
    /// Units granted since the axis was last idle or a pause ended, and when that was.
    since: f64,
    since_at: Instant,
    /// The room the provider last said it had (`remaining`), when, and until when it counts
    /// (its `reset`); our grants since are taken out of it, the rate adds to it.
    room: Option<(f64, Instant, Instant)>,
    /// The most room the provider ever stated: its window holds at least that much.
    widest: Option<u64>,
    /// The longest reset the provider ever stated: its window is at least that long.
    longest_reset: Option<Duration>,
    /// The least of a stated reset plus the age of our latest grant older than the quickest
    /// answer: the provider's latest charge is no older than that grant (a younger one may not
    /// have reached it yet), so its window is no longer than that.
    reach: Option<Duration>,
    /// The quickest a grant on the axis was answered (settled).
    quickest: Option<Duration>,
    /// The provider states its limit in headers: a throttle then says nothing of the rate.
    heard: bool,
    /// A token axis: its grants settle, and it keeps them in `ledger`.
    tokens: bool,
    /// The axis's own grants of the last [`LONGEST_WINDOW`], oldest first (kept that long
    /// whatever the window: a window learned longer later still counts them).
    ledger: VecDeque<Grant>,
    /// The smoothed share of a reservation that settled grants used (`None` until one settles).
    use_share: Option<f64>,
}

impl Bucket {
    /// An idle axis for the catalog's `rate`; `tokens` for a token axis (its grants settle).
    pub(crate) fn new(rate: Rate, tokens: bool, now: Instant) -> Self {
        Self::with(Some(rate), None, tokens, now)
    }

    /// An axis the catalog left out, at the provider's stated per-minute `figure`.
    pub(crate) fn stated(figure: u64, tokens: bool, now: Instant) -> Self {
        Self::with(None, Some(figure as f64 / 60.0), tokens, now)
    }

    /// An axis neither the catalog nor a provider gave a figure (`tokens` for a token axis), at
    /// [`THROTTLE_DECREASE`] of `per_second` (the rate a throttle showed went through), held until
    /// the throttle's pause ends at `until`. It climbs back as any learned rate does.
    pub(crate) fn learned(per_second: f64, tokens: bool, now: Instant, until: Instant) -> Self {
        let mut b = Self::with(None, None, tokens, now);
        b.learned = Some(((per_second * THROTTLE_DECREASE).max(1e-9), now));
        b.tat = until;
        b.throttled_until = until;
        b.since_at = until;
        b
    }

    /// Set the rate learned from the last throttle to [`THROTTLE_DECREASE`] of `per_second` (what
    /// it showed went through, recounted), keeping when it was learned.
    pub(crate) fn relearn(&mut self, per_second: f64) {
        if let Some((r, _)) = &mut self.learned {
            *r = (per_second * THROTTLE_DECREASE).max(1e-9);
        }
    }

    fn with(rate: Option<Rate>, stated: Option<f64>, tokens: bool, now: Instant) -> Self {
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
            longest_reset: None,
            reach: None,
            quickest: None,
            heard: false,
            tokens,
            ledger: VecDeque::new(),
            use_share: None,
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

    /// What a grant of `n` is expected to spend: its whole reservation on an axis with a burst
    /// (a bucket charges it on arrival and gives the rest back at the end).
    fn expected(&self, n: u64) -> f64 {
        if !self.ledgered() {
            return n as f64;
        }
        n as f64 * self.use_share.unwrap_or(1.0)
    }

    /// The provider's stated room now (what it said, less our grants since, plus the rate's
    /// refill) and until when it counts; `None` once its reset passed.
    fn room_now(&self, now: Instant) -> Option<(f64, Instant)> {
        let (room, at, until) = self.room?;
        let refill = self.per_second(now) * now.saturating_duration_since(at).as_secs_f64();
        (now < until).then_some((room + refill, until))
    }

    /// `None` when `need` can be taken now; otherwise how long until it can.
    pub(crate) fn check(&mut self, now: Instant, need: u64) -> Option<Duration> {
        if self.ledgered() {
            self.expire(now);
        }
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
        if self.ledgered()
            && let Some(w) = self.ledger_wait(now, need)
        {
            wait = wait.max(w);
        }
        (!wait.is_zero()).then_some(wait)
    }

    /// Take `n` units for lease `id` (after a successful [`Self::check`]).
    pub(crate) fn take(&mut self, now: Instant, id: u64, n: u64) {
        let paced = self.expected(n);
        let step = secs(paced / self.per_second(now));
        // On a ledgered axis a grant's time runs on from where the last one's ended, as long as
        // that reaches now: a waiter woken a little late costs the rate nothing (the ledger, not
        // the pacing, holds the window), and at most this one grant's time is banked.
        let bank = if self.ledgered() {
            step
        } else {
            Duration::ZERO
        };
        let from = self.tat.max(earlier(now, bank));
        if self.tat < earlier(now, step) {
            // Idle until now (not just woken a little late): what the provider lets through is
            // counted from here.
            self.since = 0.0;
            self.since_at = now;
        }
        if self.ledgered() {
            self.ledger.push_back(Grant {
                at: now,
                id,
                counts: n,
                paced,
                settled: None,
                short: 0.0,
            });
        }
        self.tat = later(from, step);
        self.since += n as f64;
        if let Some((room, _, _)) = &mut self.room {
            *room -= n as f64;
        }
    }

    /// Adjust lease `id`'s grant of `reserved` units to `used`: the ledger counts its use from
    /// now on; what the pacing charged it beyond its use goes back (no further into the past
    /// than [`Self::take`] banks), an overrun's time is taken. A grant that used nothing (a
    /// throttled attempt) teaches nothing of how much grants use.
    /// `short` is how many tokens the provider counted beyond the reservation when the ask
    /// arrived (its input count above ours).
    pub(crate) fn settle(&mut self, now: Instant, id: u64, reserved: u64, used: u64, short: u64) {
        let rate = self.per_second(now);
        let kept = self
            .ledger
            .iter_mut()
            .rev()
            .find(|g| g.id == id && id != UNSEEN);
        let (paced, banks) = match kept {
            Some(g) => {
                g.counts = used;
                g.settled = Some(now);
                g.short = short as f64 / reserved.max(1) as f64;
                let took = now.saturating_duration_since(g.at);
                self.quickest = Some(self.quickest.map_or(took, |q| q.min(took)));
                (g.paced, true)
            }
            // A grant the ledger does not hold (an axis without one, a grant taken before the
            // axis existed or out longer than the ledger keeps) banks nothing.
            None => (self.expected(reserved), false),
        };
        if self.tokens && used > 0 && reserved > 0 {
            let share = (used as f64 / reserved as f64).min(1.0);
            self.use_share = Some(
                self.use_share
                    .map_or(share, |s| s + (share - s) * USE_SMOOTHING),
            );
        }
        let owed = used as f64 - paced;
        // Never further into the past than a grant's time may be banked (see `take`).
        let floor = earlier(
            now,
            if banks {
                secs(paced / rate)
            } else {
                Duration::ZERO
            },
        );
        if owed > 0.0 {
            self.tat = later(self.tat.max(floor), secs(owed / rate));
        } else {
            let back = secs(-owed / rate);
            self.tat = self.tat.checked_sub(back).unwrap_or(floor).max(floor);
        }
        self.since = (self.since + used as f64 - reserved as f64).max(0.0);
        if let Some((room, _, _)) = &mut self.room {
            *room += reserved as f64 - used as f64;
        }
    }

    /// Lease `id` ended without settling this axis (its call failed or was dropped): the
    /// provider may have charged its reservation, so the ledger counts it whole for a window from
    /// now.
    pub(crate) fn release(&mut self, now: Instant, id: u64) {
        if let Some(g) = self
            .ledger
            .iter_mut()
            .rev()
            .find(|g| g.id == id && g.settled.is_none())
        {
            g.settled = Some(now);
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
            // What went through, where it is below ours, is the provider's rate; otherwise (a
            // provider's burst let more through before it refused) ours was still too high. The
            // axis keeps a margin below either, so its climb back takes a while to refuse again.
            let basis = if through < before && !self.heard {
                through
            } else {
                before
            };
            let learned = (basis * THROTTLE_DECREASE).max(before * LARGEST_CUT);
            self.learned = Some((learned, now));
        }
        // Nothing goes through while the pause holds the axis: what does is counted from its end.
        if until > self.since_at {
            self.since = 0.0;
            self.since_at = until;
        }
        self.throttled_until = self.throttled_until.max(until);
    }

    /// Learn from a provider's headers: `limit` (its per-minute figure), `remaining` (what it
    /// admits now) and `reset` (when it is whole again, as stated; up to `slack` later).
    pub(crate) fn observe(
        &mut self,
        now: Instant,
        limit: Option<u64>,
        remaining: Option<u64>,
        reset: Option<Duration>,
        slack: Duration,
    ) {
        if let Some(limit) = limit.filter(|l| *l > 0) {
            self.heard = true;
            let stated = limit as f64 / 60.0;
            self.stated = self.catalog().is_none_or(|c| stated < c).then_some(stated);
        }
        if let Some(reset) = reset {
            self.longest_reset = Some(self.longest_reset.map_or(reset, |r| r.max(reset)));
            // A reset of zero says the window holds nothing: it bounds nothing.
            let arrived = self
                .quickest
                .and_then(|q| now.checked_sub(q))
                .map(|cut| self.ledger.partition_point(|g| g.at <= cut));
            let last = arrived.and_then(|i| {
                let mut older = self.ledger.range(..i).rev();
                older.find(|g| g.id != UNSEEN).map(|g| g.at)
            });
            if let Some(last) = last.filter(|_| !reset.is_zero()) {
                let reach = reset
                    .saturating_add(slack)
                    .saturating_add(now.saturating_duration_since(last));
                self.reach = Some(self.reach.map_or(reach, |r| r.min(reach)));
            }
        }
        if let Some(remaining) = remaining {
            self.widest = Some(self.widest.map_or(remaining, |w| w.max(remaining)));
            // A busy axis expects little room (its own grants fill the window); an idle one
            // that finds little, shares the limit with someone else.
            if self.tat <= now {
                let until = later(now, reset.unwrap_or(ASSUMED_WINDOW));
                self.room = Some((remaining as f64, now, until));
            }
            self.count_unseen(now, remaining);
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
        if self.ledgered() {
            let share = self.per_second(now) * self.window(now);
            free = free.min(1.0 - self.held(now) / share);
        }
        free.clamp(0.0, 1.0)
    }
}

mod ledger;
#[cfg(test)]
mod tests;
