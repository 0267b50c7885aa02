//! What admission met, for the record ([`LimitEvent`]): each throttle a call waited out, and a
//! budget's standing rate per axis ([`BudgetStore::rates`]) whenever it may have changed (after
//! a model call's answer fed its headers back, after a throttle paused the budget).
//!
//! A rate is recorded the first time a budget is seen in the process (its starting figure,
//! before the first answer or throttle changes it), then when an axis's rate moved by more than
//! [`MATERIAL`] of the last figure recorded for it, or its source changed. The last recorded
//! figures live here, one [`LimitLog`] per dispatcher, so as long as the runtime. A budget store
//! that cannot tell its rates (the Redis store) records throttles only.
//!
//! A model call's throttle reaches the attempt loop with the wait the client let through (at
//! most its `max_retry_wait`): the call notes the entry and the wait the provider asked first
//! ([`LimitLog::model_throttle`]), and the loop records the event with the wait it applied.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::budget::{Axis, AxisRate, BudgetStore, RateSource};
use crate::job::{JobContext, JobId};
use crate::record::{LimitEvent, LimitEventKind, now_ms, one_line, status_in};

/// The relative change of an axis's rate that is recorded (1 %).
pub(crate) const MATERIAL: f64 = 0.01;

/// The most model throttles noted and not yet taken by the attempt loop (a job that swallowed
/// its throttle leaves its note behind); past it the notes are dropped.
const MAX_PENDING: usize = 1024;

/// A model call's throttle on its way to the attempt loop.
struct Pending {
    entry: Arc<str>,
    asked: Option<Duration>,
}

#[derive(Default)]
struct State {
    /// Per budget, the last recorded rate and source of each axis.
    last: HashMap<Arc<str>, Vec<(Axis, f64, RateSource)>>,
    /// Per job, its model call's throttle (see the module docs).
    pending: HashMap<JobId, Pending>,
    /// The entry of each model budget seen, for the events the attempt loop records.
    entries: HashMap<Arc<str>, Arc<str>>,
}

/// The last recorded standing of each budget, and model throttles in flight. See the module
/// docs.
#[derive(Default)]
pub struct LimitLog {
    state: Mutex<State>,
}

impl std::fmt::Debug for LimitLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitLog").finish_non_exhaustive()
    }
}

fn source_name(source: RateSource) -> &'static str {
    match source {
        RateSource::Catalog => "catalog",
        RateSource::Header => "header",
        RateSource::Throttle => "throttle",
    }
}

/// Whether `now` differs enough from the last recorded `(rate, source)` to be recorded.
fn material(last: Option<(f64, RateSource)>, now: &AxisRate) -> bool {
    match last {
        None => true,
        Some((_, source)) if source != now.source => true,
        Some((rate, _)) => (now.per_minute - rate).abs() > MATERIAL * rate.abs(),
    }
}

impl LimitLog {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Record the budget's first standing if it was never recorded (before an answer or a
    /// throttle may change it); nothing otherwise.
    pub fn first_standing(
        &self,
        store: &dyn BudgetStore,
        budget: &str,
        entry: Option<&str>,
        cx: &JobContext,
    ) {
        if !cx.recorder().keeps_rows() || self.lock().last.contains_key(budget) {
            return;
        }
        self.standing(store, budget, entry, cx);
    }

    /// Record each axis of the budget whose standing changed materially since it was last
    /// recorded (every axis the first time).
    pub fn standing(
        &self,
        store: &dyn BudgetStore,
        budget: &str,
        entry: Option<&str>,
        cx: &JobContext,
    ) {
        let recorder = cx.recorder();
        if !recorder.keeps_rows() {
            return;
        }
        let rates = store.rates(budget);
        let mut events = Vec::new();
        {
            let mut state = self.lock();
            let entry: Option<Arc<str>> = match entry {
                Some(e) => {
                    let e: Arc<str> = Arc::from(e);
                    if !state.entries.contains_key(budget) {
                        state.entries.insert(Arc::from(budget), Arc::clone(&e));
                    }
                    Some(e)
                }
                None => state.entries.get(budget).cloned().or_else(|| {
                    let noted = state.pending.get(&cx.id());
                    noted.map(|n| Arc::clone(&n.entry))
                }),
            };
            if !state.last.contains_key(budget) {
                state.last.insert(Arc::from(budget), Vec::new());
            }
            let Some(last) = state.last.get_mut(budget) else {
                return;
            };
            let at_ms = now_ms();
            for rate in rates {
                let known = last.iter_mut().find(|(axis, ..)| *axis == rate.axis);
                if !material(known.as_ref().map(|(_, r, s)| (*r, *s)), &rate) {
                    continue;
                }
                match known {
                    Some(known) => *known = (rate.axis, rate.per_minute, rate.source),
                    None => last.push((rate.axis, rate.per_minute, rate.source)),
                }
                events.push(LimitEvent {
                    at_ms,
                    budget: budget.to_owned(),
                    entry: entry.as_deref().map(str::to_owned),
                    job: cx.id(),
                    workflow: cx.workflow(),
                    kind: LimitEventKind::Rate {
                        axis: rate.axis.as_str().to_owned(),
                        per_minute: rate.per_minute,
                        catalog_per_minute: rate.catalog_per_minute,
                        source: source_name(rate.source).to_owned(),
                    },
                });
            }
        }
        for event in events {
            recorder.limit_event(event);
        }
    }

    /// A model call of the job `job` on `entry` was throttled; the provider asked to wait
    /// `asked` (before the client's cap). Taken by the attempt loop when it records the throttle.
    pub fn model_throttle(&self, job: JobId, entry: &str, asked: Option<Duration>) {
        let mut state = self.lock();
        if state.pending.len() >= MAX_PENDING {
            state.pending.clear();
        }
        state.pending.insert(
            job,
            Pending {
                entry: Arc::from(entry),
                asked,
            },
        );
    }

    /// The job's call was throttled on `budget`, whose admission is paused for `waited` (what
    /// the attempt loop waits; call [`Self::first_standing`] before the pause): record the
    /// throttle (the wait asked, from the model call's note or else `retry_after`; the wait
    /// applied; the detail on one line), then the axes the pause changed.
    pub(crate) fn throttled(
        &self,
        store: &dyn BudgetStore,
        budget: &str,
        retry_after: Option<Duration>,
        waited: Duration,
        detail: Option<&str>,
        cx: &JobContext,
    ) {
        let noted = self.lock().pending.remove(&cx.id());
        if !cx.recorder().keeps_rows() {
            return;
        }
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let entry = match noted.as_ref() {
            Some(n) => Some(n.entry.to_string()),
            None => self.lock().entries.get(budget).map(|e| e.to_string()),
        };
        let asked = noted.map_or(retry_after, |n| n.asked);
        cx.recorder().limit_event(LimitEvent {
            at_ms: now_ms(),
            budget: budget.to_owned(),
            entry: entry.clone(),
            job: cx.id(),
            workflow: cx.workflow(),
            kind: LimitEventKind::Throttle {
                status: detail.and_then(status_in),
                asked_ms: asked.map(millis),
                waited_ms: millis(waited),
                detail: detail.map(one_line),
            },
        });
        self.standing(store, budget, entry.as_deref(), cx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(per_minute: f64, source: RateSource) -> AxisRate {
        AxisRate {
            axis: Axis::Tokens,
            per_minute,
            catalog_per_minute: Some(1_000.0),
            source,
        }
    }

    #[test]
    fn a_change_is_material_past_a_percent_or_with_a_new_source() {
        let r = |p| rate(p, RateSource::Catalog);
        assert!(material(None, &r(1_000.0)));
        assert!(!material(Some((1_000.0, RateSource::Catalog)), &r(1_009.0)));
        assert!(material(Some((1_000.0, RateSource::Catalog)), &r(1_011.0)));
        assert!(material(Some((1_000.0, RateSource::Catalog)), &r(989.0)));
        assert!(material(
            Some((1_000.0, RateSource::Catalog)),
            &rate(1_000.0, RateSource::Header)
        ));
    }
}
