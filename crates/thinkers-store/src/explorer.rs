//! Queries of the runs explorer (`thinkers serve`): a filtered, paged list of workflows, the
//! root classes to filter by, stored benchmark reports, and admission's events (throttles and
//! rate changes, [`LimitEvent`]). Each statement is written once and
//! expanded for SQLite and PostgreSQL (the SQL is the same; only the bind markers differ, which
//! `QueryBuilder` writes).

use serde::{Deserialize, Serialize};
use sqlx::{QueryBuilder, Row as _};

use super::{Store, WorkflowSummary};
use thinkers::job::JobId;
use thinkers::record::{JobStatus, LimitEvent, LimitEventKind, now_ms};
use thinkers::{Error, Result};

/// Which workflows [`Store::workflow_page`] returns: newest first (by the root job's start),
/// `limit` of them after skipping `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowQuery {
    /// Only workflows whose root job has this status.
    pub status: Option<JobStatus>,
    /// Only workflows whose root job has this class.
    pub class: Option<String>,
    /// At most this many rows.
    pub limit: u32,
    /// Rows skipped before the first returned.
    pub offset: u64,
}

impl Default for WorkflowQuery {
    fn default() -> Self {
        Self {
            status: None,
            class: None,
            limit: 25,
            offset: 0,
        }
    }
}

/// One page of workflows and how many match the query in all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkflowPage {
    /// The rows of the page, newest first.
    pub workflows: Vec<WorkflowSummary>,
    /// How many workflows match the filters (every page together).
    pub total: u64,
}

/// A benchmark's report as stored by [`Store::save_benchmark_report`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredBenchmark {
    /// The benchmark job.
    pub job: String,
    /// Its workflow.
    pub workflow: String,
    /// When the report was stored, milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The benchmark report (`thinkers::benchmark::BenchmarkReport`) as JSON.
    pub report: serde_json::Value,
}

fn db(step: &str, e: &sqlx::Error) -> Error {
    Error::external("database", step, e.to_string())
}

fn corrupt(what: &str, value: &str) -> Error {
    Error::system(
        "store (decode)",
        format!("stored {what} `{value}` is invalid"),
    )
}

/// A `limit_events` row.
#[derive(sqlx::FromRow)]
struct LimitRow {
    at_ms: i64,
    budget: String,
    entry: Option<String>,
    job: String,
    workflow: String,
    kind: String,
    status: Option<i64>,
    asked_ms: Option<i64>,
    waited_ms: Option<i64>,
    detail: Option<String>,
    axis: Option<String>,
    per_minute: Option<f64>,
    catalog_per_minute: Option<f64>,
    source: Option<String>,
}

fn limit_from_row(row: LimitRow) -> Result<LimitEvent> {
    let id = |text: &str| JobId::parse(text).map_err(|_| corrupt("job id", text));
    let unsigned = |n: i64| u64::try_from(n).map_err(|_| corrupt("wait", &n.to_string()));
    let kind = match row.kind.as_str() {
        "throttle" => LimitEventKind::Throttle {
            status: row.status.and_then(|s| u16::try_from(s).ok()),
            asked_ms: row.asked_ms.map(unsigned).transpose()?,
            waited_ms: unsigned(row.waited_ms.unwrap_or_default())?,
            detail: row.detail,
        },
        "rate" => LimitEventKind::Rate {
            axis: row.axis.unwrap_or_default(),
            per_minute: row.per_minute.unwrap_or_default(),
            catalog_per_minute: row.catalog_per_minute,
            source: row.source.unwrap_or_default(),
        },
        other => return Err(corrupt("limit event kind", other)),
    };
    Ok(LimitEvent {
        at_ms: row.at_ms,
        job: id(&row.job)?,
        workflow: id(&row.workflow)?,
        budget: row.budget,
        entry: row.entry,
        kind,
    })
}

/// The statements, expanded once per backend (`$db` the sqlx database, `$pool` its pool).
macro_rules! explorer_backend {
    ($name:ident, $db:ty, $pool:ty) => {
        mod $name {
            use super::*;

            fn filtered(q: &WorkflowQuery, select: &str) -> QueryBuilder<$db> {
                let mut b = QueryBuilder::<$db>::new(select);
                b.push(" FROM jobs r WHERE r.parent IS NULL AND r.workflow = r.id");
                if let Some(s) = q.status {
                    b.push(" AND r.status = ").push_bind(s.as_str().to_owned());
                }
                if let Some(c) = &q.class {
                    b.push(" AND r.class = ").push_bind(c.clone());
                }
                b
            }

            pub(super) async fn page(pool: &$pool, q: &WorkflowQuery) -> Result<WorkflowPage> {
                let total: i64 = filtered(q, "SELECT COUNT(*) AS n")
                    .build()
                    .fetch_one(pool)
                    .await
                    .map_err(|e| db("count workflows", &e))?
                    .try_get("n")
                    .map_err(|e| db("decode", &e))?;
                let mut b = filtered(
                    q,
                    "SELECT r.id, r.class, r.status, r.started_at_ms, r.ended_at_ms, \
                     (SELECT COUNT(*) FROM jobs j WHERE j.workflow = r.id) AS job_count",
                );
                b.push(" ORDER BY r.started_at_ms DESC, r.id DESC LIMIT ")
                    .push_bind(i64::from(q.limit))
                    .push(" OFFSET ")
                    .push_bind(i64::try_from(q.offset).unwrap_or(i64::MAX));
                let rows = b
                    .build()
                    .fetch_all(pool)
                    .await
                    .map_err(|e| db("list workflows", &e))?;
                let mut workflows = Vec::with_capacity(rows.len());
                for row in &rows {
                    let get = |e: sqlx::Error| db("decode", &e);
                    let id: String = row.try_get("id").map_err(get)?;
                    let status: String = row.try_get("status").map_err(get)?;
                    let job_count: i64 = row.try_get("job_count").map_err(get)?;
                    workflows.push(WorkflowSummary {
                        workflow: JobId::parse(&id).map_err(|_| corrupt("job id", &id))?,
                        root_class: row
                            .try_get::<Option<String>, _>("class")
                            .map_err(get)?
                            .unwrap_or_default(),
                        started_at_ms: row
                            .try_get::<Option<i64>, _>("started_at_ms")
                            .map_err(get)?
                            .unwrap_or_default(),
                        ended_at_ms: row.try_get("ended_at_ms").map_err(get)?,
                        status: JobStatus::parse(&status)
                            .ok_or_else(|| corrupt("job status", &status))?,
                        job_count: u64::try_from(job_count).unwrap_or(0),
                    });
                }
                Ok(WorkflowPage {
                    workflows,
                    total: u64::try_from(total).unwrap_or(0),
                })
            }

            pub(super) async fn root_classes(pool: &$pool) -> Result<Vec<String>> {
                let rows = sqlx::query(
                    "SELECT DISTINCT class FROM jobs WHERE parent IS NULL AND workflow = id \
                     AND class IS NOT NULL ORDER BY class",
                )
                .fetch_all(pool)
                .await
                .map_err(|e| db("list root classes", &e))?;
                rows.iter()
                    .map(|r| r.try_get("class").map_err(|e| db("decode", &e)))
                    .collect()
            }

            pub(super) async fn limit_events(
                pool: &$pool,
                since_ms: Option<i64>,
            ) -> Result<Vec<LimitEvent>> {
                let mut b = QueryBuilder::<$db>::new(
                    "SELECT at_ms, budget, entry, job, workflow, kind, status, asked_ms, \
                     waited_ms, detail, axis, per_minute, catalog_per_minute, source \
                     FROM limit_events",
                );
                if let Some(t) = since_ms {
                    b.push(" WHERE at_ms >= ").push_bind(t);
                }
                b.push(" ORDER BY at_ms, budget, kind, axis");
                let rows: Vec<LimitRow> = b
                    .build_query_as()
                    .fetch_all(pool)
                    .await
                    .map_err(|e| db("read limit events", &e))?;
                rows.into_iter().map(limit_from_row).collect()
            }

            pub(super) async fn save_report(
                pool: &$pool,
                workflow: JobId,
                job: JobId,
                report: &str,
            ) -> Result<()> {
                let mut b = QueryBuilder::<$db>::new(
                    "INSERT INTO benchmark_reports (job, workflow, report, at_ms) VALUES (",
                );
                let mut v = b.separated(", ");
                v.push_bind(job.to_string())
                    .push_bind(workflow.to_string())
                    .push_bind(report.to_owned())
                    .push_bind(now_ms());
                b.push(
                    ") ON CONFLICT (job) DO UPDATE SET report = excluded.report, \
                     at_ms = excluded.at_ms",
                );
                b.build()
                    .execute(pool)
                    .await
                    .map_err(|e| db("store benchmark report", &e))?;
                Ok(())
            }

            pub(super) async fn reports(
                pool: &$pool,
                workflow: Option<JobId>,
                limit: u32,
            ) -> Result<Vec<StoredBenchmark>> {
                let mut b = QueryBuilder::<$db>::new(
                    "SELECT job, workflow, report, at_ms FROM benchmark_reports",
                );
                if let Some(w) = workflow {
                    b.push(" WHERE workflow = ").push_bind(w.to_string());
                }
                b.push(" ORDER BY at_ms DESC, job DESC LIMIT ")
                    .push_bind(i64::from(limit));
                let rows = b
                    .build()
                    .fetch_all(pool)
                    .await
                    .map_err(|e| db("read benchmark reports", &e))?;
                let mut out = Vec::with_capacity(rows.len());
                for row in &rows {
                    let get = |e: sqlx::Error| db("decode", &e);
                    let text: String = row.try_get("report").map_err(get)?;
                    out.push(StoredBenchmark {
                        job: row.try_get("job").map_err(get)?,
                        workflow: row.try_get("workflow").map_err(get)?,
                        at_ms: row.try_get("at_ms").map_err(get)?,
                        report: serde_json::from_str(&text)
                            .map_err(|_| corrupt("benchmark report", "(not JSON)"))?,
                    });
                }
                Ok(out)
            }
        }
    };
}

explorer_backend!(on_sqlite, sqlx::Sqlite, sqlx::SqlitePool);
#[cfg(feature = "postgres")]
explorer_backend!(on_postgres, sqlx::Postgres, sqlx::PgPool);

impl Store {
    /// A page of workflows matching `query`, newest first, and how many match in all.
    pub async fn workflow_page(&self, query: &WorkflowQuery) -> Result<WorkflowPage> {
        match self {
            Self::Sqlite(s) => on_sqlite::page(s.pool(), query).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => on_postgres::page(s.pool(), query).await,
        }
    }

    /// The classes of the recorded workflows' root jobs, sorted.
    pub async fn root_classes(&self) -> Result<Vec<String>> {
        match self {
            Self::Sqlite(s) => on_sqlite::root_classes(s.pool()).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => on_postgres::root_classes(s.pool()).await,
        }
    }

    /// Admission's recorded events (throttles and rate changes) at or after `since_ms` (all
    /// when `None`), oldest first.
    pub async fn limit_events(&self, since_ms: Option<i64>) -> Result<Vec<LimitEvent>> {
        match self {
            Self::Sqlite(s) => on_sqlite::limit_events(s.pool(), since_ms).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => on_postgres::limit_events(s.pool(), since_ms).await,
        }
    }

    /// Keep the report of the benchmark job `job` of `workflow` (serialised as JSON), replacing
    /// one stored before for the same job.
    pub async fn save_benchmark_report(
        &self,
        workflow: JobId,
        job: JobId,
        report: &impl serde::Serialize,
    ) -> Result<()> {
        let text = serde_json::to_string(report).map_err(|e| {
            Error::system(
                "store",
                format!("the benchmark report does not serialise: {e}"),
            )
        })?;
        match self {
            Self::Sqlite(s) => on_sqlite::save_report(s.pool(), workflow, job, &text).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => on_postgres::save_report(s.pool(), workflow, job, &text).await,
        }
    }

    /// The stored benchmark reports, newest first, at most `limit` (only those of `workflow`
    /// when given).
    pub async fn benchmark_reports(
        &self,
        workflow: Option<JobId>,
        limit: u32,
    ) -> Result<Vec<StoredBenchmark>> {
        match self {
            Self::Sqlite(s) => on_sqlite::reports(s.pool(), workflow, limit).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => on_postgres::reports(s.pool(), workflow, limit).await,
        }
    }
}
