//! Reading records back, written once for SQLite and PostgreSQL: workflows, a workflow's jobs,
//! one job, model calls and compactions (what `thinkers trace` and sizing from history use), and
//! what the operations reports ([`thinkers::ops`]) need beyond them (job classes, the window of the
//! recorded calls).
//!
//! The statements use `$n` parameters, which both databases read; rows decode by column name
//! into private row structs (whose `FromRow` is generic over the database) and become records in
//! plain functions. `record_queries!` writes the
//! inherent methods and the [`RecordStore`] implementation of a store type from them, so
//! [`SqliteStore`] and [`super::PgStore`] differ only in their pool and their error mapping.

use std::collections::HashMap;

use futures::future::BoxFuture;
use sqlx::QueryBuilder;

use super::sqlite::db_error;
use super::{LlmRunFilter, RecordStore, SqliteStore, WorkflowSummary, corrupt_in};
use thinkers::job::JobId;
use thinkers::record::{CompactionRow, JobRecord, JobStatus, LlmRun};
use thinkers::{Error, Result};

/// Ids bound per `job_classes` statement (well under either database's parameter limit).
const IDS_PER_QUERY: usize = 500;

/// The statements of both backends.
mod sql {
    /// The columns of a [`super::JobRow`].
    macro_rules! job_columns {
        () => {
            "SELECT id, parent, workflow, class, ordinal, status, error_kind, error, \
             started_at_ms, ended_at_ms, attempts FROM jobs"
        };
    }
    /// `$1` limit; [`super::WorkflowRow`]s.
    pub(super) const LIST_WORKFLOWS: &str = "SELECT r.id, r.class, r.status, r.started_at_ms, \
         r.ended_at_ms, (SELECT COUNT(*) FROM jobs j WHERE j.workflow = r.id) AS job_count \
         FROM jobs r WHERE r.parent IS NULL AND r.workflow = r.id \
         ORDER BY r.started_at_ms DESC, r.id DESC LIMIT $1";
    /// `$1` workflow.
    pub(super) const WORKFLOW_JOBS: &str = concat!(
        job_columns!(),
        " WHERE workflow = $1 ORDER BY started_at_ms, id"
    );
    /// `$1` job id; a job whose end alone reached the store has no workflow and is skipped.
    pub(super) const JOB: &str = concat!(job_columns!(), " WHERE id = $1 AND workflow IS NOT NULL");
    /// The start of the filtered model-call query; [`super::RunRow`]s.
    pub(super) const LLM_RUNS: &str = "SELECT job, workflow, class, entry, model, input_tokens, \
         output_tokens, reasoning_tokens, cached_tokens, output_budget, latency_ms, stop_reason, \
         cost, currency, at_ms, escalated, priced, cache_write_tokens FROM llm_runs WHERE 1 = 1";
    /// `$1` workflow; [`super::StoredCompaction`]s.
    pub(super) const COMPACTIONS: &str = "SELECT job, workflow, conversation_id, before_tokens, \
         after_tokens, summarized_messages, at_ms FROM compactions WHERE workflow = $1 \
         ORDER BY at_ms";
    /// The start of the class lookup; the ids follow, then `)`.
    pub(super) const JOB_CLASSES: &str =
        "SELECT id, class FROM jobs WHERE class IS NOT NULL AND id IN (";
    /// `$1` the earliest end time counted.
    pub(super) const RUN_WINDOW: &str =
        "SELECT MIN(at_ms), MAX(at_ms) FROM llm_runs WHERE at_ms >= $1";
}

/// A workflow's root row, as `sql::LIST_WORKFLOWS` selects it.
#[derive(sqlx::FromRow)]
struct WorkflowRow {
    id: String,
    class: Option<String>,
    status: String,
    started_at_ms: Option<i64>,
    ended_at_ms: Option<i64>,
    job_count: i64,
}

/// A `jobs` row.
#[derive(sqlx::FromRow)]
struct JobRow {
    id: String,
    parent: Option<String>,
    workflow: Option<String>,
    class: Option<String>,
    ordinal: Option<i64>,
    status: String,
    error_kind: Option<String>,
    error: Option<String>,
    started_at_ms: Option<i64>,
    ended_at_ms: Option<i64>,
    attempts: i64,
}

/// An `llm_runs` row.
#[derive(sqlx::FromRow)]
struct RunRow {
    job: String,
    workflow: String,
    class: String,
    entry: String,
    model: String,
    input_tokens: i64,
    output_tokens: i64,
    reasoning_tokens: i64,
    cached_tokens: i64,
    output_budget: i64,
    latency_ms: i64,
    stop_reason: String,
    cost: f64,
    currency: String,
    at_ms: i64,
    escalated: bool,
    /// False when the cost is unknown (`cost` is then a placeholder 0).
    priced: bool,
    cache_write_tokens: i64,
}

/// A `compactions` row.
#[derive(sqlx::FromRow)]
struct StoredCompaction {
    job: String,
    workflow: String,
    conversation_id: String,
    before_tokens: i64,
    after_tokens: i64,
    summarized_messages: i64,
    at_ms: i64,
}

/// The read queries of a store type with a `pool()` method: `$db` is its sqlx database,
/// `$backend` its name in decode errors, `$err` maps sqlx errors. One body for both backends.
macro_rules! record_queries {
    ($store:ty, $db:ty, $backend:literal, $err:path) => {
        impl $store {
            /// The most recent workflows first (by the root job's start), at most `limit` of
            /// them.
            pub async fn list_workflows(&self, limit: u32) -> Result<Vec<WorkflowSummary>> {
                let rows: Vec<WorkflowRow> = sqlx::query_as(sql::LIST_WORKFLOWS)
                    .bind(i64::from(limit))
                    .fetch_all(self.pool())
                    .await
                    .map_err(|e| $err("list workflows", e))?;
                rows.into_iter()
                    .map(|row| workflow_from_row(row, $backend))
                    .collect()
            }

            /// Every job of `workflow`, by start time. A workflow with no recorded job is an
            /// [`Error::InvalidInput`] naming the id.
            pub async fn workflow_jobs(&self, workflow: JobId) -> Result<Vec<JobRecord>> {
                let rows: Vec<JobRow> = sqlx::query_as(sql::WORKFLOW_JOBS)
                    .bind(workflow.to_string())
                    .fetch_all(self.pool())
                    .await
                    .map_err(|e| $err("read workflow jobs", e))?;
                if rows.is_empty() {
                    return Err(Error::invalid_input(
                        "workflow",
                        Some(workflow.to_string()),
                        "no job of this workflow is recorded in the store",
                    ));
                }
                rows.into_iter()
                    .map(|row| job_from_row(row, $backend))
                    .collect()
            }

            /// One job, if its start was recorded (a job whose end alone reached the store is
            /// not returned).
            pub async fn job(&self, id: JobId) -> Result<Option<JobRecord>> {
                let row: Option<JobRow> = sqlx::query_as(sql::JOB)
                    .bind(id.to_string())
                    .fetch_optional(self.pool())
                    .await
                    .map_err(|e| $err("read job", e))?;
                row.map(|row| job_from_row(row, $backend)).transpose()
            }

            /// The model calls matching `filter`, in the order they ended.
            pub async fn llm_runs(&self, filter: &LlmRunFilter) -> Result<Vec<LlmRun>> {
                let mut q: QueryBuilder<$db> = QueryBuilder::new(sql::LLM_RUNS);
                if let Some(w) = filter.workflow {
                    q.push(" AND workflow = ").push_bind(w.to_string());
                }
                if let Some(ws) = &filter.workflows {
                    if ws.is_empty() {
                        return Ok(Vec::new());
                    }
                    q.push(" AND workflow IN (");
                    let mut list = q.separated(", ");
                    for w in ws {
                        list.push_bind(w.to_string());
                    }
                    list.push_unseparated(")");
                }
                if let Some(j) = filter.job {
                    q.push(" AND job = ").push_bind(j.to_string());
                }
                if let Some(c) = &filter.class {
                    q.push(" AND class = ").push_bind(c.clone());
                }
                if let Some(e) = &filter.entry {
                    q.push(" AND entry = ").push_bind(e.clone());
                }
                if let Some(t) = filter.since_ms {
                    q.push(" AND at_ms >= ").push_bind(t);
                }
                q.push(" ORDER BY at_ms, id");
                if let Some(n) = filter.limit {
                    q.push(" LIMIT ").push_bind(i64::from(n));
                }
                let rows: Vec<RunRow> = q
                    .build_query_as()
                    .fetch_all(self.pool())
                    .await
                    .map_err(|e| $err("read llm runs", e))?;
                rows.into_iter()
                    .map(|row| run_from_row(row, $backend))
                    .collect()
            }

            /// The compactions of a workflow's conversations, oldest first.
            pub async fn compactions(&self, workflow: JobId) -> Result<Vec<CompactionRow>> {
                let rows: Vec<StoredCompaction> = sqlx::query_as(sql::COMPACTIONS)
                    .bind(workflow.to_string())
                    .fetch_all(self.pool())
                    .await
                    .map_err(|e| $err("read compactions", e))?;
                rows.into_iter()
                    .map(|row| compaction_from_row(row, $backend))
                    .collect()
            }

            /// The class of each of `ids`, for labelling a report (a workflow's id is its root
            /// job's, so this labels a by-workflow report with the root classes). A job whose
            /// start was not recorded is absent from the map.
            pub async fn job_classes(&self, ids: &[JobId]) -> Result<HashMap<JobId, String>> {
                let mut classes = HashMap::with_capacity(ids.len());
                for chunk in ids.chunks(IDS_PER_QUERY) {
                    let mut q: QueryBuilder<$db> = QueryBuilder::new(sql::JOB_CLASSES);
                    let mut ids = q.separated(", ");
                    for id in chunk {
                        ids.push_bind(id.to_string());
                    }
                    q.push(")");
                    let rows: Vec<(String, String)> = q
                        .build_query_as()
                        .fetch_all(self.pool())
                        .await
                        .map_err(|e| $err("read job classes", e))?;
                    for (id, class) in rows {
                        classes.insert(job_id(&id, $backend)?, class);
                    }
                }
                Ok(classes)
            }

            /// The earliest and latest end time of the recorded model calls at or after
            /// `since_ms` (all of them when `None`), or `None` when there is none: the window a
            /// report covers.
            pub async fn llm_run_window(
                &self,
                since_ms: Option<i64>,
            ) -> Result<Option<(i64, i64)>> {
                let (first, last): (Option<i64>, Option<i64>) = sqlx::query_as(sql::RUN_WINDOW)
                    .bind(since_ms.unwrap_or(i64::MIN))
                    .fetch_one(self.pool())
                    .await
                    .map_err(|e| $err("read llm run window", e))?;
                Ok(first.zip(last))
            }
        }

        impl RecordStore for $store {
            fn list_workflows(&self, limit: u32) -> BoxFuture<'_, Result<Vec<WorkflowSummary>>> {
                Box::pin(Self::list_workflows(self, limit))
            }

            fn workflow_jobs(&self, workflow: JobId) -> BoxFuture<'_, Result<Vec<JobRecord>>> {
                Box::pin(Self::workflow_jobs(self, workflow))
            }

            fn job(&self, id: JobId) -> BoxFuture<'_, Result<Option<JobRecord>>> {
                Box::pin(Self::job(self, id))
            }

            fn llm_runs(&self, filter: LlmRunFilter) -> BoxFuture<'_, Result<Vec<LlmRun>>> {
                Box::pin(async move { Self::llm_runs(self, &filter).await })
            }

            fn compactions(&self, workflow: JobId) -> BoxFuture<'_, Result<Vec<CompactionRow>>> {
                Box::pin(Self::compactions(self, workflow))
            }

            fn job_classes<'a>(
                &'a self,
                ids: &'a [JobId],
            ) -> BoxFuture<'a, Result<HashMap<JobId, String>>> {
                Box::pin(Self::job_classes(self, ids))
            }

            fn llm_run_window(
                &self,
                since_ms: Option<i64>,
            ) -> BoxFuture<'_, Result<Option<(i64, i64)>>> {
                Box::pin(Self::llm_run_window(self, since_ms))
            }
        }
    };
}

record_queries!(SqliteStore, sqlx::Sqlite, "sqlite", db_error);
#[cfg(feature = "postgres")]
record_queries!(
    super::PgStore,
    sqlx::Postgres,
    "postgres",
    super::postgres::pg_error
);

fn job_id(text: &str, backend: &str) -> Result<JobId> {
    uuid::Uuid::parse_str(text)
        .map(JobId)
        .map_err(|_| corrupt_in(backend, "job id", text))
}

fn status(text: &str, backend: &str) -> Result<JobStatus> {
    JobStatus::parse(text).ok_or_else(|| corrupt_in(backend, "job status", text))
}

/// A stored count back to the unsigned record field (negative counts are never written).
fn count(n: i64, column: &str, backend: &str) -> Result<u64> {
    u64::try_from(n).map_err(|_| corrupt_in(backend, column, n))
}

fn workflow_from_row(row: WorkflowRow, backend: &str) -> Result<WorkflowSummary> {
    Ok(WorkflowSummary {
        workflow: job_id(&row.id, backend)?,
        root_class: row.class.unwrap_or_default(),
        started_at_ms: row.started_at_ms.unwrap_or_default(),
        ended_at_ms: row.ended_at_ms,
        status: status(&row.status, backend)?,
        job_count: u64::try_from(row.job_count).unwrap_or(0),
    })
}

fn job_from_row(row: JobRow, backend: &str) -> Result<JobRecord> {
    let id = job_id(&row.id, backend)?;
    let workflow = row
        .workflow
        .ok_or_else(|| corrupt_in(backend, "workflow of job", id))?;
    let ordinal = row
        .ordinal
        .map(|n| u32::try_from(n).map_err(|_| corrupt_in(backend, "ordinal", n)))
        .transpose()?;
    let attempts = row.attempts;
    Ok(JobRecord {
        id,
        parent: row.parent.map(|p| job_id(&p, backend)).transpose()?,
        workflow: job_id(&workflow, backend)?,
        class: row.class.unwrap_or_default(),
        ordinal,
        status: status(&row.status, backend)?,
        error_kind: row.error_kind,
        error: row.error,
        started_at_ms: row.started_at_ms.unwrap_or_default(),
        ended_at_ms: row.ended_at_ms,
        attempts: u32::try_from(attempts).map_err(|_| corrupt_in(backend, "attempts", attempts))?,
    })
}

fn run_from_row(row: RunRow, backend: &str) -> Result<LlmRun> {
    let unsigned = |n: i64, column: &str| count(n, column, backend);
    Ok(LlmRun {
        job: job_id(&row.job, backend)?,
        workflow: job_id(&row.workflow, backend)?,
        class: row.class,
        entry: row.entry,
        model: row.model,
        input_tokens: unsigned(row.input_tokens, "input_tokens")?,
        output_tokens: unsigned(row.output_tokens, "output_tokens")?,
        reasoning_tokens: unsigned(row.reasoning_tokens, "reasoning_tokens")?,
        cached_tokens: unsigned(row.cached_tokens, "cached_tokens")?,
        cache_write_tokens: unsigned(row.cache_write_tokens, "cache_write_tokens")?,
        output_budget: unsigned(row.output_budget, "output_budget")?,
        latency_ms: unsigned(row.latency_ms, "latency_ms")?,
        stop_reason: row.stop_reason,
        cost: row.priced.then_some(row.cost),
        currency: row.currency,
        at_ms: row.at_ms,
        escalated: row.escalated,
    })
}

fn compaction_from_row(row: StoredCompaction, backend: &str) -> Result<CompactionRow> {
    let unsigned = |n: i64, column: &str| count(n, column, backend);
    Ok(CompactionRow {
        job: job_id(&row.job, backend)?,
        workflow: job_id(&row.workflow, backend)?,
        conversation: row.conversation_id,
        before_tokens: unsigned(row.before_tokens, "before_tokens")?,
        after_tokens: unsigned(row.after_tokens, "after_tokens")?,
        summarized_messages: unsigned(row.summarized_messages, "summarized_messages")?,
        at_ms: row.at_ms,
    })
}
