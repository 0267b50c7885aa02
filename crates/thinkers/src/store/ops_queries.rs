//! Queries for the operations reports ([`crate::ops`]): what the sizing, cost and usage reports
//! need beyond the trajectory queries of `query.rs`.

use std::collections::HashMap;

use sqlx::{QueryBuilder, Row, Sqlite};

use super::SqliteStore;
use super::sqlite::{corrupt, db_error};
use crate::Result;
use crate::job::JobId;

/// Ids bound per statement (well under SQLite's host-parameter limit).
const IDS_PER_QUERY: usize = 500;

impl SqliteStore {
    /// The class of each of `ids`, for labelling a report (a workflow's id is its root job's, so
    /// this labels a by-workflow report with the root classes). A job whose start was not
    /// recorded is absent from the map.
    pub async fn job_classes(&self, ids: &[JobId]) -> Result<HashMap<JobId, String>> {
        let mut classes = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(IDS_PER_QUERY) {
            let mut q: QueryBuilder<Sqlite> =
                QueryBuilder::new("SELECT id, class FROM jobs WHERE class IS NOT NULL AND id IN (");
            let mut ids = q.separated(", ");
            for id in chunk {
                ids.push_bind(id.to_string());
            }
            q.push(")");
            let rows = q
                .build()
                .fetch_all(self.pool())
                .await
                .map_err(|e| db_error("read job classes", e))?;
            for row in rows {
                let id: String = row.try_get("id").map_err(|e| db_error("decode", e))?;
                let class: String = row.try_get("class").map_err(|e| db_error("decode", e))?;
                let id = uuid::Uuid::parse_str(&id).map_err(|_| corrupt("job id", &id))?;
                classes.insert(JobId(id), class);
            }
        }
        Ok(classes)
    }

    /// The earliest and latest end time of the recorded model calls at or after `since_ms`
    /// (all of them when `None`), or `None` when there is none: the window a report covers.
    pub async fn llm_run_window(&self, since_ms: Option<i64>) -> Result<Option<(i64, i64)>> {
        let row = sqlx::query(
            "SELECT MIN(at_ms) AS first, MAX(at_ms) AS last FROM llm_runs WHERE at_ms >= ?",
        )
        .bind(since_ms.unwrap_or(i64::MIN))
        .fetch_one(self.pool())
        .await
        .map_err(|e| db_error("read llm run window", e))?;
        let first: Option<i64> = row.try_get("first").map_err(|e| db_error("decode", e))?;
        let last: Option<i64> = row.try_get("last").map_err(|e| db_error("decode", e))?;
        Ok(first.zip(last))
    }
}
