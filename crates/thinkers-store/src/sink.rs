//! The per-backend halves of the batching recorder ([`super::batch`]), each written once as a
//! macro over a store type: [`batch_sink!`] (its [`super::batch::Sink`] and
//! [`super::owner::OwnerOps`], from one set of statements) and [`recorder_type!`] (the public
//! recorder type).

/// Implements [`super::batch::Sink`] and [`super::owner::OwnerOps`] for a store type with a `pool()`, from one set of
/// statements: `$begin` opens a batch's transaction, `$err` maps errors, `$transient` tells a
/// retryable failure.
macro_rules! batch_sink {
    ($store:ty, $db:ty, $backend:literal, $begin:literal, $err:path, $transient:path) => {
        impl $crate::owner::OwnerOps for $store {
            fn register<'a>(
                &'a self,
                owner: &'a $crate::owner::Owner,
            ) -> futures::future::BoxFuture<'a, thinkers::Result<()>> {
                Box::pin(async move {
                    sqlx::query(
                        "INSERT INTO owners (id, host, pid, process_start, started_at_ms, \
                         heartbeat_at_ms) VALUES ($1, $2, $3, $4, $5, $5)",
                    )
                    .bind(&owner.id)
                    .bind(&owner.host)
                    .bind(owner.pid)
                    .bind(owner.process_start.as_deref())
                    .bind(owner.started_at_ms)
                    .execute(self.pool())
                    .await
                    .map_err(|e| $err("register owner", e))?;
                    Ok(())
                })
            }

            fn heartbeat<'a>(
                &'a self,
                id: &'a str,
                at_ms: i64,
            ) -> futures::future::BoxFuture<'a, thinkers::Result<()>> {
                Box::pin(async move {
                    sqlx::query(
                        "UPDATE owners SET heartbeat_at_ms = $2, ended_at_ms = NULL, \
                         end_reason = NULL WHERE id = $1",
                    )
                    .bind(id)
                    .bind(at_ms)
                    .execute(self.pool())
                    .await
                    .map_err(|e| $err("owner heartbeat", e))?;
                    Ok(())
                })
            }

            fn open_owners(
                &self,
            ) -> futures::future::BoxFuture<
                '_,
                thinkers::Result<Vec<$crate::owner::OwnerRow>>,
            > {
                Box::pin(async move {
                    let rows: Vec<(String, String, i64, Option<String>, i64)> = sqlx::query_as(
                        "SELECT id, host, pid, process_start, heartbeat_at_ms FROM owners \
                         WHERE ended_at_ms IS NULL",
                    )
                    .fetch_all(self.pool())
                    .await
                    .map_err(|e| $err("read owners", e))?;
                    Ok(rows
                        .into_iter()
                        .map(|(id, host, pid, process_start, heartbeat_at_ms)| {
                            $crate::owner::OwnerRow {
                                id,
                                host,
                                pid,
                                process_start,
                                heartbeat_at_ms,
                            }
                        })
                        .collect())
                })
            }

            fn close_owner<'a>(
                &'a self,
                id: &'a str,
                at_ms: i64,
                reason: &'a str,
                error: &'a str,
            ) -> futures::future::BoxFuture<'a, thinkers::Result<u64>> {
                Box::pin(async move {
                    let step = |e| $err("close owner", e);
                    let mut tx = self.pool().begin_with($begin).await.map_err(step)?;
                    let closed = sqlx::query(
                        "UPDATE jobs SET status = 'interrupted', error_kind = 'interrupted', \
                         error = $2, ended_at_ms = CASE WHEN started_at_ms > $3 \
                         THEN started_at_ms ELSE $3 END WHERE owner = $1 AND status = 'running'",
                    )
                    .bind(id)
                    .bind(error)
                    .bind(at_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(step)?
                    .rows_affected();
                    sqlx::query(
                        "UPDATE owners SET ended_at_ms = $2, end_reason = $3 \
                         WHERE id = $1 AND ended_at_ms IS NULL",
                    )
                    .bind(id)
                    .bind(at_ms)
                    .bind(reason)
                    .execute(&mut *tx)
                    .await
                    .map_err(step)?;
                    tx.commit().await.map_err(step)?;
                    Ok(closed)
                })
            }
        }

        impl $crate::batch::Sink for $store {
            fn backend(&self) -> &'static str {
                $backend
            }

            fn write<'a>(
                &'a self,
                sql: &'a $crate::batch::Statements,
                batch: &'a $crate::batch::Batch,
                owner: &'a str,
            ) -> futures::future::BoxFuture<'a, std::result::Result<(), sqlx::Error>> {
                use $crate::batch::{chunks, count};
                type Q<'q> =
                    sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments>;
                Box::pin(async move {
                    let mut tx = self.pool().begin_with($begin).await?;
                    // Starts first, so an end in the same batch always finds its row.
                    for (k, chunk) in chunks(&batch.jobs) {
                        let q: Q<'_> = chunk.iter().fold(
                            sqlx::query(sqlx::AssertSqlSafe(std::sync::Arc::clone(
                                &sql.jobs[k],
                            ))),
                            |q, job| {
                                let s = &job.start;
                                let e = job.end.as_ref();
                                q.bind(s.id.to_string())
                                    .bind(s.parent.map(|p| p.to_string()))
                                    .bind(s.workflow.to_string())
                                    .bind(s.class.as_str())
                                    .bind(s.ordinal.map(i64::from))
                                    .bind(e.map_or("running", |e| e.status.as_str()))
                                    .bind(e.and_then(|e| e.error_kind.as_deref()))
                                    .bind(e.and_then(|e| e.error.as_deref()))
                                    .bind(s.started_at_ms)
                                    .bind(e.map(|e| e.ended_at_ms))
                                    .bind(e.map_or(0, |e| i64::from(e.attempts)))
                                    .bind(owner)
                            },
                        );
                        q.execute(&mut *tx).await?;
                    }
                    for (k, chunk) in chunks(&batch.ends) {
                        let q: Q<'_> = chunk.iter().fold(
                            sqlx::query(sqlx::AssertSqlSafe(std::sync::Arc::clone(
                                &sql.ends[k],
                            ))),
                            |q, e| {
                                q.bind(e.id.to_string())
                                    .bind(e.status.as_str())
                                    .bind(e.error_kind.as_deref())
                                    .bind(e.error.as_deref())
                                    .bind(e.ended_at_ms)
                                    .bind(i64::from(e.attempts))
                                    .bind(owner)
                            },
                        );
                        q.execute(&mut *tx).await?;
                    }
                    for (k, chunk) in chunks(&batch.runs) {
                        let q: Q<'_> = chunk.iter().fold(
                            sqlx::query(sqlx::AssertSqlSafe(std::sync::Arc::clone(
                                &sql.runs[k],
                            ))),
                            |q, r| {
                                q.bind(r.job.to_string())
                                    .bind(r.workflow.to_string())
                                    .bind(r.class.as_str())
                                    .bind(r.entry.as_str())
                                    .bind(r.model.as_str())
                                    .bind(count(r.input_tokens))
                                    .bind(count(r.output_tokens))
                                    .bind(count(r.reasoning_tokens))
                                    .bind(count(r.cached_tokens))
                                    .bind(count(r.output_budget))
                                    .bind(count(r.latency_ms))
                                    .bind(r.stop_reason.as_str())
                                    // An unknown cost is stored as 0 with `priced` false.
                                    .bind(r.cost.unwrap_or(0.0))
                                    .bind(r.currency.as_str())
                                    .bind(r.at_ms)
                                    .bind(r.escalated)
                                    .bind(r.cost.is_some())
                                    .bind(count(r.cache_write_tokens))
                            },
                        );
                        q.execute(&mut *tx).await?;
                    }
                    // Compactions are rare (a few per long conversation): one statement each.
                    for c in &batch.compactions {
                        sqlx::query(
                            "INSERT INTO compactions (job, workflow, conversation_id, \
                             before_tokens, after_tokens, summarized_messages, at_ms) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7)",
                        )
                        .bind(c.job.to_string())
                        .bind(c.workflow.to_string())
                        .bind(c.conversation.as_str())
                        .bind(count(c.before_tokens))
                        .bind(count(c.after_tokens))
                        .bind(count(c.summarized_messages))
                        .bind(c.at_ms)
                        .execute(&mut *tx)
                        .await?;
                    }
                    // Admission events are rare too (throttles, rate changes): one each.
                    for l in &batch.limits {
                        use thinkers::record::LimitEventKind as K;
                        let (status, asked, waited, detail) = match &l.kind {
                            K::Throttle {
                                status,
                                asked_ms,
                                waited_ms,
                                detail,
                            } => (
                                status.map(i64::from),
                                asked_ms.map(count),
                                Some(count(*waited_ms)),
                                detail.as_deref(),
                            ),
                            K::Rate { .. } => (None, None, None, None),
                        };
                        let (axis, per_minute, catalog, source) = match &l.kind {
                            K::Rate {
                                axis,
                                per_minute,
                                catalog_per_minute,
                                source,
                            } => (
                                Some(axis.as_str()),
                                Some(*per_minute),
                                *catalog_per_minute,
                                Some(source.as_str()),
                            ),
                            K::Throttle { .. } => (None, None, None, None),
                        };
                        sqlx::query(
                            "INSERT INTO limit_events (at_ms, budget, entry, job, workflow, \
                             kind, status, asked_ms, waited_ms, detail, axis, per_minute, \
                             catalog_per_minute, source) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                        )
                        .bind(l.at_ms)
                        .bind(l.budget.as_str())
                        .bind(l.entry.as_deref())
                        .bind(l.job.to_string())
                        .bind(l.workflow.to_string())
                        .bind(l.kind.as_str())
                        .bind(status)
                        .bind(asked)
                        .bind(waited)
                        .bind(detail)
                        .bind(axis)
                        .bind(per_minute)
                        .bind(catalog)
                        .bind(source)
                        .execute(&mut *tx)
                        .await?;
                    }
                    tx.commit().await
                })
            }

            fn is_transient(&self, err: &sqlx::Error) -> bool {
                $transient(err)
            }

            fn error(&self, step: &str, err: sqlx::Error) -> thinkers::Error {
                $err(step, err)
            }
        }
    };
}
pub(crate) use batch_sink;

/// A public recorder type over [`super::batch::BatchRecorder`] for one store type: `new`, `failed_rows`,
/// `with_durable_calls`, and the [`thinkers::record::Recorder`] methods forwarded.
macro_rules! recorder_type {
    ($(#[$doc:meta])* $name:ident, $store:ty) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name($crate::batch::BatchRecorder);

        impl $name {
            /// Start a recorder writing to `store`, with durable model calls on (see
            /// [`Self::with_durable_calls`]). Spawns the writer task on the current tokio
            /// runtime, so it must be called from within one.
            pub fn new(store: &$store) -> thinkers::Result<Self> {
                $crate::batch::BatchRecorder::new(store.clone(), stringify!($name))
                    .map(Self)
            }

            /// Whether a model call's row is committed before its answer is handed to the job
            /// that asked for it (group commit: calls wait for their batch, not for a commit
            /// each). On by default.
            #[must_use]
            pub fn with_durable_calls(mut self, on: bool) -> Self {
                self.0.set_durable_calls(on);
                self
            }

            /// How many rows could not be written (after retries) or were queued after the
            /// writer stopped. Each such failure is also logged and reported by the next flush.
            pub fn failed_rows(&self) -> u64 {
                self.0.failed_rows()
            }
        }

        impl thinkers::record::Recorder for $name {
            fn job_started(&self, row: thinkers::record::JobStart) {
                self.0.job_started(row);
            }
            fn job_finished(&self, row: thinkers::record::JobEnd) {
                self.0.job_finished(row);
            }
            fn llm_run(&self, row: thinkers::record::LlmRun) {
                self.0.llm_run(row);
            }
            fn llm_run_durable(
                &self,
                row: thinkers::record::LlmRun,
            ) -> futures::future::BoxFuture<'_, thinkers::Result<()>> {
                self.0.llm_run_durable(row)
            }
            fn compaction(&self, row: thinkers::record::CompactionRow) {
                self.0.compaction(row);
            }
            fn limit_event(&self, row: thinkers::record::LimitEvent) {
                self.0.limit_event(row);
            }
            fn flush(&self) -> futures::future::BoxFuture<'_, thinkers::Result<()>> {
                self.0.flush()
            }
            fn close(&self) -> futures::future::BoxFuture<'_, thinkers::Result<()>> {
                self.0.close()
            }
            fn unwritten(&self) -> u64 {
                self.0.unwritten()
            }
        }
    };
}
pub(crate) use recorder_type;
