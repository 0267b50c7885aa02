//! Registered workflows of [`thinkers`], their record in PostgreSQL, and [`restate`], the engine
//! that runs them as Restate workflows with every model and tool call a journaled step (what
//! `thinkers submit`/`worker` use). The durable engine is its own crate so that `thinkers` needs
//! no workflow engine.
//!
//! * A [`WorkflowRegistry`] names the workflows a process knows: each name has a factory from
//!   JSON input to a job (a doer, a thinker, any job whose output serializes). `thinkers run`
//!   runs one in its own process; on several machines Restate runs them (see
//!   [`restate`]), which journals every model and tool call.
//! * [`Workflows`] is their record in a PostgreSQL store (table `workflows`): one row per
//!   submitted workflow with its name, input, state (queued, running on which service process
//!   since when, awaiting approval, succeeded with its output, failed with its error), the
//!   rounds it took and the root job of its current or last round (for `thinkers trace`). The
//!   engine writes it; [`Workflows::status`] and [`Workflows::wait`] read it.

mod registry;
pub mod restate;

pub use registry::{WorkflowRegistry, decode_input};
pub use thinkers_store::{WorkflowCounts, WorkflowId, WorkflowState, WorkflowStatus};

use thinkers::{Error, Result};
use thinkers_store::PgStore;

/// The record of the workflows submitted to a PostgreSQL store.
#[derive(Debug, Clone)]
pub struct Workflows {
    store: PgStore,
}

impl Workflows {
    /// The workflows of `store`.
    pub fn new(store: &PgStore) -> Self {
        Self {
            store: store.clone(),
        }
    }

    /// The store.
    pub fn store(&self) -> &PgStore {
        &self.store
    }

    /// How many workflows are in each state.
    pub async fn counts(&self) -> Result<WorkflowCounts> {
        self.store.workflow_counts().await
    }

    /// Where workflow `id` is; an error naming the id when there is no such workflow.
    pub async fn status(&self, id: WorkflowId) -> Result<WorkflowStatus> {
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
        id: WorkflowId,
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
