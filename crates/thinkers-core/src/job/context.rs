//! The context a job runs in, and the step-ordinal contract for the children it submits.
//!
//! Every child a doer spawns carries its position in the doer's execution order, stored in the
//! child's metadata under [`META_ITERATION`] and in its job row, so the trajectory can be rebuilt.
//! There are two doors, and both stamp the ordinal:
//!
//! * [`JobContext::submit`] runs a child as the next step, so back-to-back calls get 1, 2, 3;
//! * [`JobContext::fan_out`] claims the next step for children that run side by side: each child
//!   submitted through the returned [`FanOut`] shares its ordinal. A fan-out can be narrowed
//!   ([`FanOut::narrowed`]) so its children run under a narrower scope.
//!
//! A thinker does the same automatically: each turn is one fan-out, and the turn's model call and
//! every tool call of that turn share its ordinal.
//!
//! The trajectory is a tree: walk parent links depth-first and order each parent's children by
//! (ordinal, start time).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio_util::sync::CancellationToken;

use super::kernel::{BudgetStore, Dispatcher, LimitLog};
use super::{Job, JobHandle, JobId, ScopeGuard, Services};
use crate::Result;
use crate::record::Recorder;

/// The metadata key under which a child's step ordinal is stored.
pub const META_ITERATION: &str = "iteration";

/// What the submission door knows of a job: made by the dispatcher's kernel only.
pub(crate) struct JobNode {
    pub(crate) id: JobId,
    pub(crate) parent: Option<JobId>,
    /// The parent's node, so a job can read what its ancestors published (see
    /// [`JobContext::ancestor_metadata`]).
    parent_node: Option<Arc<Self>>,
    pub(crate) workflow: JobId,
    pub(crate) class: Cow<'static, str>,
    pub(crate) ordinal: Option<u32>,
    pub(crate) scope: Arc<ScopeGuard>,
    /// Its cancellation token (see [`Self::cancel_token`]): made at admission for a job on a task
    /// of its own, on first use for one run in its caller's task.
    cancel: OnceLock<CancellationToken>,
    /// Why its subtree was cancelled, when this job cancelled it (see [`Self::cancel_reason`]).
    cancel_reason: OnceLock<Arc<str>>,
    /// What runs its children: the dispatcher that admitted it.
    pub(crate) dispatcher: Dispatcher,
    /// The span this job's attempt spans hang under: the parent's attempt span that submitted
    /// it, or for a root the span current at submission (see `thinkers::telemetry`).
    pub(crate) parent_span: tracing::Span,
    /// The span of the attempt running now (none between attempts), handed to children.
    attempt_span: Mutex<tracing::Span>,
    step: AtomicU32,
    /// What the job published. The step ordinal is not stored here: it reads as
    /// [`META_ITERATION`] unless the job published a value under that key itself.
    metadata: Mutex<BTreeMap<String, serde_json::Value>>,
}

impl JobNode {
    pub(crate) fn new(
        class: Cow<'static, str>,
        parent: Option<&JobContext>,
        ordinal: Option<u32>,
        scope: Arc<ScopeGuard>,
        dispatcher: Dispatcher,
        cancel: Option<CancellationToken>,
    ) -> Self {
        let id = JobId::new();
        Self {
            id,
            parent: parent.map(JobContext::id),
            parent_node: parent.map(|p| p.node.clone()),
            workflow: parent.map_or(id, JobContext::workflow),
            class,
            ordinal,
            scope,
            cancel: cancel.map_or_else(OnceLock::new, OnceLock::from),
            cancel_reason: OnceLock::new(),
            dispatcher,
            parent_span: parent.map_or_else(tracing::Span::current, |p| p.node.span_for_child()),
            attempt_span: Mutex::new(tracing::Span::none()),
            step: AtomicU32::new(0),
            metadata: Mutex::new(BTreeMap::new()),
        }
    }

    /// Its cancellation token, hanging from its parent's. A job run in its caller's task (a
    /// thinker's model call, every turn) makes it only when something needs it: a child on a task
    /// of its own, a wait for cancellation, or its caller dropping it. Until then it is cancelled
    /// exactly when an ancestor is, which is what [`Self::is_cancelled`] reads.
    pub(crate) fn cancel_token(&self) -> &CancellationToken {
        self.cancel.get_or_init(|| match &self.parent_node {
            Some(parent) => parent.cancel_token().child_token(),
            None => CancellationToken::new(),
        })
    }

    /// Cancel whatever still runs under this job, saying `reason`, unless it (or an ancestor)
    /// was cancelled already: the first cause is the one its descendants report. A job with no
    /// token yet has no child on a task of its own, so there is nothing to cancel.
    pub(crate) fn cancel_subtree(&self, reason: impl FnOnce() -> String) {
        if self.is_cancelled() {
            return;
        }
        if let Some(token) = self.cancel.get() {
            let _ = self.cancel_reason.set(Arc::from(reason()));
            token.cancel();
        }
    }

    /// Why this job was cancelled: the reason of the nearest job at or above it that cancelled
    /// its subtree, else the dispatcher's shutdown reason; `None` for a cancellation through a
    /// handle.
    pub(crate) fn cancel_reason(&self) -> Option<Arc<str>> {
        let mut node = Some(self);
        while let Some(n) = node {
            if let Some(r) = n.cancel_reason.get() {
                return Some(Arc::clone(r));
            }
            node = n.parent_node.as_deref();
        }
        self.dispatcher
            .stop_reason()
            .map(|r| Arc::from(format!("cancelled because {r}")))
    }

    /// Whether it (or an ancestor) was cancelled, without making its token.
    pub(crate) fn is_cancelled(&self) -> bool {
        match (self.cancel.get(), &self.parent_node) {
            (Some(token), _) => token.is_cancelled(),
            (None, Some(parent)) => parent.is_cancelled(),
            (None, None) => false,
        }
    }

    fn lock_meta(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, serde_json::Value>> {
        self.metadata.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value under `key`: what the job published, else its step ordinal under
    /// [`META_ITERATION`].
    fn meta(&self, key: &str) -> Option<serde_json::Value> {
        if let Some(v) = self.lock_meta().get(key) {
            return Some(v.clone());
        }
        if key == META_ITERATION {
            return self.ordinal.map(serde_json::Value::from);
        }
        None
    }

    /// The span a child submitted now hangs under: the running attempt's, else the current one.
    fn span_for_child(&self) -> tracing::Span {
        let attempt = self
            .attempt_span
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if attempt.is_none() {
            tracing::Span::current()
        } else {
            attempt
        }
    }

    /// Record the span of the attempt that starts (or [`tracing::Span::none`] when it ends).
    pub(crate) fn set_attempt_span(&self, span: &tracing::Span) {
        let mut slot = self
            .attempt_span
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *slot = span.clone();
    }
}

/// The context of one running job: its identity, lineage, scope, metadata and the doors through
/// which it submits children. Cheap to clone.
#[derive(Clone)]
pub struct JobContext {
    pub(crate) node: Arc<JobNode>,
}

impl std::fmt::Debug for JobContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobContext")
            .field("id", &self.node.id)
            .field("class", &self.node.class)
            .field("ordinal", &self.node.ordinal)
            .finish_non_exhaustive()
    }
}

impl JobContext {
    /// This job's id.
    pub fn id(&self) -> JobId {
        self.node.id
    }

    /// The parent's id, if this job has a parent.
    pub fn parent(&self) -> Option<JobId> {
        self.node.parent
    }

    /// The workflow this job belongs to (the root job's id).
    pub fn workflow(&self) -> JobId {
        self.node.workflow
    }

    /// The job class.
    pub fn class(&self) -> &str {
        &self.node.class
    }

    /// This job's step ordinal under its parent, if it was stamped.
    pub fn ordinal(&self) -> Option<u32> {
        self.node.ordinal
    }

    /// The sealed scope this job runs in.
    pub fn scope(&self) -> &ScopeGuard {
        &self.node.scope
    }

    /// What runs this job and its children: the dispatcher that admitted it. Not public: a
    /// job reaches no door of it but this context's, so nothing it submits leaves its scope.
    pub(crate) fn dispatcher(&self) -> &Dispatcher {
        &self.node.dispatcher
    }

    /// The budgets this job's dispatcher admits against: for a model call to resolve its entry
    /// by headroom, and to tell the budget what a provider stated.
    pub fn budgets(&self) -> &Arc<dyn BudgetStore> {
        self.node.dispatcher.admission().store()
    }

    /// What this job's dispatcher records of the limits it met ([`LimitLog`]).
    pub fn limit_log(&self) -> &LimitLog {
        self.node.dispatcher.limit_log()
    }

    /// Shared services registered with the dispatcher (catalog, model clients, stores…).
    pub fn services(&self) -> &Services {
        self.node.dispatcher.services()
    }

    /// Where this job's start and end, its children and its model calls are recorded.
    pub fn recorder(&self) -> &Arc<dyn Recorder> {
        self.node.dispatcher.recorder()
    }

    /// Whether this job (or an ancestor) was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.node.is_cancelled()
    }

    /// Resolves when this job (or an ancestor) is cancelled.
    pub async fn cancelled(&self) {
        self.node.cancel_token().cancelled().await;
    }

    /// A metadata value.
    pub fn metadata(&self, key: &str) -> Option<serde_json::Value> {
        self.node.meta(key)
    }

    /// Every metadata value.
    pub fn metadata_all(&self) -> BTreeMap<String, serde_json::Value> {
        let mut all = self.node.lock_meta().clone();
        if let Some(n) = self.node.ordinal {
            all.entry(META_ITERATION.to_owned())
                .or_insert_with(|| serde_json::Value::from(n));
        }
        all
    }

    /// The value the nearest ancestor (parent, grandparent, …) published under `key`, if any.
    /// This is how a job reads context its callers set, such as a calling thinker's depth.
    pub fn ancestor_metadata(&self, key: &str) -> Option<serde_json::Value> {
        let mut node = self.node.parent_node.as_ref();
        while let Some(n) = node {
            let found = n.meta(key);
            if found.is_some() {
                return found;
            }
            node = n.parent_node.as_ref();
        }
        None
    }

    /// Every value the ancestors (parent, grandparent, …) published under `key`, nearest first:
    /// for context that may only narrow going down (a calling thinker's depth), read as the
    /// narrowest of them, so no job in between can widen it by publishing its own.
    pub fn ancestors_metadata(&self, key: &str) -> Vec<serde_json::Value> {
        let mut found = Vec::new();
        let mut node = self.node.parent_node.as_ref();
        while let Some(n) = node {
            found.extend(n.meta(key));
            node = n.parent_node.as_ref();
        }
        found
    }

    /// The value the nearest job (this one or an ancestor) published under `key`, and this
    /// job's place below that job (or below the root when none did): the step ordinal and class
    /// of each job from there down to this one, `/`-separated (`-` for a job without an
    /// ordinal), e.g. `-:errands/3:errands.turn`. Deterministic for a replay of the same run.
    pub fn place_under(&self, key: &str) -> (Option<serde_json::Value>, String) {
        let mut segments = Vec::new();
        let mut node = Some(&self.node);
        let mut found = None;
        while let Some(n) = node {
            segments.push(match n.ordinal {
                Some(o) => format!("{o}:{}", n.class),
                None => format!("-:{}", n.class),
            });
            if let Some(v) = n.meta(key) {
                found = Some(v);
                break;
            }
            node = n.parent_node.as_ref();
        }
        segments.reverse();
        (found, segments.join("/"))
    }

    /// Publish a metadata value on this job (for example a report).
    pub fn set_metadata(&self, key: impl Into<String>, value: serde_json::Value) {
        self.node.lock_meta().insert(key.into(), value);
    }

    /// Claim the next step ordinal (1 for the first call).
    fn claim_step(&self) -> u32 {
        self.node.step.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Submit a child as this job's next step: it gets the next ordinal, so children submitted
    /// one after another are numbered 1, 2, 3 in the trajectory. Await the handle for its output;
    /// dropping the handle does not cancel the child.
    pub fn submit<J: Job>(&self, job: J) -> JobHandle<J::Output> {
        let n = self.claim_step();
        self.spawn(job, Some(n), None)
    }

    /// Claim the next step for children that run side by side: every child submitted through
    /// the returned [`FanOut`] shares its ordinal, which is how the trajectory shows they ran in
    /// parallel.
    pub fn fan_out(&self) -> FanOut {
        FanOut {
            cx: self.clone(),
            ordinal: self.claim_step(),
            scope: None,
        }
    }

    /// Every submission: the kernel's door, under this job; the child keeps its own type, and
    /// its handle is its task's.
    fn spawn<J: Job>(
        &self,
        job: J,
        ordinal: Option<u32>,
        scope: Option<Arc<ScopeGuard>>,
    ) -> JobHandle<J::Output> {
        self.node.dispatcher.spawn(job, Some(self), ordinal, scope)
    }
}

/// One step of a job whose children run side by side, claimed with [`JobContext::fan_out`]:
/// every child submitted through it carries the step's ordinal. Cheap to clone.
#[derive(Clone)]
pub struct FanOut {
    cx: JobContext,
    ordinal: u32,
    scope: Option<Arc<ScopeGuard>>,
}

impl std::fmt::Debug for FanOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FanOut")
            .field("job", &self.cx.node.id)
            .field("ordinal", &self.ordinal)
            .field("narrowed", &self.scope.is_some())
            .finish()
    }
}

impl FanOut {
    /// The step's ordinal, shared by every child submitted through it.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// The context of the job whose step this is.
    pub fn context(&self) -> &JobContext {
        &self.cx
    }

    /// This step with its children under a narrower scope than the job's (an added axis,
    /// read-only on). A widening is refused, before anything is submitted.
    pub fn narrowed(self, scope: ScopeGuard) -> Result<Self> {
        let scope = self.cx.scope().narrow_to(scope)?;
        Ok(Self {
            scope: Some(Arc::new(scope)),
            ..self
        })
    }

    /// Submit a child in this step, on a task of its own.
    pub fn submit<J: Job>(&self, job: J) -> JobHandle<J::Output> {
        self.cx.spawn(job, Some(self.ordinal), self.scope.clone())
    }

    /// Run a child in this step inside the caller's task rather than on a task of its own: for
    /// a child the caller awaits at once and alone (a thinker's model call for its turn), it
    /// spares a task and the hand-offs between threads. The child is recorded, scoped, admitted
    /// and retried exactly as a submitted one; dropping the future cancels it (recorded as
    /// cancelled), where a submitted child would run on.
    pub fn run<J: Job>(
        &self,
        job: J,
    ) -> impl Future<Output = crate::Result<J::Output>> + Send + 'static {
        // The job boxed, so each attempt's execute future is a box of its own: inline in the
        // attempt loop, it would widen the caller's future for the caller's whole life.
        self.cx.node.dispatcher.run_here(
            super::BoxJob::new(job),
            &self.cx,
            Some(self.ordinal),
            self.scope.clone(),
        )
    }
}
