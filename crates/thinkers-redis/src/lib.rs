//! [`RedisBudgets`]: a [`BudgetStore`] kept in Redis, so every process that uses one catalog
//! entry draws on one set of limits.
//!
//! Every decision is one Lua script run atomically on the server (`scripts.rs`): refill the
//! buckets, check the pause, the concurrency and both rates, and book the grant. The buckets are
//! the in-process store's ([`thinkers::dispatch::bucket`]: the same sizing, the same learning
//! from headers and throttles, shared by every process), judged by the Redis server's clock so
//! machines with drifting clocks agree.
//!
//! Concurrency is held as leases with an expiry. A background task of each store extends the
//! leases its process still holds every third of the lease time; a process that dies stops
//! extending them and its slots come free at most one lease time later.
//!
//! Differences from [`thinkers::dispatch::MemoryBudgets`], because the trait's bookkeeping methods are
//! synchronous and must not block on the network:
//!
//! * `settle`, `release`, `pause` and `observe` are sent to Redis on a spawned task; a pause also
//!   takes effect locally at once. A release is therefore visible to other reservations a
//!   round trip later, which costs utilisation, never a limit.
//! * A reservation that waits for a concurrency slot returns a short retry delay instead of
//!   waiting for a release: a release by another process cannot wake this one.
//! * `headroom` answers from the sums the last decision on the budget saw (a cache), not from a
//!   fresh read.
//! * Limits are configured per process (from the catalog each worker loads); processes sharing a
//!   budget must configure the same limits.

mod scripts;
mod spend;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use redis::aio::MultiplexedConnection;
use tokio::time::Instant;

use scripts::SCRIPTS;
use thinkers::dispatch::budget::Probe;
use thinkers::dispatch::{Axis, BudgetStore, Lease, Limits, Rate, RateObservation, Reservation};
use thinkers::job::{Ask, SeatUse};
use thinkers::{Error, Result};

/// How long a concurrency lease lives without a heartbeat, unless configured otherwise.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// How long a reservation that waits for a concurrency slot waits before asking again.
const SLOT_POLL: Duration = Duration::from_millis(25);

/// The longest a reservation told to wait for a rate asks again after. The wait the shared axis
/// names assumes every grant ahead uses its whole reservation; a grant that settles for less
/// (in any process: none can wake another) gives the time back, so a waiter asks again at least
/// this often instead of sleeping the worst case.
const RATE_POLL: Duration = Duration::from_millis(25);

/// The key prefix unless configured otherwise.
const DEFAULT_PREFIX: &str = "thinkers:budget";

/// What holds a reservation back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// A rate axis: the wait assumes every grant ahead uses its whole reservation, and shrinks
    /// when one settles for less (see [`RATE_POLL`]).
    Rate,
    /// A pause (waited whole), a concurrency slot, a probe, a refusal.
    Other,
}

/// What this process knows of one budget.
#[derive(Debug, Default)]
struct Local {
    limits: Limits,
    /// Leases holding concurrency that this process must keep alive.
    held: HashSet<u64>,
    /// The used fraction of each axis (in [`Axis::ALL`]'s order) and the slots in use, as the
    /// last decision saw them.
    seen: ([f64; 4], u64),
    paused_until: Option<Instant>,
    /// This process's model calls on a budget without a catalog rate start slowly (see
    /// [`Probe`]) until a header or a throttle paces it.
    probe: Probe,
}

struct Inner {
    conn: MultiplexedConnection,
    prefix: String,
    ttl: Duration,
    budgets: Mutex<foldhash::HashMap<String, Local>>,
    runtime: tokio::runtime::Handle,
}

/// Admission budgets shared through Redis. Cheap to clone; clones share the connection and the
/// heartbeat task, which stops when the last clone is dropped.
#[derive(Clone)]
pub struct RedisBudgets {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RedisBudgets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBudgets")
            .field("prefix", &self.inner.prefix)
            .field("lease_ttl", &self.inner.ttl)
            .finish_non_exhaustive()
    }
}

fn redis_error(step: &str, err: &redis::RedisError) -> Error {
    Error::external("redis", step, err.to_string())
}

impl RedisBudgets {
    /// Connect to `url` (`redis://host:port/db`) with the default key prefix and lease time.
    /// Must be called inside a tokio runtime (the heartbeat runs on it).
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, DEFAULT_PREFIX, DEFAULT_LEASE_TTL).await
    }

    /// Connect with a key `prefix` (processes sharing budgets use the same one) and the time a
    /// concurrency lease survives its holder's last heartbeat.
    pub async fn connect_with(url: &str, prefix: &str, lease_ttl: Duration) -> Result<Self> {
        if lease_ttl < Duration::from_millis(30) {
            return Err(Error::invalid_input(
                "lease_ttl",
                Some(format!("{lease_ttl:?}")),
                "must be at least 30 ms (heartbeats run every third of it)",
            ));
        }
        let client = redis::Client::open(url)
            .map_err(|e| Error::invalid_input("redis url", Some(url.to_owned()), e.to_string()))?;
        let conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| redis_error("connect", &e))?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
            Error::system(
                "RedisBudgets::connect",
                format!("must be called inside a tokio runtime: {e}"),
            )
        })?;
        let inner = Arc::new(Inner {
            conn,
            prefix: prefix.to_owned(),
            ttl: lease_ttl,
            budgets: Mutex::new(foldhash::HashMap::default()),
            runtime,
        });
        inner
            .runtime
            .spawn(heartbeat_loop(Arc::downgrade(&inner), lease_ttl / 3));
        Ok(Self { inner })
    }

    /// How many concurrency slots of `budget` are held now, by any process (leases that have
    /// not expired, judged by the Redis server's clock). What an operator reads to see that
    /// nothing is reserved, for example while a run waits for a person.
    pub async fn held(&self, budget: &str) -> Result<u64> {
        let script = redis::Script::new(
            "local t = redis.call('TIME') \
             local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000 \
             return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')",
        );
        let mut conn = self.inner.conn.clone();
        let n: i64 = script
            .key(self.inner.key(budget, "held:z"))
            .invoke_async(&mut conn)
            .await
            .map_err(|e| redis_error("count held slots", &e))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, foldhash::HashMap<String, Local>> {
        self.budgets.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn key(&self, budget: &str, part: &str) -> String {
        // The braces keep one budget's keys in one cluster slot.
        format!("{}:{{{budget}}}:{part}", self.prefix)
    }

    fn spawn(self: &Arc<Self>, what: &'static str, invocation: redis::ScriptInvocation<'static>) {
        let mut conn = self.conn.clone();
        self.runtime.spawn(async move {
            if let Err(e) = invocation.invoke_async::<redis::Value>(&mut conn).await {
                tracing::warn!(error = %e, what, "redis budgets: update failed");
            }
        });
    }

    /// Decide `ask` in Redis, with the whole wait the shared state names and what holds it.
    async fn reserve(&self, ask: &Ask) -> Result<(Reservation, Held)> {
        let limits = {
            let g = self.lock();
            let Some(local) = g.get(&*ask.budget) else {
                return Ok((
                    Reservation::Never(format!("budget `{}` is not configured", ask.budget)),
                    Held::Other,
                ));
            };
            if let Some(until) = local.paused_until
                && until > Instant::now()
            {
                return Ok((Reservation::Wait(Some(until - Instant::now())), Held::Other));
            }
            local.limits
        };
        for axis in [Axis::Tokens, Axis::InputTokens, Axis::OutputTokens] {
            if let Some(r) = axis.rate(&limits)
                && axis.asked(ask) > r.amount
            {
                return Ok((
                    Reservation::Never(format!(
                        "asks {} tokens but its {} limit is {} per {:?}",
                        axis.asked(ask),
                        axis.as_str(),
                        r.amount,
                        r.per
                    )),
                    Held::Other,
                ));
            }
        }
        if let Some(c) = limits.concurrency
            && ask.slots > c
        {
            return Ok((
                Reservation::Never(format!(
                    "asks {} concurrent slots but the limit is {c}",
                    ask.slots
                )),
                Held::Other,
            ));
        }
        let b = &ask.budget;
        if self
            .lock()
            .get_mut(&**b)
            .is_some_and(|l| l.probe.holds(&limits, ask.tokens))
        {
            return Ok((Reservation::Wait(Some(SLOT_POLL)), Held::Other));
        }
        let mut inv = SCRIPTS.reserve.prepare_invoke();
        for part in ["held:z", "held:s", "pause", "seq"] {
            inv.key(self.key(b, part));
        }
        for axis in Axis::ALL {
            inv.key(self.key(b, axis_key(axis)));
        }
        inv.arg(limits.concurrency.map_or(-1, i64::from))
            .arg(ask.slots)
            .arg(millis(self.ttl));
        for axis in Axis::ALL {
            bucket_args(&mut inv, axis.rate(&limits));
            inv.arg(signed(axis.asked(ask)));
        }
        let mut conn = self.conn.clone();
        let answer: Vec<i64> = match inv.invoke_async(&mut conn).await {
            Ok(a) => a,
            Err(e) => {
                if let Some(l) = self.lock().get_mut(&**b) {
                    l.probe.not_sent();
                }
                return Err(redis_error("reserve", &e));
            }
        };
        let [kind, value, slots, t, i, o, r] = answer[..] else {
            if let Some(l) = self.lock().get_mut(&**b) {
                l.probe.not_sent();
            }
            return Err(Error::system(
                "redis budgets",
                format!("the reserve script answered {answer:?}, not seven numbers"),
            ));
        };
        let granted = kind == 0 && limits.concurrency.is_some() && ask.slots > 0;
        if let Some(local) = self.lock().get_mut(&**b) {
            let used = |headroom_ppm: i64| 1.0 - unsigned(headroom_ppm) as f64 / 1e6;
            local.seen = ([t, i, o, r].map(used), unsigned(slots));
            if granted {
                local.held.insert(unsigned(value));
            }
            if kind == 0 {
                local.probe.granted(unsigned(value));
            } else {
                local.probe.not_sent();
            }
        }
        let held = if kind == 1 && value >= 0 {
            Held::Rate
        } else {
            Held::Other
        };
        let decided = match kind {
            0 => Reservation::Granted(Lease {
                budget: b.clone(),
                id: unsigned(value),
                tokens: ask.tokens,
                input_tokens: ask.input_tokens,
                output_tokens: ask.output_tokens,
                slots: ask.slots,
            }),
            _ if value < 0 => Reservation::Wait(Some(SLOT_POLL)),
            _ => Reservation::Wait(Some(Duration::from_millis(unsigned(value)))),
        };
        Ok((decided, held))
    }
}

/// The key part of an axis's hash.
fn axis_key(axis: Axis) -> &'static str {
    match axis {
        Axis::Tokens => "tok:b",
        Axis::InputTokens => "in:b",
        Axis::OutputTokens => "out:b",
        Axis::Requests => "req:b",
    }
}

/// A bucket's three script arguments: rate per ms (`-1` unlimited), explicit burst in ms (`-1`
/// for the default) and the figure's amount.
fn bucket_args(inv: &mut redis::ScriptInvocation<'_>, rate: Option<Rate>) {
    match rate {
        Some(r) => {
            let per_ms = r.amount as f64 / (r.per.as_secs_f64() * 1000.0).max(1e-9);
            inv.arg(per_ms.to_string())
                .arg(r.burst.map_or(-1, millis))
                .arg(signed(r.amount));
        }
        None => {
            inv.arg(-1).arg(-1).arg(0);
        }
    }
}

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Extend the leases this process holds until the store is dropped.
async fn heartbeat_loop(inner: Weak<Inner>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let beats: Vec<(String, Vec<u64>)> = inner
            .lock()
            .iter()
            .filter(|(_, l)| !l.held.is_empty())
            .map(|(b, l)| (b.clone(), l.held.iter().copied().collect()))
            .collect();
        for (budget, ids) in beats {
            let mut inv = SCRIPTS.heartbeat.prepare_invoke();
            inv.key(inner.key(&budget, "held:z")).arg(millis(inner.ttl));
            for id in ids {
                inv.arg(id);
            }
            let mut conn = inner.conn.clone();
            if let Err(e) = inv.invoke_async::<i64>(&mut conn).await {
                tracing::warn!(error = %e, budget, "redis budgets: heartbeat failed");
            }
        }
    }
}

impl BudgetStore for RedisBudgets {
    fn configure(&self, budget: &str, limits: Limits) {
        self.inner
            .lock()
            .entry(budget.to_owned())
            .or_default()
            .limits = limits;
    }

    fn limits(&self, budget: &str) -> Option<Limits> {
        self.inner.lock().get(budget).map(|l| l.limits)
    }

    fn try_reserve<'a>(&'a self, ask: &'a Ask) -> BoxFuture<'a, Result<Reservation>> {
        Box::pin(async move {
            Ok(match self.inner.reserve(ask).await? {
                (Reservation::Wait(Some(d)), Held::Rate) => {
                    Reservation::Wait(Some(d.min(RATE_POLL)))
                }
                (r, _) => r,
            })
        })
    }

    fn settle(&self, lease: &Lease, used: SeatUse) {
        let Some(limits) = self.limits(&lease.budget) else {
            return;
        };
        let mut inv = SCRIPTS.settle.prepare_invoke();
        inv.arg(lease.id);
        for axis in Axis::ALL {
            // An axis neither the catalog nor a provider paces has nothing to settle; the
            // script skips an axis whose hash is absent.
            if let Some((reserved, spent)) = axis.settled(lease, used) {
                inv.key(self.inner.key(&lease.budget, axis_key(axis)));
                bucket_args(&mut inv, axis.rate(&limits));
                inv.arg(signed(reserved))
                    .arg(signed(spent))
                    .arg(signed(axis.short(lease, used)));
            }
        }
        self.inner.spawn("settle", inv);
    }

    fn release(&self, lease: &Lease) {
        let held = self.inner.lock().get_mut(&*lease.budget).is_some_and(|l| {
            l.probe.ended(lease.id);
            l.held.remove(&lease.id)
        });
        // A lease with neither concurrency nor tokens has nothing shared to give back.
        if !held && lease.tokens == 0 && lease.input_tokens == 0 && lease.output_tokens == 0 {
            return;
        }
        let mut inv = SCRIPTS.release.prepare_invoke();
        inv.key(self.inner.key(&lease.budget, "held:z"))
            .key(self.inner.key(&lease.budget, "held:s"));
        for axis in Axis::ALL.into_iter().filter(|a| a.settles()) {
            inv.key(self.inner.key(&lease.budget, axis_key(axis)));
        }
        inv.arg(lease.id);
        self.inner.spawn("release", inv);
    }

    fn pause(&self, budget: &str, wait: Duration) {
        let until = thinkers::dispatch::bucket::later(Instant::now(), wait);
        if let Some(l) = self.inner.lock().get_mut(budget) {
            if l.paused_until.is_none_or(|p| p < until) {
                l.paused_until = Some(until);
            }
            // A throttle paces a budget without figures (the pause script teaches it a rate).
            l.probe.paced();
        }
        let limits = self.limits(budget).unwrap_or_default();
        let mut inv = SCRIPTS.pause.prepare_invoke();
        inv.key(self.inner.key(budget, "pause"))
            .arg(millis(wait).max(1));
        for axis in Axis::ALL {
            inv.key(self.inner.key(budget, axis_key(axis)));
            bucket_args(&mut inv, axis.rate(&limits));
        }
        self.inner.spawn("pause", inv);
    }

    fn observe(&self, budget: &str, obs: RateObservation) {
        let Some(limits) = self.limits(budget) else {
            return;
        };
        for axis in Axis::ALL {
            let said = axis.observed(&obs);
            if said.limit.is_none() && said.remaining.is_none() {
                continue;
            }
            if said.limit.is_some_and(|l| l > 0)
                && let Some(l) = self.inner.lock().get_mut(budget)
            {
                // A stated figure paces the budget.
                l.probe.paced();
            }
            let mut inv = SCRIPTS.observe.prepare_invoke();
            inv.key(self.inner.key(budget, axis_key(axis)));
            bucket_args(&mut inv, axis.rate(&limits));
            inv.arg(said.limit.map_or(-1, signed))
                .arg(said.remaining.map_or(-1, signed))
                .arg(said.reset.map_or(-1, millis))
                .arg(millis(said.reset_slack));
            self.inner.spawn("observe", inv);
        }
    }

    fn headroom(&self, budget: &str) -> Option<f64> {
        let g = self.inner.lock();
        let l = g.get(budget)?;
        let (used, slots) = l.seen;
        let mut h: f64 = 1.0;
        // The script answers for every axis it paces (a catalog's, or one a provider stated).
        for u in used {
            h = h.min(1.0 - u);
        }
        if let Some(c) = l.limits.concurrency {
            h = h.min(1.0 - slots as f64 / f64::from(c.max(1)));
        }
        Some(h.max(0.0))
    }
}

#[cfg(test)]
mod test_services;
#[cfg(test)]
mod tests;
