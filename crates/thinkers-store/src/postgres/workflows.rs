//! The statements of the `workflows` table (see the `thinkers-workflows` crate). Every write of a round
//! names the service process and the round (`attempt`) it belongs to: a process that Restate
//! replaced (it stalled, it was cut off) changes nothing the newer round wrote.

use sqlx::Row as _;
use sqlx::postgres::PgRow;

use super::workflow_rows::{WorkflowCounts, WorkflowId, WorkflowState, WorkflowStatus};
use super::{PgStore, corrupt, pg_error};
use thinkers::Result;
use thinkers::job::JobId;
use thinkers::record::now_ms;

const STATUS_SQL: &str = "SELECT id, name, input, status, attempt, worker, started_at_ms, \
         run_workflow, output, error, submitted_at_ms, finished_at_ms \
     FROM workflows WHERE id = $1";

/// What the engine (Restate) writes.
impl PgStore {
    /// Note a submitted workflow (before the engine is asked to start it).
    pub async fn note_workflow(&self, id: WorkflowId, name: &str, input: &str) -> Result<()> {
        sqlx::query(
            "INSERT INTO workflows (id, name, input, status, submitted_at_ms) \
             VALUES ($1, $2, $3, 'queued', $4)",
        )
        .bind(id.to_string())
        .bind(name)
        .bind(input)
        .bind(now_ms())
        .execute(self.pool())
        .await
        .map_err(|e| pg_error("note workflow", e))?;
        Ok(())
    }

    /// Note the root job of the running round (what `thinkers trace` shows).
    pub async fn set_workflow_run(
        &self,
        id: WorkflowId,
        worker: &str,
        attempt: u32,
        run: JobId,
    ) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE workflows SET run_workflow = $4 \
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

    /// Note that the engine (Restate) runs the workflow now on `worker`: the row becomes
    /// `running` under a new round, whose number is returned for the row's later writes. `None`
    /// when the row is missing or already finished.
    pub async fn start_round(&self, id: WorkflowId, worker: &str) -> Result<Option<u32>> {
        let row = sqlx::query(
            "UPDATE workflows SET status = 'running', worker = $2, attempt = attempt + 1, \
             started_at_ms = $3, run_workflow = NULL \
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
            u32::try_from(n).map_err(|_| corrupt("workflows.attempt", n.to_string()))
        })
        .transpose()
    }

    /// Fail a workflow the engine never started (its submission was refused).
    pub async fn engine_fail(&self, id: WorkflowId, error: &str) -> Result<()> {
        sqlx::query(
            "UPDATE workflows SET status = 'failed', error = $2, finished_at_ms = $3 \
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

    /// Store the result of a round; `false` when a newer round took the workflow over.
    pub async fn finish_workflow(
        &self,
        id: WorkflowId,
        worker: &str,
        attempt: u32,
        result: std::result::Result<&str, &str>,
    ) -> Result<bool> {
        let (status, output, error) = match result {
            Ok(output) => ("succeeded", Some(output), None),
            Err(error) => ("failed", None, Some(error)),
        };
        let done = sqlx::query(
            "UPDATE workflows SET status = $4, output = $5, error = $6, finished_at_ms = $7 \
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

    /// Park a round that stopped for a person: `awaiting_approval` while a call of the run is
    /// pending, `queued` when every one was decided in the meantime (its next round starts at
    /// once). `false` when a newer round took the workflow over.
    pub async fn park_workflow(
        &self,
        id: WorkflowId,
        worker: &str,
        attempt: u32,
        waiting: &str,
    ) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE workflows SET status = CASE WHEN EXISTS (SELECT 1 FROM approvals \
                 WHERE run = $1 AND status = 'pending') THEN 'awaiting_approval' ELSE 'queued' END, \
             error = $4 \
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
}

impl PgStore {
    /// How many workflows are in each state.
    pub async fn workflow_counts(&self) -> Result<WorkflowCounts> {
        let rows = sqlx::query("SELECT status, COUNT(*) AS n FROM workflows GROUP BY status")
            .fetch_all(self.pool())
            .await
            .map_err(|e| pg_error("workflow counts", e))?;
        let mut counts = WorkflowCounts::default();
        for r in rows {
            let status: String = r
                .try_get("status")
                .map_err(|e| pg_error("workflow counts", e))?;
            let n: i64 = r.try_get("n").map_err(|e| pg_error("workflow counts", e))?;
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
    pub async fn workflow_status(&self, id: WorkflowId) -> Result<Option<WorkflowStatus>> {
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
    let run: Option<String> = r.try_get("run_workflow").map_err(get)?;
    let state = match status.as_str() {
        "queued" => WorkflowState::Queued,
        "running" => WorkflowState::Running {
            worker: r
                .try_get::<Option<String>, _>("worker")
                .map_err(get)?
                .unwrap_or_default(),
            since_ms: r
                .try_get::<Option<i64>, _>("started_at_ms")
                .map_err(get)?
                .unwrap_or_default(),
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
        id: WorkflowId::parse(&id)?,
        name: r.try_get("name").map_err(get)?,
        input: serde_json::from_str(&input).map_err(|_| corrupt("workflow input", &id))?,
        attempt: u32::try_from(attempt).map_err(|_| corrupt("attempt", attempt))?,
        run: run.as_deref().map(JobId::parse).transpose()?,
        submitted_at_ms: r.try_get("submitted_at_ms").map_err(get)?,
        finished_at_ms: r.try_get("finished_at_ms").map_err(get)?,
        state,
    })
}
