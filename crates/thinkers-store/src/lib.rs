//! The durable record of thinkers: job rows and model-call rows in a database, and the queries
//! that read them back (`thinkers trace`, sizing from history).
//!
//! The embedded default is one SQLite file ([`DEFAULT_DB_PATH`]) opened through
//! [`SqliteStore::open`], which applies the embedded migrations. Writing goes through
//! [`SqliteRecorder`], a [`thinkers::record::Recorder`] that never blocks the dispatcher: rows are
//! queued and a background task writes them in batches, one transaction per batch.
//! Reading goes through [`RecordStore`], the backend-neutral query trait, so its callers
//! (`thinkers trace`, `cost`, `sizing`) run on either backend.
//! Durable conversations live in the same file through [`SqliteConversationStore`], an
//! implementation of [`thinkers::conversation::ConversationStore`].
//!
//! **API boundary:** nothing outside this crate names sqlx (`thinkers` does not depend on it).
//! With the `postgres` feature the same store exists on PostgreSQL
//! ([`PgStore`], [`PgRecorder`], [`PgConversationStore`], [`PgChatStore`]); [`open`] picks the
//! backend from a URL. The chat host's list of chats is [`ChatStore`] on either. Both backends
//! share one implementation of the recorder, the record queries, conversations, chats and
//! durable steps: one set of `$n` statements, which both databases read, and one body written by
//! a macro over the store type. Written per backend are only opening, error mapping, transaction
//! modes, the response cache's lookup and the PostgreSQL-only parts (the workflows' record,
//! chat turn locks).
//!
//! Guarantees of the SQLite recorder:
//!
//! * every row queued before a call to [`thinkers::record::Recorder::flush`] is committed when that
//!   flush returns `Ok`; a flush returns an error when rows queued since the previous flush could
//!   not be written;
//! * a transient "database is busy/locked" failure retries the whole batch with backoff before
//!   giving up; rows that are finally given up on are logged and counted
//!   ([`SqliteRecorder::failed_rows`]), never silently lost;
//! * a job's end row is never lost because it reached the store before the start row: both are
//!   upserts of the same row;
//! * a model call recorded with [`thinkers::record::Recorder::llm_run_durable`] is committed
//!   before that call returns (group commit: the calls that arrive while a batch is written
//!   share the next commit); [`SqliteRecorder::with_durable_calls`] turns this off;
//! * rows still queued when the tokio runtime shuts down are lost: close the recorder
//!   ([`thinkers::record::Recorder::close`], which [`thinkers::Runtime::shutdown`] does) before
//!   exiting;
//! * every job row names the process that wrote it (an owner row with a heartbeat); opening a
//!   store ends the running jobs of processes that are gone as
//!   [`thinkers::record::JobStatus::Interrupted`] (see `owner.rs`).
//!
//! The file is opened in WAL mode with `synchronous = NORMAL`: a committed batch survives a crash
//! of the process; the last batches before a power loss may not.
//!
//! A runtime gets its store from [`RuntimeBuilderExt::database`], and names it back with
//! [`RuntimeExt::store`] (SQLite) or [`RuntimeExt::open_store`] (either backend):
//!
//! ```no_run
//! use thinkers::Runtime;
//! use thinkers::model::Catalog;
//! use thinkers_store::{RecordStore as _, RuntimeBuilderExt as _, RuntimeExt as _};
//!
//! # async fn demo() -> thinkers::Result<()> {
//! let rt = Runtime::builder(Catalog::openai("gpt-4o-mini").build()?)
//!     .database("thinkers.db")
//!     .build()
//!     .await?;
//! if let Some(store) = rt.store() {
//!     let recent = store.list_workflows(10).await?;
//!     println!("{} workflows in {}", recent.len(), store.location());
//! }
//! # Ok(()) }
//! ```

// Every public item carries rustdoc: the workspace warns, the library refuses.
#![deny(missing_docs)]

mod batch;
mod chats;
mod conversations;
mod explorer;
mod owner;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
mod query;
pub(crate) mod response_cache;
mod select;
mod sink;
mod sqlite;
pub(crate) mod steps;
#[cfg(test)]
mod test_services;
#[cfg(test)]
mod tests;
mod writer;

pub use chats::{ChatRecord, ChatStore, ChatTurnLock, SqliteChatStore};
#[cfg(feature = "postgres")]
pub use conversations::PgConversationStore;
pub use conversations::SqliteConversationStore;
pub use explorer::{StoredBenchmark, WorkflowPage, WorkflowQuery};
#[cfg(feature = "postgres")]
pub use postgres::workflow_rows::{WorkflowCounts, WorkflowId, WorkflowState, WorkflowStatus};
#[cfg(feature = "postgres")]
pub use postgres::{PgChatStore, PgRecorder, PgResponseCache, PgSteps, PgStore};
pub use response_cache::SqliteResponseCache;
pub use select::{RuntimeBuilderExt, RuntimeExt, Store, open};
pub use sqlite::SqliteStore;
pub use steps::SqliteSteps;
pub use writer::SqliteRecorder;

use std::collections::HashMap;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use thinkers::Result;
use thinkers::job::JobId;
use thinkers::record::{CompactionRow, JobRecord, JobStatus, LlmRun};

/// Where the embedded store lives unless the caller names another file.
pub const DEFAULT_DB_PATH: &str = "thinkers.db";

/// One workflow as listed by [`RecordStore::list_workflows`]: its root job and its size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowSummary {
    /// The workflow's id (its root job's id).
    pub workflow: JobId,
    /// The class of the root job.
    pub root_class: String,
    /// When the root job was submitted, milliseconds since the Unix epoch.
    pub started_at_ms: i64,
    /// When the root job ended, if it has.
    pub ended_at_ms: Option<i64>,
    /// How the root job ended ([`JobStatus::Running`] while it runs).
    pub status: JobStatus,
    /// How many jobs the workflow holds, the root included.
    pub job_count: u64,
}

/// Which model-call rows [`RecordStore::llm_runs`] returns. Every condition set must hold;
/// the default matches every row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LlmRunFilter {
    /// Only calls made within this workflow.
    pub workflow: Option<JobId>,
    /// Only calls made within one of these workflows (none when empty).
    pub workflows: Option<Vec<JobId>>,
    /// Only calls made by this job.
    pub job: Option<JobId>,
    /// Only calls made by jobs of this class.
    pub class: Option<String>,
    /// Only calls to this catalog entry.
    pub entry: Option<String>,
    /// Only calls that ended at or after this time (milliseconds since the Unix epoch).
    pub since_ms: Option<i64>,
    /// At most this many rows (the earliest ones).
    pub limit: Option<u32>,
}

impl LlmRunFilter {
    /// A filter matching every row.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only calls made within `workflow`.
    #[must_use]
    pub fn workflow(mut self, workflow: JobId) -> Self {
        self.workflow = Some(workflow);
        self
    }

    /// Only calls made within one of `workflows` (one query for a page of workflows).
    #[must_use]
    pub fn workflows(mut self, workflows: impl IntoIterator<Item = JobId>) -> Self {
        self.workflows = Some(workflows.into_iter().collect());
        self
    }

    /// Only calls made by `job`.
    #[must_use]
    pub fn job(mut self, job: JobId) -> Self {
        self.job = Some(job);
        self
    }

    /// Only calls made by jobs of `class`.
    #[must_use]
    pub fn class(mut self, class: impl Into<String>) -> Self {
        self.class = Some(class.into());
        self
    }

    /// Only calls to the catalog entry `entry`.
    #[must_use]
    pub fn entry(mut self, entry: impl Into<String>) -> Self {
        self.entry = Some(entry.into());
        self
    }

    /// Only calls that ended at or after `at_ms`.
    #[must_use]
    pub fn since_ms(mut self, at_ms: i64) -> Self {
        self.since_ms = Some(at_ms);
        self
    }

    /// At most `limit` rows.
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }
}

/// Reads recorded jobs and model calls back, whatever the backend.
pub trait RecordStore: Send + Sync + 'static {
    /// The most recent workflows first, at most `limit` of them.
    fn list_workflows(&self, limit: u32) -> BoxFuture<'_, Result<Vec<WorkflowSummary>>>;

    /// Every job of a workflow, by start time. An unknown workflow is an
    /// [`thinkers::Error::InvalidInput`] naming the id.
    fn workflow_jobs(&self, workflow: JobId) -> BoxFuture<'_, Result<Vec<JobRecord>>>;

    /// One job, if its start was recorded.
    fn job(&self, id: JobId) -> BoxFuture<'_, Result<Option<JobRecord>>>;

    /// The model calls matching `filter`, in the order they ended.
    fn llm_runs(&self, filter: LlmRunFilter) -> BoxFuture<'_, Result<Vec<LlmRun>>>;

    /// The compactions of a workflow's conversations, oldest first.
    fn compactions(&self, workflow: JobId) -> BoxFuture<'_, Result<Vec<CompactionRow>>>;

    /// The class of each of `ids` whose start was recorded (what labels a by-workflow report:
    /// a workflow's id is its root job's).
    fn job_classes<'a>(&'a self, ids: &'a [JobId])
    -> BoxFuture<'a, Result<HashMap<JobId, String>>>;

    /// The earliest and latest end time of the model calls that ended at or after `since_ms`
    /// (all of them when `None`), or `None` when there is none.
    fn llm_run_window(&self, since_ms: Option<i64>) -> BoxFuture<'_, Result<Option<(i64, i64)>>>;
}

/// A stored value of `backend` that does not fit the record type: corrupt data or a bug.
pub(crate) fn corrupt_in(
    backend: &str,
    what: &str,
    value: impl std::fmt::Display,
) -> thinkers::Error {
    thinkers::Error::system(
        format!("{backend} store (decode)"),
        format!("stored {what} `{value}` is invalid"),
    )
}
