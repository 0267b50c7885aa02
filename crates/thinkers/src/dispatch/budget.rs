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
use crate::job::{Ask, Limits, Rate};

/// A granted reservation on one budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The budget.
    pub budget: Arc<str>,
    /// The store's id for the reservation.
    pub id: u64,
    /// Tokens reserved.
    pub tokens: u64,
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

/// What a provider said about a budget in its rate-limit headers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RateObservation {
    /// Tokens the provider says remain.
    pub remaining_tokens: Option<u64>,
    /// When the token allowance is fully replenished.
    pub tokens_reset: Option<Duration>,
    /// Requests the provider says remain.
    pub remaining_requests: Option<u64>,
    /// When the request allowance is fully replenished.
    pub requests_reset: Option<Duration>,
    /// The token limit the provider states: its per-minute figure (the meaning OpenAI's and
    /// Anthropic's `*-limit` headers document).
    pub limit_tokens: Option<u64>,
    /// The request limit the provider states, per minute.
    pub limit_requests: Option<u64>,
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
    /// Reconcile a lease with the tokens really used; a surplus goes back to the budget (all of
    /// it for a throttled attempt, settled at 0: the provider charged nothing).
    fn settle(&self, lease: &Lease, used_tokens: u64);
    /// Give back a lease's concurrency.
    fn release(&self, lease: &Lease);
    /// Admit nothing on this budget for `wait` (the provider throttled us), and no longer; waiters
    /// then leave at the rate, not at once. A busy axis learns the rate the provider allowed
    /// (see [`super::bucket`]).
    fn pause(&self, budget: &str, wait: Duration);
    /// Learn from the provider's rate-limit headers.
    fn observe(&self, budget: &str, obs: RateObservation);
    /// The fraction of the budget free now (the lowest over its axes), for the picker.
    fn headroom(&self, budget: &str) -> Option<f64>;
}

/// The first model call on a budget the catalog gave no rate goes out alone, so the provider's
/// answer (its rate-limit headers) can state the limits before a burst reaches it; the calls
/// behind it wait for its end, whatever the outcome.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// No call has gone out yet.
    #[default]
    Ahead,
    /// The probe is out (under this lease, once granted), since then.
    Out(Option<u64>, Instant),
    /// Done: the budget admits as its limits say.
    Done,
}

/// How long a probe may be asked for without being granted (its asker went away) before the
/// next ask probes instead.
const PROBE_ASKING: Duration = Duration::from_secs(30);

impl Probe {
    /// Whether an ask of `tokens` on a budget with `limits` must wait for the probe; the first
    /// such ask becomes the probe.
    pub(crate) fn holds(&mut self, limits: &Limits, tokens: u64) -> bool {
        if tokens == 0 || limits.tokens.is_some() || limits.requests.is_some() {
            return false;
        }
        match *self {
            Self::Out(None, since) if since.elapsed() > PROBE_ASKING => {
                *self = Self::Out(None, Instant::now());
                false
            }
            Self::Ahead => {
                *self = Self::Out(None, Instant::now());
                false
            }
            Self::Out(..) => true,
            Self::Done => false,
        }
    }

    /// The probe was granted as lease `id`.
    pub(crate) fn granted(&mut self, id: u64) {
        if let Self::Out(None, since) = *self {
            *self = Self::Out(Some(id), since);
        }
    }

    /// The probe was not granted after all: the next ask probes.
    pub(crate) fn not_sent(&mut self) {
        if matches!(self, Self::Out(None, _)) {
            *self = Self::Ahead;
        }
    }

    /// Lease `id` ended: if it was the probe, the probe is done.
    pub(crate) fn ended(&mut self, id: u64) {
        if matches!(*self, Self::Out(Some(p), _) if p == id) {
            *self = Self::Done;
        }
    }
}

#[derive(Debug, Default)]
struct State {
    limits: Limits,
    tokens: Option<Bucket>,
    requests: Option<Bucket>,
    in_flight: u32,
    paused_until: Option<Instant>,
    probe: Probe,
}

impl State {
    /// Set the limits; a rate that did not change keeps its bucket (and what it learned).
    fn set(&mut self, limits: Limits, now: Instant) {
        let keep = |old: Option<Bucket>, new: Option<Rate>| match (old, new) {
            (Some(b), Some(r)) if b.rate() == Some(r) => Some(b),
            // An axis the provider stated and the catalog still leaves out keeps what it learned.
            (Some(b), None) if b.rate().is_none() => Some(b),
            (_, r) => r.map(|r| Bucket::new(r, now)),
        };
        self.tokens = keep(self.tokens.take(), limits.tokens);
        self.requests = keep(self.requests.take(), limits.requests);
        self.limits = limits;
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
            if let Some(r) = s.limits.tokens
                && ask.tokens > r.amount
            {
                return Reservation::Never(format!(
                    "asks {} tokens but the limit is {} per {:?}",
                    ask.tokens, r.amount, r.per
                ));
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
            if s.probe.holds(&s.limits, ask.tokens) {
                return Reservation::Wait(None);
            }
            let requests = u64::from(ask.requests);
            let wait = [(&s.tokens, ask.tokens), (&s.requests, requests)]
                .into_iter()
                .filter_map(|(b, n)| b.as_ref()?.check(now, n))
                .max();
            if wait.is_some() {
                s.probe.not_sent();
                return Reservation::Wait(wait);
            }
            s.probe.granted(lease_id);
            if let Some(b) = &mut s.tokens {
                b.take(now, ask.tokens);
            }
            if let Some(b) = &mut s.requests {
                b.take(now, requests);
            }
            s.in_flight += ask.slots;
            Reservation::Granted(Lease {
                budget: ask.budget.clone(),
                id: lease_id,
                tokens: ask.tokens,
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

    fn settle(&self, lease: &Lease, used_tokens: u64) {
        let now = Instant::now();
        self.with(&lease.budget, |s| {
            if let Some(b) = &mut s.tokens {
                b.settle(now, lease.tokens, used_tokens);
            }
        });
    }

    fn release(&self, lease: &Lease) {
        self.with(&lease.budget, |s| {
            s.in_flight = s.in_flight.saturating_sub(lease.slots);
            s.probe.ended(lease.id);
        });
    }

    fn pause(&self, budget: &str, wait: Duration) {
        let now = Instant::now();
        let until = later(now, wait);
        self.with(budget, |s| {
            if s.paused_until.is_none_or(|p| p < until) {
                s.paused_until = Some(until);
            }
            for b in [&mut s.tokens, &mut s.requests].into_iter().flatten() {
                b.pause(now, until);
            }
        });
    }

    fn observe(&self, budget: &str, obs: RateObservation) {
        let now = Instant::now();
        self.with(budget, |s| {
            let axes = [
                (
                    &mut s.tokens,
                    obs.limit_tokens,
                    obs.remaining_tokens,
                    obs.tokens_reset,
                ),
                (
                    &mut s.requests,
                    obs.limit_requests,
                    obs.remaining_requests,
                    obs.requests_reset,
                ),
            ];
            for (axis, limit, remaining, reset) in axes {
                // A figure the provider states for an axis the catalog left out paces it too.
                if axis.is_none()
                    && let Some(limit) = limit.filter(|l| *l > 0)
                {
                    *axis = Some(Bucket::stated(limit, now));
                }
                if let Some(b) = axis {
                    b.observe(now, limit, remaining, reset);
                }
            }
        });
    }

    fn headroom(&self, budget: &str) -> Option<f64> {
        let now = Instant::now();
        self.with(budget, |s| {
            let mut h: f64 = 1.0;
            for b in [&mut s.tokens, &mut s.requests].into_iter().flatten() {
                h = h.min(b.headroom(now));
            }
            if let Some(c) = s.limits.concurrency {
                h = h.min(1.0 - f64::from(s.in_flight) / f64::from(c.max(1)));
            }
            h.max(0.0)
        })
    }
}
