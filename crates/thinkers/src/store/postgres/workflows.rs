//! The workflow queue's statements (see [`crate::queue`] for the protocol).
//!
//! Leases are judged by the database's clock (`clock_timestamp()`), so workers on machines with
//! drifting clocks agree on when a lease has passed. Every write of a worker names the attempt it
//! belongs to; a worker that lost its lease (another worker claimed the row again) changes
//! nothing.

use std::time::Duration;

use sqlx::Row as _;
use sqlx::postgres::PgRow;

use super::queue_rows::{Claim, QueueCounts, QueueId, WorkflowState, WorkflowStatus};
use super::{PgStore, corrupt, pg_error};
use crate::Result;
use crate::job::JobId;
use crate::record::now_ms;

const CLAIM_SQL: &str = "UPDATE workflow_queue w SET status = 'running', worker = $2, \
         attempt = w.attempt + 1, claimed_at_ms = $4, run_workflow = NULL, \
         lease_until = clock_timestamp() + $3 * interval '1 millisecond' \
     WHERE w.id = ( \
         SELECT id FROM workflow_queue \
         WHERE queue = $1 AND (status = 'queued' \
             OR (status = 'running' AND lease_until < clock_timestamp() AND attempt < max_attempts) \
             OR (status = 'awaiting_approval' AND NOT EXISTS (SELECT 1 FROM approvals a \
                 WHERE a.run = workflow_queue.id AND a.status = 'pending'))) \
         ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1) \
     RETURNING w.id, w.name, w.input, w.attempt";

const EXHAUSTED_SQL: &str = "UPDATE workflow_queue SET status = 'failed', finished_at_ms = $2, \
         error = 'its lease expired on attempt ' || attempt || ' of ' || max_attempts \
             || ' (the worker ' || COALESCE(worker, '?') || ' stopped answering)' \
     WHERE id IN (SELECT id FROM workflow_queue WHERE queue = $1 AND status = 'running' \
         AND lease_until < clock_timestamp() AND attempt >= max_attempts \
         FOR UPDATE SKIP LOCKED)";

const STATUS_SQL: &str = "SELECT id, queue, name, input, status, attempt, max_attempts, worker, \
         claimed_at_ms, run_workflow, output, error, submitted_at_ms, finished_at_ms, \
         (lease_until < clock_timestamp()) AS lease_expired \
     FROM workflow_queue WHERE id = $1";

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl PgStore {
    /// Put a workflow on `queue`.
    pub(crate) async fn enqueue_workflow(
        &self,
        queue: &str,
        id: QueueId,
        name: &str,
        input: &str,
        max_attempts: u32,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO workflow_queue (id, queue, name, input, status, max_attempts, \
             submitted_at_ms) VALUES ($1, $2, $3, $4, 'queued', $5, $6)",
        )
        .bind(id.to_string())
        .bind(queue)
        .bind(name)
        .bind(input)
        .bind(i64::from(max_attempts))
        .bind(now_ms())
        .execute(self.pool())
        .await
        .map_err(|e| pg_error("enqueue workflow", e))?;
        Ok(())
    }

    /// Claim the oldest claimable workflow of `queue` for `worker`, leased for `lease`. Rows
    /// whose lease passed on their last allowed attempt are failed first.
    pub(crate) async fn claim_workflow(
        &self,
        queue: &str,
        worker: &str,
        lease: Duration,
    ) -> Result<Option<Claim>> {
        sqlx::query(EXHAUSTED_SQL)
            .bind(queue)
            .bind(now_ms())
            .execute(self.pool())
            .await
            .map_err(|e| pg_error("fail exhausted workflows", e))?;
        let row = sqlx::query(CLAIM_SQL)
            .bind(queue)
            .bind(worker)
            .bind(millis(lease))
            .bind(now_ms())
            .fetch_optional(self.pool())
            .await
            .map_err(|e| pg_error("claim workflow", e))?;
        row.map(|r| {
            let id: String = r.try_get("id").map_err(|e| pg_error("claim workflow", e))?;
            let attempt: i64 = r
                .try_get("attempt")
                .map_err(|e| pg_error("claim workflow", e))?;
            Ok(Claim {
                id: QueueId::parse(&id)?,
                name: r
                    .try_get("name")
                    .map_err(|e| pg_error("claim workflow", e))?,
                input: r
                    .try_get("input")
                    .map_err(|e| pg_error("claim workflow", e))?,
                attempt: u32::try_from(attempt).map_err(|_| corrupt("attempt", attempt))?,
            })
        })
        .transpose()
    }

    /// Extend the lease of `claim`; `false` when the worker no longer holds it.
    pub(crate) async fn heartbeat_workflow(
        &self,
        id: QueueId,
        worker: &str,
        attempt: u32,
        lease: Duration,
    ) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE workflow_queue SET lease_until = clock_timestamp() + $4 * interval '1 millisecond' \
             WHERE id = $1 AND worker = $2 AND attempt = $3 AND status = 'running'",
        )
        .bind(id.to_string())
        .bind(worker)
        .bind(i64::from(attempt))
        .bind(millis(lease))
        .execute(self.pool())
        .await
        .map_err(|e| pg_error("workflow heartbeat", e))?;
        Ok(done.rows_affected() == 1)
    }

    /// Note the root job of the running attempt (what `thinkers trace` shows).
    pub(crate) async fn set_workflow_run(
        &self,
        id: QueueId,
        worker: &str,
        attempt: u32,
        run: JobId,
    ) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE workflow_queue SET run_workflow = $4 \
             WHERE id = $1 AND worker = $2 AND attempt = $3 AND status = 'running'",
        )
        .bind(id.to_string())
        .bind(worker)
        .bind(i64::from(attempt))
        .bind(run.to_string())
        .execute(self.pool())
        .await
        .map_err(|e| pg_error("note workflow run", e))?;
        Ok(done.rows_affected() == 1)
    }

    /// Note that an engine outside the database (Restate) runs the workflow now on `worker`:
    /// the row becomes `running` under a new attempt with no lease (the engine, not a lease,
    /// decides who runs it), and the attempt is returned for the row's later writes. `None`
    /// when the row is missing or already finished.
    #[cfg(feature = "restate")]
    pub(crate) async fn engine_claim(&self, id: QueueId, worker: &str) -> Result<Option<u32>> {
        let row = sqlx::query(
            "UPDATE workflow_queue SET status = 'running', worker = $2, attempt = attempt + 1, \
             claimed_at_ms = $3, run_workflow = NULL, lease_until = NULL \
             WHERE id = $1 AND status IN ('queued', 'running', 'awaiting_approval') \
             RETURNING attempt",
        )
        .bind(id.to_string())
        .bind(worker)
        .bind(now_ms())
        .fetch_optional(self.pool())
        .await
        .map_err(|e| pg_error("note engine run", e))?;
        row.map(|r| {
            let n: i64 = r
                .try_get("attempt")
                .map_err(|e| pg_error("note engine run", e))?;
            u32::try_from(n).map_err(|_| corrupt("workflow_queue.attempt", n.to_string()))
        })
        .transpose()
    }

    /// Fail a workflow the engine never started (its submission was refused).
    #[cfg(feature = "restate")]
    pub(crate) async fn engine_fail(&self, id: QueueId, error: &str) -> Result<()> {
        sqlx::query(
            "UPDATE workflow_queue SET status = 'failed', error = $2, finished_at_ms = $3 \
             WHERE id = $1 AND status = 'queued'",
        )
        .bind(id.to_string())
        .bind(error)
        .bind(now_ms())
        .execute(self.pool())
        .await
        .map_err(|e| pg_error("fail workflow", e))?;
        Ok(())
    }

    /// Store the result of an attempt; `false` when the worker no longer holds the workflow.
    pub(crate) async fn finish_workflow(
        &self,
        id: QueueId,
        worker: &str,
        attempt: u32,
        result: std::result::Result<&str, &str>,
    ) -> Result<bool> {
        let (status, output, error) = match result {
            Ok(output) => ("succeeded", Some(output), None),
            Err(error) => ("failed", None, Some(error)),
        };
        let done = sqlx::query(
            "UPDATE workflow_queue SET status = $4, output = $5, error = $6, finished_at_ms = $7, \
             lease_until = NULL \
             WHERE id = $1 AND worker = $2 AND attempt = $3 AND status = 'running'",
        )
        .bind(id.to_string())
        .bind(worker)
        .bind(i64::from(attempt))
        .bind(status)
        .bind(output)
        .bind(error)
        .bind(now_ms())
        .execute(self.pool())
        .await
        .map_err(|e| pg_error("finish workflow", e))?;
        Ok(done.rows_affected() == 1)
    }

    /// Park an attempt that stopped for a person: `awaiting_approval` while a call of the run
    /// is pending, `queued` again when every one was decided in the meantime (a decision that
    /// came before the park could not requeue a running row). `false` when the worker no longer
    /// holds the workflow.
    pub(crate) async fn park_workflow(
        &self,
        id: QueueId,
        worker: &str,
        attempt: u32,
        waiting: &str,
    ) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE workflow_queue SET status = CASE WHEN EXISTS (SELECT 1 FROM approvals \
                 WHERE run = $1 AND status = 'pending') THEN 'awaiting_approval' ELSE 'queued' END, \
             error = $4, lease_until = NULL \
             WHERE id = $1 AND worker = $2 AND attempt = $3 AND status = 'running'",
        )
        .bind(id.to_string())
        .bind(worker)
        .bind(i64::from(attempt))
        .bind(waiting)
        .execute(self.pool())
        .await
        .map_err(|e| pg_error("park workflow", e))?;
        Ok(done.rows_affected() == 1)
    }

    /// How many workflows of `queue` are in each state.
    pub(crate) async fn queue_counts(&self, queue: &str) -> Result<QueueCounts> {
        let rows = sqlx::query(
            "SELECT status, COUNT(*) AS n FROM workflow_queue WHERE queue = $1 GROUP BY status",
        )
        .bind(queue)
        .fetch_all(self.pool())
        .await
        .map_err(|e| pg_error("queue counts", e))?;
        let mut counts = QueueCounts::default();
        for r in rows {
            let status: String = r
                .try_get("status")
                .map_err(|e| pg_error("queue counts", e))?;
            let n: i64 = r.try_get("n").map_err(|e| pg_error("queue counts", e))?;
            let n = u64::try_from(n).map_err(|_| corrupt("count", n))?;
            match status.as_str() {
                "queued" => counts.queued = n,
                "running" => counts.running = n,
                "succeeded" => counts.succeeded = n,
                "failed" => counts.failed = n,
                "awaiting_approval" => counts.awaiting_approval = n,
                other => return Err(corrupt("workflow status", other)),
            }
        }
        Ok(counts)
    }

    /// Where workflow `id` is.
    pub(crate) async fn workflow_status(&self, id: QueueId) -> Result<Option<WorkflowStatus>> {
        let row = sqlx::query(STATUS_SQL)
            .bind(id.to_string())
            .fetch_optional(self.pool())
            .await
            .map_err(|e| pg_error("workflow status", e))?;
        row.map(|r| decode_status(&r)).transpose()
    }
}

fn decode_status(r: &PgRow) -> Result<WorkflowStatus> {
    let get = |e| pg_error("workflow status", e);
    let id: String = r.try_get("id").map_err(get)?;
    let status: String = r.try_get("status").map_err(get)?;
    let input: String = r.try_get("input").map_err(get)?;
    let attempt: i64 = r.try_get("attempt").map_err(get)?;
    let max_attempts: i64 = r.try_get("max_attempts").map_err(get)?;
    let run: Option<String> = r.try_get("run_workflow").map_err(get)?;
    let state = match status.as_str() {
        "queued" => WorkflowState::Queued,
        "running" => WorkflowState::Running {
            worker: r
                .try_get::<Option<String>, _>("worker")
                .map_err(get)?
                .unwrap_or_default(),
            since_ms: r
                .try_get::<Option<i64>, _>("claimed_at_ms")
                .map_err(get)?
                .unwrap_or_default(),
            lease_expired: r
                .try_get::<Option<bool>, _>("lease_expired")
                .map_err(get)?
                .unwrap_or(false),
        },
        "succeeded" => {
            let out: Option<String> = r.try_get("output").map_err(get)?;
            let out = out.unwrap_or_else(|| "null".to_owned());
            WorkflowState::Succeeded {
                output: serde_json::from_str(&out).map_err(|_| corrupt("workflow output", &id))?,
            }
        }
        "awaiting_approval" => WorkflowState::AwaitingApproval {
            waiting: r
                .try_get::<Option<String>, _>("error")
                .map_err(get)?
                .unwrap_or_default(),
        },
        "failed" => WorkflowState::Failed {
            error: r
                .try_get::<Option<String>, _>("error")
                .map_err(get)?
                .unwrap_or_default(),
        },
        other => return Err(corrupt("workflow status", other)),
    };
    Ok(WorkflowStatus {
        id: QueueId::parse(&id)?,
        queue: r.try_get("queue").map_err(get)?,
        name: r.try_get("name").map_err(get)?,
        input: serde_json::from_str(&input).map_err(|_| corrupt("workflow input", &id))?,
        attempt: u32::try_from(attempt).map_err(|_| corrupt("attempt", attempt))?,
        max_attempts: u32::try_from(max_attempts)
            .map_err(|_| corrupt("max_attempts", max_attempts))?,
        run: run.as_deref().map(JobId::parse).transpose()?,
        submitted_at_ms: r.try_get("submitted_at_ms").map_err(get)?,
        finished_at_ms: r.try_get("finished_at_ms").map_err(get)?,
        state,
    })
}
