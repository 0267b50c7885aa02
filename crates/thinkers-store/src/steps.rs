//! The journal of durable steps and the approvals (see [`thinkers::durable`]), written once for
//! both backends: one set of statements (`$n` parameters, which SQLite reads too), one row type
//! and one `steps_queries!` body for [`SqliteSteps`] and `PgSteps`. PostgreSQL adds one thing
//! (`after_decision`): a decision marks the run's workflow `queued` once no call of the run is
//! pending.

use serde_json::Value;

use super::SqliteStore;
use thinkers::durable::{Approval, ApprovalKind, ApprovalStatus};
use thinkers::{Error, Result};

pub(crate) mod sql {
    pub(crate) const JOURNALED: &str = "SELECT tool, arguments_hash, outcome, job FROM step_journal \
         WHERE run = $1 AND place = $2 AND call_id = $3";
    /// A started entry, where the key has none.
    pub(crate) const START: &str = "INSERT INTO step_journal \
         (run, place, call_id, tool, arguments_hash, outcome, job, recorded_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run, place, call_id) DO NOTHING";
    /// A finished entry: new, or replacing the started entry of the same call; a finished entry
    /// is never replaced.
    pub(crate) const JOURNAL: &str = "INSERT INTO step_journal \
         (run, place, call_id, tool, arguments_hash, outcome, job, recorded_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run, place, call_id) DO UPDATE \
         SET outcome = excluded.outcome, job = excluded.job, \
             recorded_at_ms = excluded.recorded_at_ms \
         WHERE step_journal.outcome = '\"started\"' AND step_journal.tool = excluded.tool \
           AND step_journal.arguments_hash = excluded.arguments_hash";
    pub(crate) const ASK: &str = "INSERT INTO approvals \
         (id, run, place, call_id, kind, tool, arguments, arguments_hash, job, workflow, \
          read_only_scope, status, requested_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12) \
         ON CONFLICT (run, place, call_id, kind, arguments_hash) DO NOTHING";
    macro_rules! select_approvals {
        () => {
            "SELECT id, run, place, call_id, kind, tool, arguments, arguments_hash, job, \
             workflow, read_only_scope, status, reason, requested_at_ms, decided_at_ms \
             FROM approvals"
        };
    }
    pub(crate) const BY_KEY: &str = concat!(
        select_approvals!(),
        " WHERE run = $1 AND place = $2 AND call_id = $3 AND kind = $4 AND arguments_hash = $5"
    );
    pub(crate) const BY_ID: &str = concat!(select_approvals!(), " WHERE id = $1");
    pub(crate) const PENDING: &str = concat!(
        select_approvals!(),
        " WHERE status = 'pending' ORDER BY requested_at_ms, id"
    );
    pub(crate) const ALL: &str = concat!(select_approvals!(), " ORDER BY requested_at_ms, id");
    pub(crate) const DECIDE: &str = "UPDATE approvals SET status = $2, reason = $3, \
         decided_at_ms = $4 WHERE id = $1 AND status = 'pending'";
}

/// One `approvals` row as stored, in the order of `select_approvals!`.
#[derive(sqlx::FromRow)]
pub(crate) struct ApprovalRow {
    id: String,
    run: String,
    place: String,
    call_id: String,
    kind: String,
    tool: String,
    arguments: String,
    arguments_hash: String,
    job: String,
    workflow: String,
    read_only_scope: i64,
    status: String,
    reason: Option<String>,
    requested_at_ms: i64,
    decided_at_ms: Option<i64>,
}

/// An approval from its stored row.
pub(crate) fn approval_from_row(row: ApprovalRow) -> Result<Approval> {
    let ApprovalRow {
        id,
        run,
        place,
        call_id,
        kind,
        tool,
        arguments,
        arguments_hash,
        job,
        workflow,
        read_only_scope: ro,
        status,
        reason,
        requested_at_ms: at,
        decided_at_ms: decided,
    } = row;
    let status =
        ApprovalStatus::parse(&status).ok_or_else(|| corrupt("approval status", &status))?;
    let kind = ApprovalKind::parse(&kind).ok_or_else(|| corrupt("approval kind", &kind))?;
    let arguments: Value =
        serde_json::from_str(&arguments).map_err(|_| corrupt("approval arguments", &id))?;
    Ok(Approval {
        id,
        run,
        place,
        call_id,
        kind,
        tool,
        arguments,
        arguments_hash,
        job,
        workflow,
        read_only_scope: ro != 0,
        status,
        reason,
        requested_at_ms: at,
        decided_at_ms: decided,
    })
}

fn corrupt(what: &str, value: &str) -> Error {
    Error::system(
        "step store (decode)",
        format!("stored {what} `{value}` is invalid"),
    )
}

/// The [`thinkers::durable::StepStore`] of a store type with a `pool()` method and an
/// `after_decision(&self, run)` hook, mapping sqlx errors with `$err`.
macro_rules! steps_queries {
    ($store:ty, $err:path) => {
        impl $store {
            /// Write a journal entry with `sql` ([`sql::START`] or [`sql::JOURNAL`]).
            async fn write_entry(
                &self,
                sql: &'static str,
                key: &thinkers::durable::StepKey,
                entry: &thinkers::durable::JournalEntry,
            ) -> thinkers::Result<()> {
                let outcome = serde_json::to_string(&entry.outcome).map_err(|e| {
                    thinkers::Error::system("step journal", "the outcome did not serialize")
                        .with_source(e)
                })?;
                sqlx::query(sql)
                    .bind(&key.run)
                    .bind(&key.place)
                    .bind(&key.call_id)
                    .bind(&entry.tool)
                    .bind(&entry.arguments_hash)
                    .bind(outcome)
                    .bind(&entry.job)
                    .bind(thinkers::record::now_ms())
                    .execute(self.pool())
                    .await
                    .map_err(|e| $err("write the step journal", e))?;
                Ok(())
            }
        }

        impl thinkers::durable::StepStore for $store {
            fn journaled<'a>(
                &'a self,
                key: &'a thinkers::durable::StepKey,
            ) -> futures::future::BoxFuture<
                'a,
                thinkers::Result<Option<thinkers::durable::JournalEntry>>,
            > {
                Box::pin(async move {
                    let row: Option<(String, String, String, String)> =
                        sqlx::query_as($crate::steps::sql::JOURNALED)
                            .bind(&key.run)
                            .bind(&key.place)
                            .bind(&key.call_id)
                            .fetch_optional(self.pool())
                            .await
                            .map_err(|e| $err("read the step journal", e))?;
                    row.map(|(tool, arguments_hash, outcome, job)| {
                        let outcome = serde_json::from_str(&outcome).map_err(|_| {
                            thinkers::Error::system(
                                "step store (decode)",
                                format!(
                                    "the journaled outcome of call `{}` is invalid",
                                    key.call_id
                                ),
                            )
                        })?;
                        Ok(thinkers::durable::JournalEntry {
                            tool,
                            arguments_hash,
                            outcome,
                            job,
                        })
                    })
                    .transpose()
                })
            }

            fn start<'a>(
                &'a self,
                key: &'a thinkers::durable::StepKey,
                entry: &'a thinkers::durable::JournalEntry,
            ) -> futures::future::BoxFuture<'a, thinkers::Result<()>> {
                Box::pin(self.write_entry($crate::steps::sql::START, key, entry))
            }

            fn journal<'a>(
                &'a self,
                key: &'a thinkers::durable::StepKey,
                entry: &'a thinkers::durable::JournalEntry,
            ) -> futures::future::BoxFuture<'a, thinkers::Result<()>> {
                Box::pin(self.write_entry($crate::steps::sql::JOURNAL, key, entry))
            }

            fn ask<'a>(
                &'a self,
                request: &'a thinkers::durable::ApprovalRequest,
            ) -> futures::future::BoxFuture<'a, thinkers::Result<thinkers::durable::Approval>> {
                Box::pin(async move {
                    let key = &request.key;
                    sqlx::query($crate::steps::sql::ASK)
                        .bind(uuid::Uuid::now_v7().to_string())
                        .bind(&key.run)
                        .bind(&key.place)
                        .bind(&key.call_id)
                        .bind(request.kind.as_str())
                        .bind(&request.tool)
                        .bind(request.arguments.to_string())
                        .bind(&request.arguments_hash)
                        .bind(&request.job)
                        .bind(&request.workflow)
                        .bind(i64::from(request.read_only_scope))
                        .bind(thinkers::record::now_ms())
                        .execute(self.pool())
                        .await
                        .map_err(|e| $err("store a pending approval", e))?;
                    let row: $crate::steps::ApprovalRow =
                        sqlx::query_as($crate::steps::sql::BY_KEY)
                            .bind(&key.run)
                            .bind(&key.place)
                            .bind(&key.call_id)
                            .bind(request.kind.as_str())
                            .bind(&request.arguments_hash)
                            .fetch_one(self.pool())
                            .await
                            .map_err(|e| $err("read an approval", e))?;
                    $crate::steps::approval_from_row(row)
                })
            }

            fn approvals(
                &self,
                pending_only: bool,
            ) -> futures::future::BoxFuture<'_, thinkers::Result<Vec<thinkers::durable::Approval>>>
            {
                Box::pin(async move {
                    let rows: Vec<$crate::steps::ApprovalRow> = sqlx::query_as(if pending_only {
                        $crate::steps::sql::PENDING
                    } else {
                        $crate::steps::sql::ALL
                    })
                    .fetch_all(self.pool())
                    .await
                    .map_err(|e| $err("list approvals", e))?;
                    rows.into_iter()
                        .map($crate::steps::approval_from_row)
                        .collect()
                })
            }

            fn decide<'a>(
                &'a self,
                id: &'a str,
                decision: &'a thinkers::durable::Decision,
            ) -> futures::future::BoxFuture<'a, thinkers::Result<thinkers::durable::Approval>> {
                Box::pin(async move {
                    let id = id.trim();
                    let wanted = decision.status();
                    let reason = decision.text();
                    // One conditional statement decides (no read-then-write transaction, which
                    // SQLite would refuse to upgrade while the recorder writes).
                    let decided = sqlx::query($crate::steps::sql::DECIDE)
                        .bind(id)
                        .bind(wanted.as_str())
                        .bind(reason)
                        .bind(thinkers::record::now_ms())
                        .execute(self.pool())
                        .await
                        .map_err(|e| $err("decide an approval", e))?
                        .rows_affected()
                        == 1;
                    let row: Option<$crate::steps::ApprovalRow> =
                        sqlx::query_as($crate::steps::sql::BY_ID)
                            .bind(id)
                            .fetch_optional(self.pool())
                            .await
                            .map_err(|e| $err("read an approval", e))?;
                    let Some(row) = row else {
                        return Err(thinkers::durable::unknown_approval(id));
                    };
                    let approval = $crate::steps::approval_from_row(row)?;
                    if !decided && approval.status != wanted {
                        return Err(thinkers::durable::already_decided(&approval));
                    }
                    self.after_decision(&approval.run).await?;
                    Ok(approval)
                })
            }
        }
    };
}
// The PostgreSQL store writes its step store with it too.
#[cfg(feature = "postgres")]
pub(crate) use steps_queries;

/// The journal and the approvals in a [`SqliteStore`]. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct SqliteSteps {
    store: SqliteStore,
}

impl SqliteSteps {
    /// The step store in `store`'s database (its tables were created when it was opened).
    pub fn new(store: &SqliteStore) -> Self {
        Self {
            store: store.clone(),
        }
    }

    fn pool(&self) -> &sqlx::SqlitePool {
        self.store.pool()
    }

    /// The embedded store has no queue: nothing to put back.
    #[allow(clippy::unused_async)]
    async fn after_decision(&self, _run: &str) -> Result<()> {
        Ok(())
    }
}

steps_queries!(SqliteSteps, super::sqlite::db_error);
