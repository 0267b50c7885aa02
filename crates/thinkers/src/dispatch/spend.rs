//! Spending caps, enforced before each model call.
//!
//! A [`SpendCap`] bounds what model calls may cost, in one currency: per run (a workflow and
//! everything under it: sub-agents, tools that call models, retries and corrections), per value
//! of a scope axis (every run bound to `tenant = acme`), or per UTC day. Before a call is sent it
//! holds its worst case (its counted input and its whole output budget at the entry's prices,
//! cache writes at their price where that is higher) on every cap that applies; a call that would
//! take a cap past its amount is not sent and fails with [`Error::SpendCapReached`], naming the
//! cap, what was spent or held, and what the call needed. When the answer arrives the hold
//! settles to the call's cost; a call that ends without an answer (a refusal, a failure) gives its
//! hold back, as the record keeps no cost for it either.
//!
//! Holds and settles are atomic in the [`SpendStore`]: calls in flight at once can never take a
//! cap past its amount together. The in-process store ([`MemorySpend`]) serves one process; a
//! shared one (Redis: [`super::RedisBudgets`] implements [`SpendStore`]) serves many.
//!
//! Amounts are kept in billionths of the currency unit, so sums are exact.

use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;

use crate::job::JobContext;
use crate::{Error, Result};

/// Billionths of a currency unit per unit.
const NANOS: f64 = 1e9;

/// What one cap bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapScope {
    /// One run: the workflow a call belongs to.
    Run,
    /// Every run bound to a value of this scope axis (for example `tenant`); a call outside such
    /// a scope is not under the cap.
    Axis(String),
    /// A UTC calendar day.
    Day,
}

/// Which model calls a cap counts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CapOn {
    /// Every call.
    #[default]
    Every,
    /// Calls to this provider's entries (a catalog provider's name).
    Provider(String),
    /// Calls to this catalog entry.
    Entry(String),
}

/// A cap on what model calls may cost, in one currency.
#[derive(Debug, Clone, PartialEq)]
pub struct SpendCap {
    scope: CapScope,
    on: CapOn,
    amount: f64,
    currency: Arc<str>,
}

impl SpendCap {
    /// At most `amount` of `currency` per run.
    pub fn per_run(amount: f64, currency: &str) -> Self {
        Self::new(CapScope::Run, amount, currency)
    }

    /// At most `amount` of `currency` per value of the scope axis `axis`.
    pub fn per_axis(axis: &str, amount: f64, currency: &str) -> Self {
        Self::new(CapScope::Axis(axis.to_owned()), amount, currency)
    }

    /// At most `amount` of `currency` per UTC day.
    pub fn per_day(amount: f64, currency: &str) -> Self {
        Self::new(CapScope::Day, amount, currency)
    }

    fn new(scope: CapScope, amount: f64, currency: &str) -> Self {
        Self {
            scope,
            on: CapOn::Every,
            amount,
            currency: Arc::from(currency.to_ascii_uppercase()),
        }
    }

    /// This cap, counting only the calls to the entries of the catalog provider `name`; its
    /// sums are kept apart from those of the same cap on every call.
    #[must_use]
    pub(crate) fn on_provider(mut self, name: &str) -> Self {
        self.on = CapOn::Provider(name.to_owned());
        self
    }

    /// This cap, counting only the calls to the catalog entry `id`.
    #[must_use]
    pub(crate) fn on_entry(mut self, id: &str) -> Self {
        self.on = CapOn::Entry(id.to_owned());
        self
    }

    /// What the cap bounds.
    pub fn scope(&self) -> &CapScope {
        &self.scope
    }

    /// Which calls it counts.
    pub(crate) fn on(&self) -> &CapOn {
        &self.on
    }

    /// Its amount.
    pub fn amount(&self) -> f64 {
        self.amount
    }

    /// Its currency (ISO code, upper case).
    pub fn currency(&self) -> &str {
        &self.currency
    }

    /// The cap's name and its store key for a call to `entry` (served by `provider`) made under
    /// `cx`; `None` when the cap does not apply (an axis cap on a call outside that axis, a cap
    /// on another provider or entry).
    fn key(&self, cx: &JobContext, entry: &str, provider: &str) -> Option<(String, String)> {
        let (name, key) = self.scope_key(cx)?;
        match &self.on {
            CapOn::Every => Some((name, key)),
            CapOn::Provider(p) if p == provider => Some((
                format!("{name} on provider `{p}`"),
                format!("{key}:provider={p}"),
            )),
            CapOn::Entry(e) if e == entry => {
                Some((format!("{name} on entry `{e}`"), format!("{key}:entry={e}")))
            }
            CapOn::Provider(_) | CapOn::Entry(_) => None,
        }
    }

    fn scope_key(&self, cx: &JobContext) -> Option<(String, String)> {
        let cur = &self.currency;
        match &self.scope {
            CapScope::Run => {
                let wf = cx.workflow();
                Some((format!("run {wf}"), format!("run:{wf}:{cur}")))
            }
            CapScope::Axis(axis) => {
                let value = cx.scope().axis(axis)?;
                Some((
                    format!("{axis}={value}"),
                    format!("axis:{axis}={value}:{cur}"),
                ))
            }
            CapScope::Day => {
                let day = chrono::Utc::now().format("%Y-%m-%d");
                Some((format!("day {day}"), format!("day:{day}:{cur}")))
            }
        }
    }
}

/// What a store answers to a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// Held.
    Yes,
    /// Refused: this much (billionths) was spent or held already.
    No(u64),
}

/// Keeps what was spent and held under each cap key, atomically.
pub trait SpendStore: Send + Sync + 'static {
    /// Hold `amount` (billionths) on `key` if what is spent and held there stays within `limit`.
    fn hold<'a>(&'a self, key: &'a str, limit: u64, amount: u64) -> BoxFuture<'a, Result<Held>>;
    /// Replace a hold of `held` on `key` by what the call really cost (`cost`, billionths). The
    /// change is made by the time the future ends (an in-process store makes it at once).
    fn settle(&self, key: &str, held: u64, cost: u64) -> BoxFuture<'static, ()>;
}

/// The in-process spend store.
#[derive(Debug, Default)]
pub struct MemorySpend {
    spent: Mutex<foldhash::HashMap<String, u64>>,
}

impl MemorySpend {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl SpendStore for MemorySpend {
    fn hold<'a>(&'a self, key: &'a str, limit: u64, amount: u64) -> BoxFuture<'a, Result<Held>> {
        let mut g = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        let now = g.get(key).copied().unwrap_or(0);
        let held = match now.checked_add(amount) {
            Some(after) if after <= limit => {
                g.insert(key.to_owned(), after);
                Held::Yes
            }
            _ => Held::No(now),
        };
        Box::pin(std::future::ready(Ok(held)))
    }

    fn settle(&self, key: &str, held: u64, cost: u64) -> BoxFuture<'static, ()> {
        let mut g = self.spent.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = g.get_mut(key) {
            *v = v.saturating_sub(held).saturating_add(cost);
        }
        Box::pin(std::future::ready(()))
    }
}

/// The caps a runtime enforces, and the store that keeps their sums. Registered as a service
/// (`RuntimeBuilder::spend_cap`); model calls find it there.
pub struct SpendCaps {
    caps: Vec<SpendCap>,
    store: Arc<dyn SpendStore>,
}

impl std::fmt::Debug for SpendCaps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpendCaps")
            .field("caps", &self.caps)
            .finish_non_exhaustive()
    }
}

impl SpendCaps {
    /// `caps`, kept in `store`. A cap whose amount is negative or not a number is refused,
    /// naming it.
    pub fn new(caps: Vec<SpendCap>, store: Arc<dyn SpendStore>) -> Result<Self> {
        for cap in &caps {
            if !cap.amount.is_finite() || cap.amount < 0.0 {
                return Err(Error::invalid_input(
                    "spend cap amount",
                    Some(cap.amount.to_string()),
                    format!("a {:?} cap must be a finite amount of 0 or more", cap.scope),
                ));
            }
        }
        Ok(Self { caps, store })
    }

    /// The caps.
    pub fn caps(&self) -> &[SpendCap] {
        &self.caps
    }

    /// Hold the worst case of a call to `entry` (served by `provider`), `worst` in `currency`
    /// (`None`: the entry has no prices), on every cap that applies to it under `cx`. A cap
    /// that would be passed refuses the call ([`Error::SpendCapReached`]), and so does a cap in
    /// another currency or over an unpriced entry (it could not bound the call); what was held
    /// on other caps goes back.
    pub(crate) async fn hold(
        self: &Arc<Self>,
        cx: &JobContext,
        entry: &str,
        provider: &str,
        worst: Option<f64>,
        currency: &str,
    ) -> Result<SpendHold> {
        let mut hold = SpendHold {
            caps: Arc::clone(self),
            held: Vec::new(),
        };
        for cap in &self.caps {
            let Some((name, key)) = cap.key(cx, entry, provider) else {
                continue;
            };
            let needed = match worst {
                Some(w) if currency.eq_ignore_ascii_case(&cap.currency) => w,
                _ => {
                    let why = if worst.is_none() {
                        format!("entry `{entry}` has no prices")
                    } else {
                        format!("entry `{entry}` is priced in {currency}")
                    };
                    return Err(Error::Unadmittable {
                        budget: format!("spend cap {name}"),
                        reason: format!(
                            "{why}, so the {} {} cap cannot bound what its calls cost",
                            cap.amount, cap.currency
                        ),
                    });
                }
            };
            let (limit, amount) = (nanos(cap.amount), nanos(needed));
            match self.store.hold(&key, limit, amount).await? {
                Held::Yes => hold.held.push((key, amount)),
                Held::No(spent) => {
                    return Err(Error::SpendCapReached {
                        cap: name,
                        currency: cap.currency.to_string(),
                        limit: cap.amount,
                        spent: spent as f64 / NANOS,
                        needed,
                    });
                }
            }
        }
        Ok(hold)
    }
}

fn nanos(amount: f64) -> u64 {
    // To the nearest billionth; saturating: an amount past u64 billionths (18 billion units) is
    // held as the largest.
    (amount.max(0.0) * NANOS).round() as u64
}

/// A call's holds on its caps. [`SpendHold::settle`] replaces them by the call's cost; dropped
/// unsettled (the call ended without an answer), they go back.
#[must_use = "a hold goes back when dropped; settle it with the call's cost"]
pub(crate) struct SpendHold {
    caps: Arc<SpendCaps>,
    held: Vec<(String, u64)>,
}

impl std::fmt::Debug for SpendHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpendHold")
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

impl SpendHold {
    /// The call cost `cost` (`None`: unknown, the worst case held stays spent). Awaited, so the
    /// next call's hold sees it.
    pub(crate) async fn settle(mut self, cost: Option<f64>) {
        for (key, held) in std::mem::take(&mut self.held) {
            let cost = cost.map_or(held, nanos);
            self.caps.store.settle(&key, held, cost).await;
        }
    }
}

impl Drop for SpendHold {
    fn drop(&mut self) {
        for (key, held) in std::mem::take(&mut self.held) {
            let back = self.caps.store.settle(&key, held, 0);
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(back);
            }
        }
    }
}

/// Hold the worst case of a call to `entry` (served by `provider`) on the caps of the runtime
/// `cx` runs in; `None` when it has none.
pub(crate) async fn hold(
    cx: &JobContext,
    entry: &str,
    provider: &str,
    worst: Option<f64>,
    currency: &str,
) -> Result<Option<SpendHold>> {
    match cx.services().get::<SpendCaps>() {
        Some(caps) => Ok(Some(caps.hold(cx, entry, provider, worst, currency).await?)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests;
