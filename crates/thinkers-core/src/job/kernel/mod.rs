//! The dispatcher's kernel: the one door every job goes through, admission against the budgets,
//! and the attempt loop. It has no I/O of its own: budgets shared between processes, the store
//! and the model clients plug in behind [`BudgetStore`], [`Recorder`] and the [`Services`] jobs
//! find.
//!
//! It lives beside the job contract because it is the only code that makes what
//! [`Job::execute`](super::Job::execute) is handed: a [`JobContext`] is made at the submission
//! door, and [`Resources`](super::Resources) only around a [`Permit`] admission minted, so neither
//! can be built anywhere else (`thinkers/tests/compile_fail/`).
//!
//! [`Dispatcher::submit`] (for a root job) and the [`JobContext`] doors (for children) pass
//! through the *submission door*, which assigns the job id, links the parent and workflow, seals
//! the parent's [`ScopeGuard`] onto the child (or a narrower one, [`ScopeGuard::narrow_to`]),
//! stamps the step ordinal and records the start row. The job then runs on its own task (or, for
//! a child its caller awaits at once and alone, inside the caller's task:
//! [`FanOut::run`](crate::job::context::FanOut::run)) through the attempt loop in `run.rs`:
//!
//! 1. ask the job for its requirements (fresh each attempt);
//! 2. wait for [`Admission`] to grant them (FIFO per budget, never over a limit);
//! 3. execute with the granted [`Resources`](super::Resources), under the job's timeout, with
//!    panics caught;
//! 4. settle the permit (reconcile used tokens, release concurrency);
//! 5. on a retry signal, loop: throttling waits and re-admits, a correction re-runs the same
//!    instance at once, a truncation escalation re-runs once at the ceiling, a transient failure
//!    backs off, a refused form re-runs at once in the form the job chose next. Each has its own
//!    bound; none is ever recorded as a failure (the job's row counts the attempts).
//!
//! Cancelling a job (through its [`JobHandle`]) cancels every descendant; their permits are
//! released as their tasks unwind. A job that ends without output (failed, cancelled, timed
//! out), and a root job however it ends, cancels whatever still runs under it, each recording
//! why (`cancelled because …`), so nothing of a workflow runs on after it ended.
//! [`Dispatcher::shutdown`] cancels everything. Every job's end is recorded, failed and
//! cancelled ones included.

mod admission;
pub mod bucket;
pub mod budget;
mod limit_log;
mod run;
mod span;

pub use admission::{Admission, Permit};
pub use budget::{
    Axis, AxisObservation, AxisRate, BudgetStore, Lease, MemoryBudgets, RateObservation,
    RateSource, Reservation,
};
pub use limit_log::LimitLog;
pub use span::{JOB_SPAN, unless_disabled};

use std::borrow::Cow;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::context::JobNode;
use super::{Job, JobContext, JobHandle, Limits, ScopeGuard, Services};
use crate::record::{JobStart, NoopRecorder, Recorder};

/// The largest job future spawned as it is; a larger one is boxed first (see
/// [`Dispatcher::spawn`]).
const SPAWN_INLINE_BYTES: usize = 1024;

/// Bounds and waits of the attempt loop. Each retry kind has its own bound.
#[derive(Debug, Clone)]
pub struct DispatchConfig {
    /// Attempts of one job, all kinds together.
    pub max_attempts: u32,
    /// Throttling waits of one job.
    pub max_throttles: u32,
    /// Transient-failure retries of one job.
    pub max_transient_retries: u32,
    /// Retries of one job whose answer came back unreadable (each pays for the answer again).
    pub max_unreadable_answers: u32,
    /// Retries of one job whose request form a service refused, each in another form
    /// ([`crate::RetrySignal::FormRefused`]: a model call steps through at most two answer
    /// formats and one way of streaming).
    pub max_form_refusals: u32,
    /// The wait after a throttle that named no retry-after (doubled each time).
    pub throttle_backoff: Duration,
    /// The first backoff after a transient failure (doubled each time).
    pub transient_backoff: Duration,
    /// The longest wait a server (a model provider or a service tool's) may ask for before a
    /// retry; a longer `Retry-After` is waited for this long.
    pub max_server_wait: Duration,
}

/// The default cap on a wait a server asks for (`Retry-After`), for model calls and service tools.
pub const DEFAULT_MAX_SERVER_WAIT: Duration = Duration::from_secs(60);

impl Default for DispatchConfig {
    fn default() -> Self {
        Self {
            max_attempts: 32,
            max_throttles: 8,
            max_transient_retries: 3,
            max_unreadable_answers: 1,
            max_form_refusals: 3,
            throttle_backoff: Duration::from_secs(1),
            transient_backoff: Duration::from_millis(200),
            max_server_wait: DEFAULT_MAX_SERVER_WAIT,
        }
    }
}

struct DispatcherInner {
    admission: Admission,
    recorder: Arc<dyn Recorder>,
    services: Services,
    config: DispatchConfig,
    /// What admission met, for the record (the last recorded standing of each budget).
    limit_log: LimitLog,
    /// Every root job's token hangs from it: [`Dispatcher::shutdown`] cancels it.
    root: CancellationToken,
    /// Why [`Dispatcher::shutdown`] cancelled everything, once it has.
    stop_reason: OnceLock<Arc<str>>,
    /// The tasks of every job that runs on a task of its own.
    tasks: TaskTracker,
}

/// Runs jobs: admission, retries, timeouts, cancellation, recording. Cheap to clone.
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<DispatcherInner>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Dispatcher`].
pub struct DispatcherBuilder {
    store: Arc<dyn BudgetStore>,
    recorder: Arc<dyn Recorder>,
    services: Services,
    config: DispatchConfig,
}

impl std::fmt::Debug for DispatcherBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DispatcherBuilder").finish_non_exhaustive()
    }
}

impl Default for DispatcherBuilder {
    fn default() -> Self {
        Self {
            store: Arc::new(MemoryBudgets::new()),
            recorder: Arc::new(NoopRecorder),
            services: Services::default(),
            config: DispatchConfig::default(),
        }
    }
}

impl DispatcherBuilder {
    /// Use this budget store (default: in-process [`MemoryBudgets`]).
    #[must_use]
    pub fn budgets(mut self, store: Arc<dyn BudgetStore>) -> Self {
        self.store = store;
        self
    }

    /// Configure a budget's limits.
    #[must_use]
    pub fn budget(self, name: &str, limits: Limits) -> Self {
        self.store.configure(name, limits);
        self
    }

    /// Record through this recorder (default: none).
    #[must_use]
    pub fn recorder(mut self, recorder: Arc<dyn Recorder>) -> Self {
        self.recorder = recorder;
        self
    }

    /// Register a shared service jobs can look up by type.
    #[must_use]
    pub fn service<T: Send + Sync + 'static>(mut self, service: Arc<T>) -> Self {
        self.services.insert(service);
        self
    }

    /// Register every service of `services` (replacing ones of the same types).
    #[must_use]
    pub fn services(mut self, services: Services) -> Self {
        self.services.extend(services);
        self
    }

    /// Replace the retry bounds.
    #[must_use]
    pub fn config(mut self, config: DispatchConfig) -> Self {
        self.config = config;
        self
    }

    /// Build the dispatcher.
    pub fn build(self) -> Dispatcher {
        Dispatcher {
            inner: Arc::new(DispatcherInner {
                admission: Admission::new(self.store),
                recorder: self.recorder,
                services: self.services,
                config: self.config,
                limit_log: LimitLog::default(),
                root: CancellationToken::new(),
                stop_reason: OnceLock::new(),
                tasks: TaskTracker::new(),
            }),
        }
    }
}

impl Dispatcher {
    /// A builder.
    pub fn builder() -> DispatcherBuilder {
        DispatcherBuilder::default()
    }

    /// Submit a root job: it starts a new workflow whose id is the job's id.
    pub fn submit<J: Job>(&self, job: J) -> JobHandle<J::Output> {
        self.spawn(job, None, None, None)
    }

    /// Submit a root job in a scope (identity axes, read-only binding).
    pub fn submit_scoped<J: Job>(&self, job: J, scope: ScopeGuard) -> JobHandle<J::Output> {
        self.spawn(job, None, None, Some(Arc::new(scope)))
    }

    /// Submit a root job and wait for its output.
    pub async fn run<J: Job>(&self, job: J) -> crate::Result<J::Output> {
        self.submit(job).await
    }

    /// The admission gate.
    pub fn admission(&self) -> &Admission {
        &self.inner.admission
    }

    /// The recorder.
    pub fn recorder(&self) -> &Arc<dyn Recorder> {
        &self.inner.recorder
    }

    /// Shared services.
    pub fn services(&self) -> &Services {
        &self.inner.services
    }

    /// The retry bounds.
    pub fn config(&self) -> &DispatchConfig {
        &self.inner.config
    }

    /// What admission met, for the record: the budgets' standings and the throttles met, as
    /// [`LimitEvent`](crate::record::LimitEvent) rows.
    pub fn limit_log(&self) -> &LimitLog {
        &self.inner.limit_log
    }

    /// Cancel every job this dispatcher runs (each records its end as `cancelled`, naming
    /// `reason`), refuse new work the same way, and wait at most `grace` for the jobs' tasks to
    /// end. Returns how many tasks were still running when the wait ended (0 when all ended).
    /// Flush or close the recorder after it, so the ends are stored.
    pub async fn shutdown(&self, reason: &str, grace: Duration) -> usize {
        let _ = self.inner.stop_reason.set(Arc::from(reason));
        self.inner.root.cancel();
        self.inner.tasks.close();
        if tokio::time::timeout(grace, self.inner.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                running = self.inner.tasks.len(),
                ?grace,
                "dispatcher shutdown: jobs still running after the grace period"
            );
        }
        self.inner.tasks.len()
    }

    /// How many jobs run on tasks of their own now.
    pub fn running_tasks(&self) -> usize {
        self.inner.tasks.len()
    }

    /// Why [`Self::shutdown`] stopped every job, once it has.
    pub(crate) fn stop_reason(&self) -> Option<Arc<str>> {
        self.inner.stop_reason.get().cloned()
    }

    /// The submission door. A child's `scope` is its parent's sealed one or narrower: the only
    /// callers are the [`JobContext`] doors, and the one that takes a scope
    /// ([`FanOut::narrowed`](crate::job::context::FanOut::narrowed)) narrows the parent's ([`ScopeGuard::narrow_to`]).
    pub(crate) fn spawn<J: Job>(
        &self,
        job: J,
        parent: Option<&JobContext>,
        ordinal: Option<u32>,
        scope: Option<Arc<ScopeGuard>>,
    ) -> JobHandle<J::Output> {
        let cancel = parent.map_or_else(
            || self.inner.root.child_token(),
            |p| p.node.cancel_token().child_token(),
        );
        let cx = self.admit_job(job.class(), parent, ordinal, scope, Some(cancel));
        // A large future is boxed first: tokio keeps a spawned future inline in its task cell
        // and copies that whole cell as the task is created and as it finishes, which for a
        // thinker (several KiB, with its model call inline) cost more than the box.
        let run = run::run(job, cx.clone(), run::Watch::Token);
        let task = if std::mem::size_of_val(&run) > SPAWN_INLINE_BYTES {
            self.inner.tasks.spawn(Box::pin(run))
        } else {
            self.inner.tasks.spawn(run)
        };
        JobHandle::new(cx, task)
    }

    /// The submission door for a child run in its caller's own task (see
    /// [`FanOut::run`](crate::job::context::FanOut::run)): the same record, lineage, scope and attempt loop as
    /// [`Self::spawn`], without a task of its own. Dropping the future cancels the child, and its
    /// end is recorded as cancelled.
    pub(crate) fn run_here<J: Job>(
        &self,
        job: J,
        parent: &JobContext,
        ordinal: Option<u32>,
        scope: Option<Arc<ScopeGuard>>,
    ) -> impl Future<Output = crate::Result<J::Output>> + Send + 'static {
        // Its token is made only if something needs it (see `JobNode::cancel_token`). The start
        // is recorded now, so the guard that records a drop as cancelled is armed now too: a
        // future dropped before its first poll still ends its row.
        let cx = self.admit_job(job.class(), Some(parent), ordinal, scope, None);
        let mut unfinished = run::Unfinished::new(cx.clone());
        async move {
            let out = run::run(job, cx, run::Watch::Caller).await;
            unfinished.disarm();
            out
        }
    }

    /// Assign the id, link the parent and workflow, seal the scope, stamp the ordinal and record
    /// the start row.
    fn admit_job(
        &self,
        class: Cow<'static, str>,
        parent: Option<&JobContext>,
        ordinal: Option<u32>,
        scope: Option<Arc<ScopeGuard>>,
        cancel: Option<CancellationToken>,
    ) -> JobContext {
        let scope = scope
            .or_else(|| parent.map(|p| p.node.scope.clone()))
            .unwrap_or_default();
        let node = Arc::new(JobNode::new(
            class,
            parent,
            ordinal,
            scope,
            self.clone(),
            cancel,
        ));
        if self.inner.recorder.keeps_rows() {
            self.inner.recorder.job_started(JobStart {
                id: node.id,
                parent: node.parent,
                workflow: node.workflow,
                class: node.class.to_string(),
                ordinal,
                started_at_ms: crate::record::now_ms(),
            });
        }
        JobContext { node }
    }
}
