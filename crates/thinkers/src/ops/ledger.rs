//! [`CostLedger`]: model-call numbers of watched workflows, totalled per subtree of jobs.
//!
//! The dispatcher feeds the ledger through [`LedgerRecorder`], a recorder decorator that hands
//! every row to the recorder it wraps and keeps a copy of the lineage rows ([`JobStart`]) and
//! model-call rows ([`LlmRun`]) of the workflows someone asked to watch. A benchmark watches its
//! own workflow while it runs and asks for the totals of the subtree rooted at each run, so a
//! thinker's turn calls, its tools' calls and its sub-thinkers' calls all land on its row.
//!
//! Recording never blocks: each method takes one short lock and returns. Rows of workflows
//! nobody watches are passed on and not kept. A watch is a [`LedgerWatch`] guard; when the last
//! guard of a workflow drops, its rows are forgotten.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::job::JobId;
use crate::record::{CompactionRow, JobEnd, JobStart, LimitEvent, LlmRun, Recorder};

/// Totals of the model calls made by one job and every job below it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubtreeTotals {
    /// Model calls.
    pub calls: u64,
    /// Input tokens the providers reported, all of them (cache reads and writes included).
    pub input_tokens: u64,
    /// The part of `input_tokens` read from the providers' prompt caches (cache reads).
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the providers' prompt caches (cache writes).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Output tokens the providers reported.
    pub output_tokens: u64,
    /// Summed call latency in milliseconds.
    pub latency_ms: u64,
    /// Cost per currency (ISO code → amount) of the calls whose cost is known.
    pub cost: BTreeMap<String, f64>,
    /// Calls whose cost is unknown (their entry has no prices); not in [`Self::cost`], so with
    /// any of them the cost is at least that amount.
    #[serde(default)]
    pub unpriced_calls: u64,
    /// Calls per catalog entry that served them.
    pub entries: BTreeMap<String, u64>,
}

impl SubtreeTotals {
    fn add(&mut self, run: &LlmRun) {
        self.calls += 1;
        self.input_tokens += run.input_tokens;
        self.cache_read_tokens += run.cached_tokens;
        self.cache_write_tokens += run.cache_write_tokens;
        self.output_tokens += run.output_tokens;
        self.latency_ms += run.latency_ms;
        match run.cost {
            Some(cost) => *self.cost.entry(run.currency.clone()).or_insert(0.0) += cost,
            None => self.unpriced_calls += 1,
        }
        *self.entries.entry(run.entry.clone()).or_insert(0) += 1;
    }

    /// The entry that served most calls (the first in id order on a tie), if any call was made.
    pub(crate) fn main_entry(&self) -> Option<&str> {
        let mut best: Option<(&str, u64)> = None;
        for (entry, n) in &self.entries {
            if best.is_none_or(|(_, m)| *n > m) {
                best = Some((entry, *n));
            }
        }
        best.map(|(e, _)| e)
    }
}

#[derive(Default)]
struct State {
    /// Workflow → how many watches are open on it.
    watched: HashMap<JobId, usize>,
    /// Job → parent, for jobs of watched workflows.
    parents: HashMap<JobId, (JobId, Option<JobId>)>,
    /// Model calls of watched workflows.
    runs: Vec<LlmRun>,
}

/// Model-call numbers of the workflows being watched, attributed by job lineage. Register it as
/// a dispatcher service and feed it through [`LedgerRecorder`] (the runtime does both).
#[derive(Clone, Default)]
pub struct CostLedger {
    state: Arc<Mutex<State>>,
    /// Watches open on any workflow: while there are none, no row is wanted and none is built
    /// (read without the lock on every job start and model call).
    open: Arc<AtomicUsize>,
}

impl std::fmt::Debug for CostLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("CostLedger")
            .field("watched", &s.watched.len())
            .field("jobs", &s.parents.len())
            .field("runs", &s.runs.len())
            .finish()
    }
}

impl CostLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keep the rows of `workflow` until the returned guard (and every other guard on it) drops.
    /// Only rows that arrive after the call are kept.
    #[must_use = "the workflow is watched only while the guard lives"]
    pub fn watch(&self, workflow: JobId) -> LedgerWatch {
        let mut s = self.lock();
        *s.watched.entry(workflow).or_insert(0) += 1;
        self.open.fetch_add(1, Ordering::SeqCst);
        drop(s);
        LedgerWatch {
            ledger: self.clone(),
            workflow,
        }
    }

    /// Whether any watch is open on any workflow.
    pub(crate) fn is_watching_any(&self) -> bool {
        self.open.load(Ordering::SeqCst) > 0
    }

    /// Whether any watch is open on `workflow`.
    #[cfg(test)]
    pub(crate) fn is_watching(&self, workflow: JobId) -> bool {
        self.lock().watched.contains_key(&workflow)
    }

    /// The totals of the calls made by `root` and every job below it (kept while watched).
    pub(crate) fn subtree(&self, root: JobId) -> SubtreeTotals {
        let s = self.lock();
        let mut totals = SubtreeTotals::default();
        // Whether a job lies under `root`, memoised along each walk up the lineage.
        let mut under: HashMap<JobId, bool> = HashMap::new();
        for run in &s.runs {
            if is_under(&s.parents, &mut under, run.job, root) {
                totals.add(run);
            }
        }
        totals
    }

    fn unwatch(&self, workflow: JobId) {
        let mut s = self.lock();
        let left = match s.watched.get_mut(&workflow) {
            Some(n) => {
                *n = n.saturating_sub(1);
                self.open.fetch_sub(1, Ordering::SeqCst);
                *n
            }
            None => return,
        };
        if left == 0 {
            s.watched.remove(&workflow);
            s.parents.retain(|_, (w, _)| *w != workflow);
            s.runs.retain(|r| r.workflow != workflow);
        }
    }

    fn job_started(&self, row: &JobStart) {
        let mut s = self.lock();
        if s.watched.contains_key(&row.workflow) {
            s.parents.insert(row.id, (row.workflow, row.parent));
        }
    }

    fn llm_run(&self, row: &LlmRun) {
        let mut s = self.lock();
        if s.watched.contains_key(&row.workflow) {
            s.runs.push(row.clone());
        }
    }
}

/// Whether `job` is `root` or lies below it. Unknown jobs (started before the watch) end a walk.
fn is_under(
    parents: &HashMap<JobId, (JobId, Option<JobId>)>,
    memo: &mut HashMap<JobId, bool>,
    job: JobId,
    root: JobId,
) -> bool {
    let mut path = Vec::new();
    let mut at = Some(job);
    let found = loop {
        let Some(id) = at else { break false };
        if id == root {
            break true;
        }
        if let Some(known) = memo.get(&id) {
            break *known;
        }
        path.push(id);
        at = parents.get(&id).and_then(|(_, p)| *p);
    };
    for id in path {
        memo.insert(id, found);
    }
    found
}

/// Keeps a workflow watched; see [`CostLedger::watch`].
#[derive(Debug)]
pub struct LedgerWatch {
    ledger: CostLedger,
    workflow: JobId,
}

impl Drop for LedgerWatch {
    fn drop(&mut self) {
        self.ledger.unwatch(self.workflow);
    }
}

/// A recorder that feeds a [`CostLedger`] and forwards every row to the recorder it wraps.
pub struct LedgerRecorder {
    inner: Arc<dyn Recorder>,
    ledger: CostLedger,
}

impl std::fmt::Debug for LedgerRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerRecorder")
            .field("ledger", &self.ledger)
            .finish_non_exhaustive()
    }
}

impl LedgerRecorder {
    /// Feed `ledger`, then pass every row on to `inner`.
    pub fn new(inner: Arc<dyn Recorder>, ledger: CostLedger) -> Self {
        Self { inner, ledger }
    }

    /// The ledger fed.
    pub fn ledger(&self) -> &CostLedger {
        &self.ledger
    }
}

impl Recorder for LedgerRecorder {
    fn job_started(&self, row: JobStart) {
        if self.ledger.is_watching_any() {
            self.ledger.job_started(&row);
        }
        self.inner.job_started(row);
    }

    fn job_finished(&self, row: JobEnd) {
        self.inner.job_finished(row);
    }

    fn llm_run(&self, row: LlmRun) {
        if self.ledger.is_watching_any() {
            self.ledger.llm_run(&row);
        }
        self.inner.llm_run(row);
    }

    fn llm_run_durable(&self, row: LlmRun) -> BoxFuture<'_, crate::Result<()>> {
        if self.ledger.is_watching_any() {
            self.ledger.llm_run(&row);
        }
        self.inner.llm_run_durable(row)
    }

    fn compaction(&self, row: CompactionRow) {
        self.inner.compaction(row);
    }

    fn limit_event(&self, row: LimitEvent) {
        self.inner.limit_event(row);
    }

    fn flush(&self) -> BoxFuture<'_, crate::Result<()>> {
        self.inner.flush()
    }

    fn close(&self) -> BoxFuture<'_, crate::Result<()>> {
        self.inner.close()
    }

    fn unwritten(&self) -> u64 {
        self.inner.unwritten()
    }

    /// Rows are wanted while the wrapped recorder keeps them or a workflow is watched.
    fn keeps_rows(&self) -> bool {
        self.inner.keeps_rows() || self.ledger.is_watching_any()
    }
}

/// Whether every id in `ids` was seen by the ledger (for tests of the lineage bookkeeping).
#[cfg(test)]
fn knows(ledger: &CostLedger, ids: &[JobId]) -> bool {
    let s = ledger.lock();
    let known: std::collections::HashSet<_> = s.parents.keys().copied().collect();
    ids.iter().all(|id| known.contains(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::MemoryRecorder;

    fn start(id: JobId, parent: Option<JobId>, workflow: JobId) -> JobStart {
        JobStart {
            id,
            parent,
            workflow,
            class: "c".into(),
            ordinal: None,
            started_at_ms: 0,
        }
    }

    fn run(job: JobId, workflow: JobId, entry: &str, cost: f64, currency: &str) -> LlmRun {
        LlmRun {
            job,
            workflow,
            entry: entry.into(),
            input_tokens: 10,
            cached_tokens: 4,
            cache_write_tokens: 1,
            output_tokens: 5,
            latency_ms: 7,
            cost: Some(cost),
            currency: currency.into(),
            ..LlmRun::default()
        }
    }

    #[test]
    fn calls_of_descendants_land_on_the_subtree_and_siblings_stay_apart() {
        let ledger = CostLedger::new();
        let inner = MemoryRecorder::new();
        let rec = LedgerRecorder::new(Arc::new(inner.clone()), ledger.clone());
        let wf = JobId::new();
        let guard = ledger.watch(wf);
        let (bench, a, a_tool, a_sub, b) = (
            JobId::new(),
            JobId::new(),
            JobId::new(),
            JobId::new(),
            JobId::new(),
        );
        rec.job_started(start(bench, Some(wf), wf));
        rec.job_started(start(a, Some(bench), wf));
        rec.job_started(start(a_tool, Some(a), wf));
        rec.job_started(start(a_sub, Some(a_tool), wf));
        rec.job_started(start(b, Some(bench), wf));
        rec.llm_run(run(a, wf, "x", 1.0, "USD"));
        rec.llm_run(run(a_sub, wf, "x", 2.0, "USD"));
        rec.llm_run(run(a_tool, wf, "y", 0.5, "EUR"));
        rec.llm_run(run(b, wf, "y", 4.0, "EUR"));
        // A call to an entry without prices: counted, its cost unknown, never added as 0.
        rec.llm_run(LlmRun {
            cost: None,
            ..run(b, wf, "unpriced", 0.0, "")
        });
        assert!(knows(&ledger, &[bench, a, a_tool, a_sub, b]));

        let ta = ledger.subtree(a);
        assert_eq!(ta.calls, 3);
        assert_eq!(ta.input_tokens, 30);
        assert_eq!((ta.cache_read_tokens, ta.cache_write_tokens), (12, 3));
        assert_eq!(ta.output_tokens, 15);
        assert_eq!(ta.latency_ms, 21);
        assert_eq!(ta.cost["USD"], 3.0);
        assert_eq!(ta.cost["EUR"], 0.5);
        assert_eq!((ta.main_entry(), ta.unpriced_calls), (Some("x"), 0));
        let tb = ledger.subtree(b);
        assert_eq!((tb.calls, tb.cost["EUR"], tb.unpriced_calls), (2, 4.0, 1));
        assert_eq!(tb.cost.len(), 1, "{tb:?}");
        assert_eq!(ledger.subtree(bench).calls, 5);
        // Everything reached the wrapped recorder too.
        assert_eq!(inner.jobs().len(), 5);
        assert_eq!(inner.llm_runs().len(), 5);

        drop(guard);
        assert!(!ledger.is_watching(wf));
        assert_eq!(ledger.subtree(bench).calls, 0);
    }

    #[test]
    fn unwatched_workflows_are_passed_on_and_not_kept() {
        let ledger = CostLedger::new();
        let inner = MemoryRecorder::new();
        let rec = LedgerRecorder::new(Arc::new(inner.clone()), ledger.clone());
        let wf = JobId::new();
        rec.job_started(start(wf, None, wf));
        rec.llm_run(run(wf, wf, "x", 1.0, "USD"));
        assert_eq!(ledger.subtree(wf).calls, 0);
        assert!(!knows(&ledger, &[wf]));
        assert_eq!(inner.llm_runs().len(), 1);
    }

    #[test]
    fn a_workflow_stays_watched_until_its_last_guard_drops() {
        let ledger = CostLedger::new();
        let wf = JobId::new();
        let g1 = ledger.watch(wf);
        let g2 = ledger.watch(wf);
        drop(g1);
        assert!(ledger.is_watching(wf));
        drop(g2);
        assert!(!ledger.is_watching(wf));
    }

    #[test]
    fn rows_are_wanted_only_while_a_watch_is_open_or_the_inner_recorder_keeps_them() {
        let ledger = CostLedger::new();
        let rec = LedgerRecorder::new(Arc::new(crate::record::NoopRecorder), ledger.clone());
        assert!(!rec.keeps_rows());
        let (w1, w2) = (JobId::new(), JobId::new());
        let g1 = ledger.watch(w1);
        let g2 = ledger.watch(w2);
        assert!(rec.keeps_rows());
        drop(g1);
        assert!(rec.keeps_rows() && ledger.is_watching_any());
        drop(g2);
        assert!(!rec.keeps_rows() && !ledger.is_watching_any());
        let keeping = LedgerRecorder::new(Arc::new(MemoryRecorder::new()), ledger);
        assert!(keeping.keeps_rows());
    }
}
