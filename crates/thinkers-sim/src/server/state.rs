//! The state shared by every request: models and their windows, counters, injected faults, the
//! script, the request log.
//!
//! Locks are `std::sync::Mutex`es held for a few field updates and never across an await.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use tokio::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::cache::{CacheUse, Prompt, PromptCache};
use crate::config::{Profile, SimConfig, SimModel};
use crate::fault::{FaultQueue, FaultRule};
use crate::limits::{Cost, Limits, RateState, Refusal, Ticket, Window};
use crate::script::ScriptRunner;
use crate::seeding::Signer;
use crate::stats::{LoggedRequest, Stats, StatsSnapshot};

/// A poisoned lock only means another request panicked mid-update; the counters stay usable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One served model.
#[derive(Debug)]
pub(crate) struct ModelSlot {
    pub(crate) model: SimModel,
    pub(crate) profile: Profile,
    pub(crate) window: Mutex<Window>,
    pub(crate) ordinal: AtomicU64,
    pub(crate) cache: Mutex<PromptCache>,
}

impl ModelSlot {
    fn new(model: SimModel, default_profile: &Profile) -> Self {
        let profile = model
            .profile
            .clone()
            .unwrap_or_else(|| default_profile.clone());
        let limits = Limits {
            rpm: model.rpm,
            tpm: model.tpm,
            itpm: model.itpm,
            otpm: model.otpm,
            max_concurrency: model.max_concurrency,
            shape: model.limit_shape,
            window: model.limit_window_duration(),
        };
        let cache = Mutex::new(PromptCache::new(model.cache_settings()));
        Self {
            model,
            profile,
            window: Mutex::new(Window::new(limits, Instant::now())),
            ordinal: AtomicU64::new(0),
            cache,
        }
    }

    /// What `prompt` (of `total` input tokens) would read and write in the model's cache now.
    pub(crate) fn cache_peek(&self, prompt: &Prompt, total: u64) -> CacheUse {
        lock(&self.cache).peek(prompt, total, Instant::now())
    }

    /// Reads and writes `prompt`'s prefixes in the model's cache.
    pub(crate) fn cache_commit(&self, prompt: &Prompt, total: u64) -> CacheUse {
        lock(&self.cache).commit(prompt, total, Instant::now())
    }

    /// Admits a request costing `cost` against the model's limits. The admission is held until
    /// the [`Admission`] is dropped: while it lives the request is in flight.
    pub(crate) fn admit(self: &Arc<Self>, cost: Cost) -> Result<Admission, Box<Refusal>> {
        let ticket = lock(&self.window).admit(Instant::now(), cost)?;
        Ok(Admission {
            slot: Arc::clone(self),
            ticket,
        })
    }
}

/// A request admitted against its model's limits, in flight until dropped.
#[derive(Debug)]
pub(crate) struct Admission {
    slot: Arc<ModelSlot>,
    ticket: Ticket,
}

impl Admission {
    /// The requests in flight for the model once this one was admitted.
    pub(crate) fn in_flight(&self) -> u64 {
        self.ticket.in_flight
    }

    /// Settles the request's charge to what it really cost, and returns the limits' state after
    /// it (`None` when the model has no per-minute limit to report).
    pub(crate) fn settle(&self, actual: Cost) -> Option<RateState> {
        let state = lock(&self.slot.window).settle(Instant::now(), self.ticket.id, actual);
        state.any().then_some(state)
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        lock(&self.slot.window).finish(self.ticket.id, self.ticket.generation);
    }
}

/// Everything the handlers share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) seed: u64,
    pub(crate) hang_ms: u64,
    pub(crate) log_bodies: bool,
    accept_any_model: bool,
    default_profile: Profile,
    models: RwLock<HashMap<String, Arc<ModelSlot>>>,
    pub(crate) script: Option<ScriptRunner>,
    pub(crate) faults: Mutex<FaultQueue>,
    pub(crate) stats: Mutex<Stats>,
    pub(crate) log: Mutex<Vec<LoggedRequest>>,
    pub(crate) signer: Signer,
    pub(crate) shutdown: CancellationToken,
}

impl Shared {
    pub(crate) fn new(config: SimConfig, shutdown: CancellationToken) -> Self {
        let default_profile = config.default_profile.clone().unwrap_or_default();
        let accept_any_model = config.accepts_any_model();
        let models = config
            .models
            .into_iter()
            .map(|m| {
                let name = m.name.clone();
                (name, Arc::new(ModelSlot::new(m, &default_profile)))
            })
            .collect();
        Self {
            seed: config.seed,
            hang_ms: config.hang_ms,
            log_bodies: config.log_bodies,
            accept_any_model,
            default_profile,
            models: RwLock::new(models),
            script: config.script.map(ScriptRunner::new),
            faults: Mutex::new(FaultQueue::default()),
            stats: Mutex::new(Stats::default()),
            log: Mutex::new(Vec::new()),
            signer: Signer::new(config.seed),
            shutdown,
        }
    }

    /// The slot of a model, created on first use when unknown models are accepted.
    pub(crate) fn model(&self, name: &str) -> Option<Arc<ModelSlot>> {
        if let Some(slot) = self
            .models
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
        {
            return Some(Arc::clone(slot));
        }
        if !self.accept_any_model || name.is_empty() {
            return None;
        }
        let mut models = self
            .models
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let slot = models.entry(name.to_owned()).or_insert_with(|| {
            Arc::new(ModelSlot::new(SimModel::new(name), &self.default_profile))
        });
        Some(Arc::clone(slot))
    }

    /// The names of the configured (and so far accepted) models, sorted.
    pub(crate) fn model_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .models
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    pub(crate) fn stats(&self) -> StatsSnapshot {
        lock(&self.stats).snapshot()
    }

    pub(crate) fn requests(&self) -> Vec<LoggedRequest> {
        lock(&self.log).clone()
    }

    pub(crate) fn inject(&self, rule: FaultRule) {
        lock(&self.faults).push(rule);
    }

    pub(crate) fn pending_faults(&self) -> Vec<FaultRule> {
        lock(&self.faults).pending()
    }

    /// Back to a freshly started state: counters, log, windows, prompt caches, ordinals, injected
    /// faults and script use counts.
    pub(crate) fn reset(&self) {
        lock(&self.stats).clear();
        lock(&self.log).clear();
        lock(&self.faults).clear();
        if let Some(script) = &self.script {
            script.reset();
        }
        let models = self
            .models
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        for slot in models.values() {
            lock(&slot.window).clear(now);
            lock(&slot.cache).clear();
            slot.ordinal.store(0, Ordering::Release);
        }
    }
}
