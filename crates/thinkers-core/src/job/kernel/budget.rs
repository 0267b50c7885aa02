//! Admission budgets: limits per named budget and the store that keeps their accounting.
//!
//! A budget has up to three limits: a token rate, a request rate and a concurrency. Each rate is
//! an axis paced in virtual time ([`super::bucket`] says how, what it guarantees and what it
//! learns): a per-minute figure is spent as a rate, never as a whole minute let out at once.
//!
//! [`BudgetStore`] is the seam for a shared, multi-process implementation (Redis); the in-process
//! default is [`MemoryBudgets`]. The waiting and FIFO ordering live above the store, in
//! [`super::Admission`], so every store gets them.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;

use tokio::time::Instant;

use super::bucket::{Bucket, later};
use crate::Result;
use crate::job::{Ask, Limits, Rate, SeatUse};

/// A granted reservation on one budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The budget.
    pub budget: Arc<str>,
    /// The store's id for the reservation.
    pub id: u64,
    /// Tokens reserved (input and output together).
    pub tokens: u64,
    /// Of those, input tokens.
    pub input_tokens: u64,
    /// Of those, output tokens (the call's output budget).
    pub output_tokens: u64,
    /// Concurrency units held.
    pub slots: u32,
}

/// The answer to a reservation attempt.
#[derive(Debug)]
pub enum Reservation {
    /// Granted.
    Granted(Lease),
    /// Does not fit now. `Some(d)`: it may fit after `d` (a bucket refills, a pause ends);
    /// `None`: it fits only after a release (a concurrency slot).
    Wait(Option<Duration>),
    /// Can never fit (it asks for more than the whole figure); the reason names the numbers.
    Never(String),
}

/// The paced rate axes a budget may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Axis {
    /// Tokens, input and output together (`tpm`).
    Tokens,
    /// Input tokens (`itpm`).
    InputTokens,
    /// Output tokens (`otpm`).
    OutputTokens,
    /// Requests (`rpm`).
    Requests,
}

impl Axis {
    /// Every axis, in a fixed order (the order of a store's per-axis arrays).
    pub const ALL: [Self; 4] = [
        Self::Tokens,
        Self::InputTokens,
        Self::OutputTokens,
        Self::Requests,
    ];

    /// The catalog's name for the axis's per-minute figure.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tokens => "tpm",
            Self::InputTokens => "itpm",
            Self::OutputTokens => "otpm",
            Self::Requests => "rpm",
        }
    }

    /// The axis's rate in `limits`.
    pub fn rate(self, limits: &Limits) -> Option<Rate> {
        match self {
            Self::Tokens => limits.tokens,
            Self::InputTokens => limits.input_tokens,
            Self::OutputTokens => limits.output_tokens,
            Self::Requests => limits.requests,
        }
    }

    /// What `ask` takes from the axis.
    pub fn asked(self, ask: &Ask) -> u64 {
        match self {
            Self::Tokens => ask.tokens,
            Self::InputTokens => ask.input_tokens,
            Self::OutputTokens => ask.output_tokens,
            Self::Requests => u64::from(ask.requests),
        }
    }

    /// What `lease` reserved on the axis, and what of it `used` really spent (`None` for the
    /// request axis: a request is spent whole).
    pub fn settled(self, lease: &Lease, used: SeatUse) -> Option<(u64, u64)> {
        match self {
            Self::Tokens => Some((lease.tokens, used.total())),
            Self::InputTokens => Some((lease.input_tokens, used.input)),
            Self::OutputTokens => Some((lease.output_tokens, used.output)),
            Self::Requests => None,
        }
    }

    /// How many tokens more than `lease` reserved on the axis the provider counted when the ask
    /// arrived: its count of the input above ours (the output it counts is the output budget
    /// asked, which the lease reserved whole).
    pub fn short(self, lease: &Lease, used: SeatUse) -> u64 {
        match self {
            Self::Tokens | Self::InputTokens => used.input.saturating_sub(lease.input_tokens),
            Self::OutputTokens | Self::Requests => 0,
        }
    }

    /// The axis's part of `obs`.
    pub fn observed(self, obs: &RateObservation) -> AxisObservation {
        match self {
            Self::Tokens => obs.tokens,
            Self::InputTokens => obs.input_tokens,
            Self::OutputTokens => obs.output_tokens,
            Self::Requests => obs.requests,
        }
    }

    /// Whether grants on the axis settle to what they used (the token axes; a request is spent
    /// whole).
    pub fn settles(self) -> bool {
        self != Self::Requests
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What a provider said about one axis in its rate-limit headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AxisObservation {
    /// The limit it states: its per-minute figure (the meaning OpenAI's and Anthropic's
    /// `*-limit` headers document).
    pub limit: Option<u64>,
    /// What remains now.
    pub remaining: Option<u64>,
    /// When the allowance is fully replenished, as stated (rounded down to the header's
    /// precision).
    pub reset: Option<Duration>,
    /// How much later than `reset` the allowance may really be whole: the precision the header
    /// states it to (a second for an RFC 3339 timestamp in whole seconds).
    pub reset_slack: Duration,
}

impl AxisObservation {
    /// Whether the provider said nothing of the axis.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// What a provider said about a budget in its rate-limit headers, per axis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateObservation {
    /// Tokens, input and output together (OpenAI's `x-ratelimit-*-tokens`).
    pub tokens: AxisObservation,
    /// Input tokens (Anthropic's `anthropic-ratelimit-input-tokens-*`).
    pub input_tokens: AxisObservation,
    /// Output tokens (Anthropic's `anthropic-ratelimit-output-tokens-*`).
    pub output_tokens: AxisObservation,
    /// Requests.
    pub requests: AxisObservation,
}

impl RateObservation {
    /// Every axis's part, in [`Axis::ALL`]'s order.
    pub fn axes(&self) -> [AxisObservation; 4] {
        Axis::ALL.map(|a| a.observed(self))
    }
}

/// Where an axis's rate comes from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateSource {
    /// The catalog's figure.
    Catalog,
    /// A figure the provider stated in its headers (lower than the catalog's, or where the
    /// catalog has none).
    Header,
    /// A rate learned from the provider's throttles (429s), below both.
    Throttle,
}

/// One paced axis of a budget as it stands now.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct AxisRate {
    /// The axis.
    #[serde(serialize_with = "axis_name")]
    pub axis: Axis,
    /// The rate it paces at now, per minute.
    pub per_minute: f64,
    /// The catalog's figure, per minute (`None`: the provider stated the axis).
    pub catalog_per_minute: Option<f64>,
    /// Where the rate comes from.
    pub source: RateSource,
}

fn axis_name<S: serde::Serializer>(axis: &Axis, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(axis.as_str())
}

/// Keeps the accounting of every budget. Shared by all jobs of a dispatcher (and, for a shared
/// implementation, by every process).
pub trait BudgetStore: Send + Sync + 'static {
    /// Set (or replace) a budget's limits.
    fn configure(&self, budget: &str, limits: Limits);
    /// A budget's limits, if configured.
    fn limits(&self, budget: &str) -> Option<Limits>;
    /// Try to reserve `ask` now.
    fn try_reserve<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Result<Reservation>>;
    /// Decide `ask` at once, in memory: `Some` from a store that needs nothing outside the
    /// process (admission then skips the boxed future of [`BudgetStore::try_reserve`]), `None`
    /// from one that must ask elsewhere. The default is `None`.
    fn try_reserve_local(&self, ask: &Ask) -> Option<Reservation> {
        let _ = ask;
        None
    }
    /// Reconcile a lease with the tokens really used, per axis; a surplus goes back to the
    /// budget (all of it for a throttled attempt, settled at [`SeatUse::NONE`]: the provider
    /// charged nothing).
    fn settle(&self, lease: &Lease, used: SeatUse);
    /// The lease ended: give back its concurrency; a token grant it never settled counts whole
    /// for a window from now (the provider may have charged it).
    fn release(&self, lease: &Lease);
    /// Admit nothing on this budget for `wait` (the provider throttled us), and no longer; waiters
    /// then leave at the rate, not at once. A busy axis learns the rate the provider allowed
    /// (see [`super::bucket`]).
    fn pause(&self, budget: &str, wait: Duration);
    /// Learn from the provider's rate-limit headers.
    fn observe(&self, budget: &str, obs: RateObservation);
    /// The fraction of the budget free now (the lowest over its axes), for the picker.
    fn headroom(&self, budget: &str) -> Option<f64>;
    /// How each paced axis of the budget stands now (its rate and where that came from), for
    /// the record and the explorer. The default (a store that cannot tell cheaply) is empty.
    fn rates(&self, budget: &str) -> Vec<AxisRate> {
        let _ = budget;
        Vec::new()
    }
}

#[derive(Debug, Default)]
struct State {
    limits: Limits,
    /// One paced axis per [`Axis`], in [`Axis::ALL`]'s order.
    axes: [Option<Bucket>; 4],
    in_flight: u32,
    paused_until: Option<Instant>,
    probe: Probe,
    /// While no axis paces the budget (no figure in the catalog, none stated in headers): what
    /// went through since the first grant; a throttle paces the budget at it.
    unpaced: Option<Unpaced>,
}

/// What a budget no axis paces granted since its first grant.
#[derive(Debug, Clone, Copy)]
struct Unpaced {
    since: Instant,
    requests: u64,
    /// Tokens granted, less what settled grants left unused: what the provider counts for them
    /// (a grant still out at its reservation, as providers charge it on arrival).
    tokens: f64,
    /// The end of the pause of the throttle that paced the budget's tokens at `tokens`: until
    /// then, a call of the refused burst that comes back refused too (it used nothing) was
    /// never counted, and leaves the rate learned.
    paced_until: Option<Instant>,
}

impl Unpaced {
    fn per_second(&self, of: f64, until: Instant) -> f64 {
        of / until
            .saturating_duration_since(self.since)
            .as_secs_f64()
            .max(1e-3)
    }

    /// The axis a throttle at `until` shows the provider holds the budget to: tokens at what
    /// went through per second, where the grants carried tokens (what a token limit counts, and
    /// what a request limit's count of requests of a like size gives too); else requests.
    fn learned(&mut self, until: Instant, now: Instant) -> (Axis, Bucket) {
        if self.tokens >= 1.0 {
            self.paced_until = Some(until);
            let per_second = self.per_second(self.tokens, until);
            (Axis::Tokens, Bucket::learned(per_second, true, now, until))
        } else {
            let per_second = self.per_second(self.requests as f64, until);
            (
                Axis::Requests,
                Bucket::learned(per_second, false, now, until),
            )
        }
    }
}

impl State {
    /// Set the limits; a rate that did not change keeps its bucket (and what it learned).
    fn set(&mut self, limits: Limits, now: Instant) {
        for axis in Axis::ALL {
            let slot = &mut self.axes[axis.index()];
            *slot = match (slot.take(), axis.rate(&limits)) {
                (Some(b), Some(r)) if b.rate() == Some(r) => Some(b),
                // An axis the provider stated and the catalog still leaves out keeps what it
                // learned.
                (Some(b), None) if b.rate().is_none() => Some(b),
                (_, r) => r.map(|r| Bucket::new(r, axis.settles(), now)),
            };
        }
        self.limits = limits;
    }

    fn paced(&mut self) -> impl Iterator<Item = (Axis, &mut Bucket)> {
        Axis::ALL
            .into_iter()
            .zip(self.axes.iter_mut())
            .filter_map(|(a, b)| Some((a, b.as_mut()?)))
    }
}

/// The in-process budget store: a paced axis per rate under a mutex per store.
#[derive(Debug, Default)]
pub struct MemoryBudgets {
    states: Mutex<foldhash::HashMap<String, State>>,
    next_lease: std::sync::atomic::AtomicU64,
}

impl MemoryBudgets {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<R>(&self, budget: &str, f: impl FnOnce(&mut State) -> R) -> Option<R> {
        let mut g = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        g.get_mut(budget).map(f)
    }

    fn reserve_now(&self, ask: &Ask) -> Reservation {
        let now = Instant::now();
        let lease_id = self
            .next_lease
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let r = self.with(&ask.budget, |s| {
            for axis in [Axis::Tokens, Axis::InputTokens, Axis::OutputTokens] {
                if let Some(r) = axis.rate(&s.limits)
                    && axis.asked(ask) > r.amount
                {
                    return Reservation::Never(format!(
                        "asks {} tokens but its {} limit is {} per {:?}",
                        axis.asked(ask),
                        axis.as_str(),
                        r.amount,
                        r.per
                    ));
                }
            }
            if let Some(c) = s.limits.concurrency
                && ask.slots > c
            {
                return Reservation::Never(format!(
                    "asks {} concurrent slots but the limit is {c}",
                    ask.slots
                ));
            }
            if let Some(until) = s.paused_until {
                if until > now {
                    return Reservation::Wait(Some(until - now));
                }
                s.paused_until = None;
            }
            if let Some(c) = s.limits.concurrency
                && s.in_flight + ask.slots > c
            {
                return Reservation::Wait(None);
            }
            // A budget the provider already stated rates for has nothing left to probe.
            let stated = s.axes.iter().any(Option::is_some);
            if !stated && s.probe.holds(&s.limits, ask.tokens) {
                return Reservation::Wait(None);
            }
            let wait = s
                .paced()
                .filter_map(|(axis, b)| b.check(now, axis.asked(ask)))
                .max();
            if wait.is_some() {
                s.probe.not_sent();
                return Reservation::Wait(wait);
            }
            s.probe.granted(lease_id);
            if !stated {
                let u = s.unpaced.get_or_insert(Unpaced {
                    since: now,
                    requests: 0,
                    tokens: 0.0,
                    paced_until: None,
                });
                u.requests += 1;
                u.tokens += ask.tokens as f64;
            }
            for (axis, b) in s.paced() {
                b.take(now, lease_id, axis.asked(ask));
            }
            s.in_flight += ask.slots;
            Reservation::Granted(Lease {
                budget: ask.budget.clone(),
                id: lease_id,
                tokens: ask.tokens,
                input_tokens: ask.input_tokens,
                output_tokens: ask.output_tokens,
                slots: ask.slots,
            })
        });
        r.unwrap_or_else(|| {
            Reservation::Never(format!("budget `{}` is not configured", ask.budget))
        })
    }
}

impl BudgetStore for MemoryBudgets {
    fn configure(&self, budget: &str, limits: Limits) {
        let mut g = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        g.entry(budget.to_owned())
            .or_default()
            .set(limits, Instant::now());
    }

    fn limits(&self, budget: &str) -> Option<Limits> {
        self.with(budget, |s| s.limits)
    }

    fn try_reserve<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Result<Reservation>> {
        let r = self.reserve_now(ask);
        Box::pin(std::future::ready(Ok(r)))
    }

    fn try_reserve_local(&self, ask: &Ask) -> Option<Reservation> {
        Some(self.reserve_now(ask))
    }

    fn settle(&self, lease: &Lease, used: SeatUse) {
        let now = Instant::now();
        self.with(&lease.budget, |s| {
            if let Some(u) = s.unpaced.as_mut() {
                let (reserved, used) = (lease.tokens as f64, used.total() as f64);
                match u.paced_until {
                    None => u.tokens = (u.tokens - reserved + used).max(0.0),
                    Some(until) if now < until => {
                        if used == 0.0 {
                            u.tokens = (u.tokens - reserved).max(0.0);
                            if let Some(b) = s.axes[Axis::Tokens.index()].as_mut() {
                                b.relearn(u.per_second(u.tokens, until));
                            }
                        }
                    }
                    Some(_) => s.unpaced = None,
                }
            }
            for (axis, b) in s.paced() {
                if let Some((reserved, spent)) = axis.settled(lease, used) {
                    b.settle(now, lease.id, reserved, spent, axis.short(lease, used));
                }
            }
        });
    }

    fn release(&self, lease: &Lease) {
        let now = Instant::now();
        self.with(&lease.budget, |s| {
            s.in_flight = s.in_flight.saturating_sub(lease.slots);
            s.probe.ended(lease.id);
            for (_, b) in s.paced() {
                b.release(now, lease.id);
            }
        });
    }

    fn pause(&self, budget: &str, wait: Duration) {
        let now = Instant::now();
        let until = later(now, wait);
        self.with(budget, |s| {
            if s.paused_until.is_none_or(|p| p < until) {
                s.paused_until = Some(until);
            }
            for (_, b) in s.paced() {
                b.pause(now, until);
            }
            // Throttled with no figure to learn into (a provider that states none, a catalog
            // that gives none): what went through since the first grant, over that time and the
            // wait, paces the budget from now on, as a rate learned from a throttle.
            if !s.axes.iter().any(Option::is_some)
                && let Some(mut u) = s.unpaced.take()
            {
                let (axis, b) = u.learned(until, now);
                s.axes[axis.index()] = Some(b);
                s.unpaced = u.paced_until.map(|_| u);
                s.probe.paced();
            }
        });
    }

    fn observe(&self, budget: &str, obs: RateObservation) {
        let now = Instant::now();
        self.with(budget, |s| {
            for (axis, said) in Axis::ALL.into_iter().zip(obs.axes()) {
                let slot = &mut s.axes[axis.index()];
                // A figure the provider states for an axis the catalog left out paces it too.
                if slot.is_none()
                    && let Some(limit) = said.limit.filter(|l| *l > 0)
                {
                    *slot = Some(Bucket::stated(limit, axis.settles(), now));
                    // Paced by a figure now: nothing is left to count.
                    s.unpaced = None;
                }
                if let Some(b) = slot {
                    b.observe(
                        now,
                        said.limit,
                        said.remaining,
                        said.reset,
                        said.reset_slack,
                    );
                }
            }
        });
    }

    fn headroom(&self, budget: &str) -> Option<f64> {
        let now = Instant::now();
        self.with(budget, |s| {
            let mut h: f64 = 1.0;
            for (_, b) in s.paced() {
                h = h.min(b.headroom(now));
            }
            if let Some(c) = s.limits.concurrency {
                h = h.min(1.0 - f64::from(s.in_flight) / f64::from(c.max(1)));
            }
            h.max(0.0)
        })
    }

    fn rates(&self, budget: &str) -> Vec<AxisRate> {
        let now = Instant::now();
        self.with(budget, |s| {
            s.paced().map(|(axis, b)| b.standing(axis, now)).collect()
        })
        .unwrap_or_default()
    }
}

mod probe;
#[cfg(test)]
mod tests;

pub use probe::Probe;
