//! Reading records back from the PostgreSQL store: the same queries as the SQLite store's
//! `query.rs`, with `$n` parameters.

use futures::future::BoxFuture;
use sqlx::postgres::PgRow;
use sqlx::{Postgres, QueryBuilder, Row};

use super::{PgStore, corrupt, pg_error};
use crate::job::JobId;
use crate::record::{CompactionRow, JobRecord, JobStatus, LlmRun};
use crate::store::{LlmRunFilter, RecordStore, WorkflowSummary};
use crate::{Error, Result};

/// The job columns [`job_from_row`] reads.
macro_rules! job_columns {
    () => {
        "id, parent, workflow, class, ordinal, status, error_kind, error, started_at_ms, \
         ended_at_ms, attempts"
    };
}

impl PgStore {
    /// The most recent workflows first (by the root job's start), at most `limit` of them.
    pub async fn list_workflows(&self, limit: u32) -> Result<Vec<WorkflowSummary>> {
        let rows = sqlx::query(
            "SELECT r.id, r.class, r.status, r.started_at_ms, r.ended_at_ms, \
                    (SELECT COUNT(*) FROM jobs j WHERE j.workflow = r.id) AS job_count \
             FROM jobs r \
             WHERE r.parent IS NULL AND r.workflow = r.id \
             ORDER BY r.started_at_ms DESC, r.id DESC \
             LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await
        .map_err(|e| pg_error("list workflows", e))?;
        rows.iter()
            .map(|row| {
                let job_count: i64 = get(row, "job_count")?;
                Ok(WorkflowSummary {
                    workflow: job_id(&get::<String>(row, "id")?)?,
                    root_class: get::<Option<String>>(row, "class")?.unwrap_or_default(),
                    started_at_ms: get::<Option<i64>>(row, "started_at_ms")?.unwrap_or_default(),
                    ended_at_ms: get(row, "ended_at_ms")?,
                    status: status(&get::<String>(row, "status")?)?,
                    job_count: u64::try_from(job_count).unwrap_or(0),
                })
            })
            .collect()
    }

    /// Every job of `workflow`, by start time. A workflow with no recorded job is an
    /// [`Error::InvalidInput`] naming the id.
    pub async fn workflow_jobs(&self, workflow: JobId) -> Result<Vec<JobRecord>> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            job_columns!(),
            " FROM jobs WHERE workflow = $1 ORDER BY started_at_ms, id"
        ))
        .bind(workflow.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(|e| pg_error("read workflow jobs", e))?;
        if rows.is_empty() {
            return Err(Error::invalid_input(
                "workflow",
                Some(workflow.to_string()),
                "no job of this workflow is recorded in the store",
            ));
        }
        rows.iter().map(job_from_row).collect()
    }

    /// One job, if its start was recorded (a job whose end alone reached the store is not
    /// returned).
    pub async fn job(&self, id: JobId) -> Result<Option<JobRecord>> {
        let row = sqlx::query(concat!(
            "SELECT ",
            job_columns!(),
            " FROM jobs WHERE id = $1 AND workflow IS NOT NULL"
        ))
        .bind(id.to_string())
        .fetch_optional(self.pool())
        .await
        .map_err(|e| pg_error("read job", e))?;
        row.as_ref().map(job_from_row).transpose()
    }

    /// The model calls matching `filter`, in the order they ended.
    pub async fn llm_runs(&self, filter: &LlmRunFilter) -> Result<Vec<LlmRun>> {
        let mut q: QueryBuilder<Postgres> = QueryBuilder::new(
            "SELECT job, workflow, class, entry, model, input_tokens, output_tokens, \
             reasoning_tokens, cached_tokens, output_budget, latency_ms, stop_reason, cost, \
             currency, at_ms, escalated FROM llm_runs WHERE 1 = 1",
        );
        if let Some(w) = filter.workflow {
            q.push(" AND workflow = ").push_bind(w.to_string());
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
        let rows = q
            .build()
            .fetch_all(self.pool())
            .await
            .map_err(|e| pg_error("read llm runs", e))?;
        rows.iter().map(run_from_row).collect()
    }

    /// The compactions of a workflow's conversations, oldest first.
    pub async fn compactions(&self, workflow: JobId) -> Result<Vec<CompactionRow>> {
        let rows = sqlx::query(
            "SELECT job, workflow, conversation_id, before_tokens, after_tokens, \
             summarized_messages, at_ms FROM compactions WHERE workflow = $1 ORDER BY at_ms",
        )
        .bind(workflow.to_string())
        .fetch_all(self.pool())
        .await
        .map_err(|e| pg_error("read compactions", e))?;
        rows.iter()
            .map(|row| {
                Ok(CompactionRow {
                    job: job_id(&get::<String>(row, "job")?)?,
                    workflow: job_id(&get::<String>(row, "workflow")?)?,
                    conversation: get(row, "conversation_id")?,
                    before_tokens: count(row, "before_tokens")?,
                    after_tokens: count(row, "after_tokens")?,
                    summarized_messages: count(row, "summarized_messages")?,
                    at_ms: get(row, "at_ms")?,
                })
            })
            .collect()
    }
}

impl RecordStore for PgStore {
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
}

fn get<'r, T>(row: &'r PgRow, column: &str) -> Result<T>
where
    T: sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
{
    row.try_get(column).map_err(|e| pg_error("decode", e))
}

fn job_id(text: &str) -> Result<JobId> {
    uuid::Uuid::parse_str(text)
        .map(JobId)
        .map_err(|_| corrupt("job id", text))
}

fn status(text: &str) -> Result<JobStatus> {
    JobStatus::parse(text).ok_or_else(|| corrupt("job status", text))
}

fn job_from_row(row: &PgRow) -> Result<JobRecord> {
    let id = job_id(&get::<String>(row, "id")?)?;
    let workflow =
        get::<Option<String>>(row, "workflow")?.ok_or_else(|| corrupt("workflow of job", id))?;
    let ordinal = get::<Option<i64>>(row, "ordinal")?
        .map(|n| u32::try_from(n).map_err(|_| corrupt("ordinal", n)))
        .transpose()?;
    let attempts: i64 = get(row, "attempts")?;
    Ok(JobRecord {
        id,
        parent: get::<Option<String>>(row, "parent")?
            .as_deref()
            .map(job_id)
            .transpose()?,
        workflow: job_id(&workflow)?,
        class: get::<Option<String>>(row, "class")?.unwrap_or_default(),
        ordinal,
        status: status(&get::<String>(row, "status")?)?,
        error_kind: get(row, "error_kind")?,
        error: get(row, "error")?,
        started_at_ms: get::<Option<i64>>(row, "started_at_ms")?.unwrap_or_default(),
        ended_at_ms: get(row, "ended_at_ms")?,
        attempts: u32::try_from(attempts).map_err(|_| corrupt("attempts", attempts))?,
    })
}

/// A stored count back to the unsigned record field (negative counts are never written).
fn count(row: &PgRow, column: &str) -> Result<u64> {
    let n: i64 = get(row, column)?;
    u64::try_from(n).map_err(|_| corrupt(column, n))
}

fn run_from_row(row: &PgRow) -> Result<LlmRun> {
    Ok(LlmRun {
        job: job_id(&get::<String>(row, "job")?)?,
        workflow: job_id(&get::<String>(row, "workflow")?)?,
        class: get(row, "class")?,
        entry: get(row, "entry")?,
        model: get(row, "model")?,
        input_tokens: count(row, "input_tokens")?,
        output_tokens: count(row, "output_tokens")?,
        reasoning_tokens: count(row, "reasoning_tokens")?,
        cached_tokens: count(row, "cached_tokens")?,
        output_budget: count(row, "output_budget")?,
        latency_ms: count(row, "latency_ms")?,
        stop_reason: get(row, "stop_reason")?,
        cost: get(row, "cost")?,
        currency: get(row, "currency")?,
        at_ms: get(row, "at_ms")?,
        escalated: get(row, "escalated")?,
    })
}
