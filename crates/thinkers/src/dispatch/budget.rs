//! Admission budgets: limits per named budget and the store that keeps their accounting.
//!
//! A budget has up to three limits: a token rate, a request rate and a concurrency. Rates are
//! enforced over a *sliding window* (the sum of what was reserved in the last `per` never exceeds
//! `amount`), which is stricter than a provider's replenishing bucket: thinkers never sends more
//! than the provider allows in any window, so it never provokes a 429 from its own traffic.
//!
//! A provider timestamps a request when it arrives, a little after admission granted it, so its
//! window entry expires a little later than ours. [`MemoryBudgets`] therefore keeps each entry for
//! `per` plus a small skew allowance (1 % of the period, at most one second) before it frees it.
//!
//! [`BudgetStore`] is the seam for a shared, multi-process implementation (Redis); the in-process
//! default is [`MemoryBudgets`]. The waiting and FIFO ordering live above the store, in
//! [`super::Admission`], so every store gets them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::Result;
use crate::job::Ask;

/// An amount per period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rate {
    /// How much may be used per period.
    pub amount: u64,
    /// The period.
    pub per: Duration,
}

impl Rate {
    /// `amount` per minute.
    pub fn per_minute(amount: u64) -> Self {
        Self {
            amount,
            per: Duration::from_secs(60),
        }
    }
    /// `amount` per second.
    pub fn per_second(amount: u64) -> Self {
        Self {
            amount,
            per: Duration::from_secs(1),
        }
    }
}

/// The limits of one budget. `None` means unlimited on that axis.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Tokens per period.
    pub tokens: Option<Rate>,
    /// Requests per period.
    pub requests: Option<Rate>,
    /// Jobs holding the budget at once.
    pub concurrency: Option<u32>,
}

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
    /// Does not fit now. `Some(d)`: it may fit after `d` (a window entry expires, a pause ends);
    /// `None`: it fits only after a release (a concurrency slot).
    Wait(Option<Duration>),
    /// Can never fit (it asks for more than the whole limit); the reason names the numbers.
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
    /// Reconcile a lease with the tokens really used; a surplus goes back to the budget.
    fn settle(&self, lease: &Lease, used_tokens: u64);
    /// Give back a lease's concurrency.
    fn release(&self, lease: &Lease);
    /// Admit nothing on this budget for `wait` (the provider throttled us).
    fn pause(&self, budget: &str, wait: Duration);
    /// Learn from the provider's rate-limit headers.
    fn observe(&self, budget: &str, obs: RateObservation);
    /// The fraction of the budget free now (the lowest over its axes), for the picker.
    fn headroom(&self, budget: &str) -> Option<f64>;
}

#[derive(Debug)]
struct WindowEntry {
    at: Instant,
    lease: u64,
    amount: u64,
}

#[derive(Debug, Default)]
struct Window {
    entries: VecDeque<WindowEntry>,
    sum: u64,
}

/// How long past its period a window entry is still counted: the provider's clock starts when the
/// request arrives, after our grant.
pub(crate) fn skew(per: Duration) -> Duration {
    (per / 100).min(Duration::from_secs(1))
}

impl Window {
    fn purge(&mut self, now: Instant, per: Duration) {
        let per = per + skew(per);
        while let Some(front) = self.entries.front() {
            if front.at + per <= now {
                self.sum -= front.amount;
                self.entries.pop_front();
            } else {
                break;
            }
        }
    }

    /// When enough entries expire for `need` more to fit under `limit`.
    fn wait_for(&self, now: Instant, per: Duration, need: u64, limit: u64) -> Duration {
        let per = per + skew(per);
        let mut freed = 0;
        let excess = (self.sum + need).saturating_sub(limit);
        for e in &self.entries {
            freed += e.amount;
            if freed >= excess {
                return (e.at + per).saturating_duration_since(now);
            }
        }
        per
    }

    fn push(&mut self, at: Instant, lease: u64, amount: u64) {
        if amount > 0 {
            self.entries.push_back(WindowEntry { at, lease, amount });
            self.sum += amount;
        }
    }

    fn adjust(&mut self, lease: u64, amount: u64) {
        // Settlement follows the grant closely, so the entry is near the back.
        if let Some(e) = self.entries.iter_mut().rev().find(|e| e.lease == lease) {
            self.sum = self.sum - e.amount + amount;
            e.amount = amount;
        }
    }
}

#[derive(Debug, Default)]
struct State {
    limits: Limits,
    tokens: Window,
    requests: Window,
    in_flight: u32,
    paused_until: Option<Instant>,
}

impl State {
    fn purge(&mut self, now: Instant) {
        if let Some(r) = self.limits.tokens {
            self.tokens.purge(now, r.per);
        }
        if let Some(r) = self.limits.requests {
            self.requests.purge(now, r.per);
        }
    }
}

/// The in-process budget store: sliding windows under a mutex per store.
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
            s.purge(now);
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
            if let Some(r) = s.limits.tokens
                && s.tokens.sum + ask.tokens > r.amount
            {
                return Reservation::Wait(Some(
                    s.tokens.wait_for(now, r.per, ask.tokens, r.amount),
                ));
            }
            if let Some(r) = s.limits.requests
                && s.requests.sum + u64::from(ask.requests) > r.amount
            {
                let need = u64::from(ask.requests);
                return Reservation::Wait(Some(s.requests.wait_for(now, r.per, need, r.amount)));
            }
            if s.limits.tokens.is_some() {
                s.tokens.push(now, lease_id, ask.tokens);
            }
            if s.limits.requests.is_some() {
                s.requests.push(now, lease_id, u64::from(ask.requests));
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
        g.entry(budget.to_owned()).or_default().limits = limits;
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
        self.with(&lease.budget, |s| s.tokens.adjust(lease.id, used_tokens));
    }

    fn release(&self, lease: &Lease) {
        self.with(&lease.budget, |s| {
            s.in_flight = s.in_flight.saturating_sub(lease.slots);
        });
    }

    fn pause(&self, budget: &str, wait: Duration) {
        let until = Instant::now() + wait;
        self.with(budget, |s| {
            if s.paused_until.is_none_or(|p| p < until) {
                s.paused_until = Some(until);
            }
        });
    }

    fn observe(&self, budget: &str, obs: RateObservation) {
        let now = Instant::now();
        self.with(budget, |s| {
            s.purge(now);
            // When the provider has less room than we think (other clients share the key), book
            // the difference as a phantom reservation that expires when the provider replenishes.
            if let (Some(rate), Some(remaining)) = (s.limits.tokens, obs.remaining_tokens) {
                let ours = rate.amount.saturating_sub(s.tokens.sum);
                if remaining < ours {
                    let reset = obs.tokens_reset.unwrap_or(rate.per).min(rate.per);
                    let at = (now + reset).checked_sub(rate.per).unwrap_or(now);
                    s.tokens.push(at, u64::MAX, ours - remaining);
                    s.tokens.entries.make_contiguous().sort_by_key(|e| e.at);
                }
            }
            if let (Some(rate), Some(remaining)) = (s.limits.requests, obs.remaining_requests) {
                let ours = rate.amount.saturating_sub(s.requests.sum);
                if remaining < ours {
                    let reset = obs.requests_reset.unwrap_or(rate.per).min(rate.per);
                    let at = (now + reset).checked_sub(rate.per).unwrap_or(now);
                    s.requests.push(at, u64::MAX, ours - remaining);
                    s.requests.entries.make_contiguous().sort_by_key(|e| e.at);
                }
            }
        });
    }

    fn headroom(&self, budget: &str) -> Option<f64> {
        let now = Instant::now();
        self.with(budget, |s| {
            s.purge(now);
            let mut h: f64 = 1.0;
            if let Some(r) = s.limits.tokens {
                h = h.min(1.0 - s.tokens.sum as f64 / r.amount.max(1) as f64);
            }
            if let Some(r) = s.limits.requests {
                h = h.min(1.0 - s.requests.sum as f64 / r.amount.max(1) as f64);
            }
            if let Some(c) = s.limits.concurrency {
                h = h.min(1.0 - f64::from(s.in_flight) / f64::from(c.max(1)));
            }
            h.max(0.0)
        })
    }
}
