//! Work distribution (feature `postgres`): workflows submitted by name to a queue in PostgreSQL
//! and run by [`Worker`] processes on their local dispatchers.
//!
//! * A [`WorkflowRegistry`] names the workflows a process knows: each name has a factory from
//!   JSON input to a job (a doer, a thinker, any job whose output serializes).
//! * [`WorkflowQueue::submit`] checks the name and the input against a registry and puts the
//!   workflow on the queue (table `workflow_queue`); it returns the workflow's [`QueueId`].
//! * A [`Worker`] claims workflows one at a time per free slot (`FOR UPDATE SKIP LOCKED`, so
//!   concurrent workers never claim the same row), holding each under a lease that it extends with
//!   heartbeats (every third of the lease). It runs the workflow on its runtime's dispatcher —
//!   jobs and model calls are recorded in the same PostgreSQL database — flushes the records, and
//!   stores the JSON output or the error.
//! * A workflow whose worker dies (its lease passes without a heartbeat) is claimed again by any
//!   worker and run from the start, up to `max_attempts` claims. Model calls the dead worker
//!   completed are answered from the response cache ([`crate::llm::cache`]), so they are not
//!   paid twice. A worker that lost its lease (it stalled longer than the lease) can no longer
//!   write: every write names the attempt it belongs to.
//! * [`WorkflowQueue::status`] says where a workflow is: queued, running (on which worker, since
//!   when, which attempt, whether the lease has passed), succeeded (with its output) or failed
//!   (with the error), and the root job of its current or last run for `thinkers trace`.
//!
//! * Every workflow runs as a durable run keyed by its queue id (see [`crate::durable`]): each
//!   finished tool call is journaled, and a replay answers it from the journal. A workflow whose
//!   thinker reaches a tool call that needs approval stops and is parked `awaiting_approval`
//!   (no worker holds it); a decision on its last pending call queues it again.
//!
//! Guarantees: a workflow is run to completion at least once while attempts remain; two live
//! workers never hold it at once (the lease is judged by the database clock), although a worker
//! that stalled past its lease may still be executing when another claims it. A replay sends no
//! model call whose answer is cached and runs no tool call that is journaled: only the tool call
//! in flight when a worker died can run twice.

mod registry;
#[cfg(test)]
mod tests;
mod worker;

pub use registry::{WorkflowRegistry, decode_input};
pub use worker::{Worker, WorkerConfig};

use std::fmt;

use serde_json::Value;

use crate::job::JobId;
use crate::store::PgStore;
use crate::{Error, Result};

/// The queue name unless configured otherwise.
pub const DEFAULT_QUEUE: &str = "default";

/// How many times a workflow is claimed before a passed lease fails it, unless configured.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// The id of a submitted workflow (a UUID v7: time-ordered, so the queue serves oldest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueId(pub uuid::Uuid);

impl QueueId {
    /// A fresh id.
    pub fn new() -> Self {
        Self(uuid::Uuid::now_v7())
    }

    /// Parse an id as printed by `Display`.
    pub fn parse(s: &str) -> Result<Self> {
        uuid::Uuid::parse_str(s.trim()).map(Self).map_err(|e| {
            Error::invalid_input(
                "workflow id",
                Some(s.to_owned()),
                format!("not a UUID: {e}"),
            )
        })
    }
}

impl Default for QueueId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for QueueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// A workflow a worker claimed.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    pub(crate) id: QueueId,
    pub(crate) name: String,
    pub(crate) input: String,
    pub(crate) attempt: u32,
}

/// Where a workflow is.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkflowState {
    /// Waiting for a worker.
    Queued,
    /// Claimed by a worker.
    Running {
        /// The worker's name.
        worker: String,
        /// When the worker claimed it, milliseconds since the Unix epoch.
        since_ms: i64,
        /// The lease has passed without a heartbeat: the worker is probably gone, and the next
        /// worker to look claims the workflow again.
        lease_expired: bool,
    },
    /// Done; its output.
    Succeeded {
        /// The root job's output as JSON.
        output: Value,
    },
    /// Failed; the error.
    Failed {
        /// What went wrong.
        error: String,
    },
    /// Stopped to wait for a person's decision on a tool call (see [`crate::durable`]); no
    /// worker holds it. Once every pending call of it is decided it is queued again, and the
    /// worker that claims it replays it from the journal.
    AwaitingApproval {
        /// Which calls it waits for.
        waiting: String,
    },
}

impl WorkflowState {
    /// `queued`, `running`, `succeeded`, `failed` or `awaiting_approval`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::AwaitingApproval { .. } => "awaiting_approval",
            Self::Queued => "queued",
            Self::Running { .. } => "running",
            Self::Succeeded { .. } => "succeeded",
            Self::Failed { .. } => "failed",
        }
    }

    /// Whether the workflow has finished (succeeded or failed).
    pub fn is_finished(&self) -> bool {
        matches!(self, Self::Succeeded { .. } | Self::Failed { .. })
    }
}

/// A workflow's row in the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowStatus {
    /// Its id.
    pub id: QueueId,
    /// The queue it was submitted to.
    pub queue: String,
    /// The registered name.
    pub name: String,
    /// The input it was submitted with.
    pub input: Value,
    /// Claims so far (0 while never claimed).
    pub attempt: u32,
    /// Claims allowed.
    pub max_attempts: u32,
    /// The root job of the current or last run (its trajectory is in the store).
    pub run: Option<JobId>,
    /// When it was submitted, milliseconds since the Unix epoch.
    pub submitted_at_ms: i64,
    /// When it finished.
    pub finished_at_ms: Option<i64>,
    /// Where it is.
    pub state: WorkflowState,
}

/// How many workflows of a queue are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// Waiting for a worker.
    pub queued: u64,
    /// Claimed.
    pub running: u64,
    /// Done.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Waiting for a person's decision.
    pub awaiting_approval: u64,
}

impl QueueCounts {
    /// Succeeded plus failed.
    pub fn finished(&self) -> u64 {
        self.succeeded + self.failed
    }
}

/// A queue of workflows in a PostgreSQL store.
#[derive(Debug, Clone)]
pub struct WorkflowQueue {
    store: PgStore,
    queue: String,
    max_attempts: u32,
}

impl WorkflowQueue {
    /// The queue [`DEFAULT_QUEUE`] of `store`.
    pub fn new(store: &PgStore) -> Self {
        Self {
            store: store.clone(),
            queue: DEFAULT_QUEUE.to_owned(),
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        }
    }

    /// Use the queue named `queue` (workers of that queue only claim its workflows).
    #[must_use]
    pub fn named(mut self, queue: impl Into<String>) -> Self {
        self.queue = queue.into();
        self
    }

    /// Claims allowed per workflow submitted from now on (at least 1).
    #[must_use]
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.queue
    }

    /// The store.
    pub fn store(&self) -> &PgStore {
        &self.store
    }

    /// Check `name` and `input` against `registry` and put the workflow on the queue.
    pub async fn submit(
        &self,
        registry: &WorkflowRegistry,
        name: &str,
        input: Value,
    ) -> Result<QueueId> {
        registry.check(name, &input)?;
        self.submit_unchecked(name, &input).await
    }

    /// Put workflow `name` on the queue without checking it against a registry (for a process
    /// that does not link the workflows, such as a web front end). A worker fails a workflow
    /// whose name it does not know, or whose input does not fit, with an error naming them.
    pub async fn submit_unchecked(&self, name: &str, input: &Value) -> Result<QueueId> {
        let id = QueueId::new();
        self.store
            .enqueue_workflow(&self.queue, id, name, &input.to_string(), self.max_attempts)
            .await?;
        Ok(id)
    }

    /// How many of the queue's workflows are in each state.
    pub async fn counts(&self) -> Result<QueueCounts> {
        self.store.queue_counts(&self.queue).await
    }

    /// Where workflow `id` is; an error naming the id when there is no such workflow.
    pub async fn status(&self, id: QueueId) -> Result<WorkflowStatus> {
        self.store.workflow_status(id).await?.ok_or_else(|| {
            Error::invalid_input(
                "workflow id",
                Some(id.to_string()),
                "no workflow with this id was submitted to this database",
            )
        })
    }

    /// Wait until workflow `id` finishes, polling every `every`; `None` when `timeout` passes.
    pub async fn wait(
        &self,
        id: QueueId,
        every: std::time::Duration,
        timeout: std::time::Duration,
    ) -> Result<Option<WorkflowStatus>> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let status = self.status(id).await?;
            if status.state.is_finished() {
                return Ok(Some(status));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(every).await;
        }
    }
}
