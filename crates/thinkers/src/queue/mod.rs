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

pub(crate) use crate::store::postgres::queue_rows::Claim;
pub use crate::store::postgres::queue_rows::{QueueCounts, QueueId, WorkflowState, WorkflowStatus};
pub use registry::{WorkflowRegistry, decode_input};
pub use worker::{Worker, WorkerConfig};

use serde_json::Value;

use crate::store::PgStore;
use crate::{Error, Result};

/// The queue name unless configured otherwise.
pub const DEFAULT_QUEUE: &str = "default";

/// How many times a workflow is claimed before a passed lease fails it, unless configured.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

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
