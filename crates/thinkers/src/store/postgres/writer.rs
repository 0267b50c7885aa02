//! [`PgRecorder`]: the PostgreSQL twin of [`crate::store::PgRecorder`].
//!
//! Same design: recorder methods push onto an unbounded channel; a writer task takes what is
//! queued (up to [`BATCH_ROWS`] messages), folds each job's start and end into one row, and
//! writes the batch in one transaction of multi-row statements of fixed shapes (chunks of 64,
//! 32, …, 1 rows, numbered `$n` parameters) so prepared statements are reused.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::postgres::{PgArguments, PgPool, Postgres};
use sqlx::{AssertSqlSafe, query::Query};
use tokio::sync::{mpsc, oneshot};

use super::{PgStore, is_transient, pg_error};
use crate::job::JobId;
use crate::record::{CompactionRow, JobEnd, JobStart, LlmRun, Recorder};
use crate::{Error, Result};

/// The most messages one batch (one transaction) takes from the queue.
const BATCH_ROWS: usize = 512;

/// Row counts of the multi-row statements, largest first; any count is a sum of these.
const CHUNKS: [usize; 7] = [64, 32, 16, 8, 4, 2, 1];

/// How often a batch that failed with a transient error is tried again.
const MAX_RETRIES: u32 = 5;

/// The wait before the first retry; doubled each time.
const RETRY_BACKOFF: Duration = Duration::from_millis(25);

enum Msg {
    Start(JobStart),
    End(JobEnd),
    Run(LlmRun),
    Compaction(CompactionRow),
    Flush(oneshot::Sender<Result<()>>),
}

#[derive(Default)]
struct Shared {
    failed_rows: AtomicU64,
    writer_gone_reported: AtomicBool,
}

/// A [`Recorder`] writing to a [`PgStore`] in batches. Cheap to clone; clones share the
/// queue and the writer task, which ends when the last clone is dropped.
///
/// See the [module guarantees](crate::store) for what is durable when.
#[derive(Clone)]
pub struct PgRecorder {
    tx: mpsc::UnboundedSender<Msg>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for PgRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgRecorder")
            .field("failed_rows", &self.failed_rows())
            .finish_non_exhaustive()
    }
}

impl PgRecorder {
    /// Start a recorder writing to `store`. Spawns the writer task on the current tokio runtime,
    /// so it must be called from within one.
    pub fn new(store: &PgStore) -> Result<Self> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
            Error::system(
                "PgRecorder::new",
                format!("must be called inside a tokio runtime: {e}"),
            )
        })?;
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::default());
        runtime.spawn(write_loop(store.pool().clone(), rx, Arc::clone(&shared)));
        Ok(Self { tx, shared })
    }

    /// How many rows could not be written (after retries) or were queued after the writer
    /// stopped. Each such failure is also logged and reported by the next flush.
    pub fn failed_rows(&self) -> u64 {
        self.shared.failed_rows.load(Ordering::Relaxed)
    }

    fn send(&self, msg: Msg) {
        if self.tx.send(msg).is_err() {
            self.shared.failed_rows.fetch_add(1, Ordering::Relaxed);
            if !self
                .shared
                .writer_gone_reported
                .swap(true, Ordering::Relaxed)
            {
                tracing::error!("postgres recorder: the writer task has stopped; rows are dropped");
            }
        }
    }
}

fn writer_gone() -> Error {
    Error::system(
        "postgres recorder",
        "the writer task has stopped (was its tokio runtime shut down?)",
    )
}

impl Recorder for PgRecorder {
    fn job_started(&self, row: JobStart) {
        self.send(Msg::Start(row));
    }

    fn job_finished(&self, row: JobEnd) {
        self.send(Msg::End(row));
    }

    fn llm_run(&self, row: LlmRun) {
        self.send(Msg::Run(row));
    }

    fn compaction(&self, row: CompactionRow) {
        self.send(Msg::Compaction(row));
    }

    fn flush(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let (done, wait) = oneshot::channel();
            self.tx.send(Msg::Flush(done)).map_err(|_| writer_gone())?;
            wait.await.map_err(|_| writer_gone())?
        })
    }
}

/// One job row to upsert from its start, with its end folded in when both are in the batch.
struct JobUpsert {
    start: JobStart,
    end: Option<JobEnd>,
}

/// What one transaction writes.
#[derive(Default)]
struct Batch {
    jobs: Vec<JobUpsert>,
    by_id: HashMap<JobId, usize>,
    /// Ends whose start is not in this batch (already stored, or yet to come).
    ends: Vec<JobEnd>,
    runs: Vec<LlmRun>,
    compactions: Vec<CompactionRow>,
    rows: u64,
}

impl Batch {
    fn add(&mut self, msg: Msg, flushes: &mut Vec<oneshot::Sender<Result<()>>>) {
        match msg {
            // PostgreSQL refuses a statement that upserts one row twice, so a batch holds each
            // job id at most once among the starts and once among the lone ends.
            Msg::Start(start) => {
                self.rows += 1;
                match self
                    .by_id
                    .get(&start.id)
                    .and_then(|&i| self.jobs.get_mut(i))
                {
                    Some(job) => job.start = start,
                    None => {
                        self.by_id.insert(start.id, self.jobs.len());
                        self.jobs.push(JobUpsert { start, end: None });
                    }
                }
            }
            Msg::End(end) => {
                self.rows += 1;
                match self.by_id.get(&end.id).and_then(|&i| self.jobs.get_mut(i)) {
                    Some(job) => job.end = Some(end),
                    None => match self.ends.iter_mut().find(|e| e.id == end.id) {
                        Some(earlier) => *earlier = end,
                        None => self.ends.push(end),
                    },
                }
            }
            Msg::Run(run) => {
                self.rows += 1;
                self.runs.push(run);
            }
            Msg::Compaction(row) => {
                self.rows += 1;
                self.compactions.push(row);
            }
            Msg::Flush(done) => flushes.push(done),
        }
    }

    fn clear(&mut self) {
        self.jobs.clear();
        self.by_id.clear();
        self.ends.clear();
        self.runs.clear();
        self.compactions.clear();
        self.rows = 0;
    }
}

/// The statement texts, one per chunk size and kind, built once per writer.
struct Statements {
    jobs: Vec<Arc<str>>,
    ends: Vec<Arc<str>>,
    runs: Vec<Arc<str>>,
}

impl Statements {
    fn new() -> Self {
        let build = |head: &str, columns: usize, tail: &str| -> Vec<Arc<str>> {
            CHUNKS
                .iter()
                .map(|&rows| {
                    let values = (0..rows)
                        .map(|r| {
                            let params: Vec<String> = (1..=columns)
                                .map(|c| format!("${}", r * columns + c))
                                .collect();
                            format!("({})", params.join(", "))
                        })
                        .collect::<Vec<_>>()
                        .join(", ");
                    Arc::from(format!("{head} VALUES {values} {tail}"))
                })
                .collect()
        };
        Self {
            // A start (with its end, when the batch holds both). Re-inserting a start keeps an
            // end that arrived earlier: the end columns are only overwritten when this row
            // carries an end.
            jobs: build(
                "INSERT INTO jobs (id, parent, workflow, class, ordinal, status, error_kind, \
                 error, started_at_ms, ended_at_ms, attempts)",
                11,
                "ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, \
                 workflow = excluded.workflow, class = excluded.class, \
                 ordinal = excluded.ordinal, started_at_ms = excluded.started_at_ms, \
                 status = CASE WHEN excluded.ended_at_ms IS NULL THEN jobs.status \
                 ELSE excluded.status END, \
                 error_kind = CASE WHEN excluded.ended_at_ms IS NULL THEN jobs.error_kind \
                 ELSE excluded.error_kind END, \
                 error = CASE WHEN excluded.ended_at_ms IS NULL THEN jobs.error \
                 ELSE excluded.error END, \
                 ended_at_ms = COALESCE(excluded.ended_at_ms, jobs.ended_at_ms), \
                 attempts = CASE WHEN excluded.ended_at_ms IS NULL THEN jobs.attempts \
                 ELSE excluded.attempts END",
            ),
            // An end alone: updates the row, or inserts a partial one the start completes.
            ends: build(
                "INSERT INTO jobs (id, status, error_kind, error, ended_at_ms, attempts)",
                6,
                "ON CONFLICT (id) DO UPDATE SET status = excluded.status, \
                 error_kind = excluded.error_kind, error = excluded.error, \
                 ended_at_ms = excluded.ended_at_ms, attempts = excluded.attempts",
            ),
            runs: build(
                "INSERT INTO llm_runs (job, workflow, class, entry, model, input_tokens, \
                 output_tokens, reasoning_tokens, cached_tokens, output_budget, latency_ms, \
                 stop_reason, cost, currency, at_ms, escalated)",
                16,
                "",
            ),
        }
    }
}

/// Split `rows` into chunks of the sizes in [`CHUNKS`], yielding each chunk with the index of
/// its size.
fn chunks<T>(rows: &[T]) -> impl Iterator<Item = (usize, &[T])> {
    let mut rest = rows;
    std::iter::from_fn(move || {
        let (k, &size) = CHUNKS
            .iter()
            .enumerate()
            .find(|&(_, &size)| size <= rest.len())?;
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        Some((k, chunk))
    })
}

type Q<'a> = Query<'a, Postgres, PgArguments>;

/// A token count as the signed integer PostgreSQL stores.
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn bind_job<'a>(q: Q<'a>, job: &'a JobUpsert) -> Q<'a> {
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
}

fn bind_end<'a>(q: Q<'a>, e: &'a JobEnd) -> Q<'a> {
    q.bind(e.id.to_string())
        .bind(e.status.as_str())
        .bind(e.error_kind.as_deref())
        .bind(e.error.as_deref())
        .bind(e.ended_at_ms)
        .bind(i64::from(e.attempts))
}

fn bind_run<'a>(q: Q<'a>, r: &'a LlmRun) -> Q<'a> {
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
        .bind(r.cost)
        .bind(r.currency.as_str())
        .bind(r.at_ms)
        .bind(r.escalated)
}

/// Write one batch in one transaction: starts first, so an end in the same batch always finds
/// its row.
async fn write_batch(
    pool: &PgPool,
    sql: &Statements,
    batch: &Batch,
) -> std::result::Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    for (k, chunk) in chunks(&batch.jobs) {
        let q = chunk.iter().fold(
            sqlx::query(AssertSqlSafe(Arc::clone(&sql.jobs[k]))),
            bind_job,
        );
        q.execute(&mut *tx).await?;
    }
    for (k, chunk) in chunks(&batch.ends) {
        let q = chunk.iter().fold(
            sqlx::query(AssertSqlSafe(Arc::clone(&sql.ends[k]))),
            bind_end,
        );
        q.execute(&mut *tx).await?;
    }
    for (k, chunk) in chunks(&batch.runs) {
        let q = chunk.iter().fold(
            sqlx::query(AssertSqlSafe(Arc::clone(&sql.runs[k]))),
            bind_run,
        );
        q.execute(&mut *tx).await?;
    }
    // Compactions are rare (a few per long conversation): one statement each.
    for c in &batch.compactions {
        sqlx::query(
            "INSERT INTO compactions (job, workflow, conversation_id, before_tokens, \
             after_tokens, summarized_messages, at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7)",
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
    tx.commit().await
}

/// Write with retries on transient failures.
async fn write_with_retries(
    pool: &PgPool,
    sql: &Statements,
    batch: &Batch,
) -> std::result::Result<(), sqlx::Error> {
    let mut retry = 0;
    loop {
        match write_batch(pool, sql, batch).await {
            Ok(()) => return Ok(()),
            Err(e) if retry < MAX_RETRIES && is_transient(&e) => {
                let wait = RETRY_BACKOFF.saturating_mul(1 << retry);
                retry += 1;
                tracing::warn!(error = %e, rows = batch.rows, retry, ?wait,
                    "postgres recorder: batch failed transiently; retrying");
                tokio::time::sleep(wait).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The writer task: batch, write, answer flushes. Ends when every sender is gone.
async fn write_loop(pool: PgPool, mut rx: mpsc::UnboundedReceiver<Msg>, shared: Arc<Shared>) {
    let sql = Statements::new();
    let mut inbox = Vec::with_capacity(BATCH_ROWS);
    let mut batch = Batch::default();
    let mut flushes = Vec::new();
    // Failures since the last flush was answered: how many rows, and the last error.
    let mut unreported: Option<(u64, String)> = None;
    while rx.recv_many(&mut inbox, BATCH_ROWS).await > 0 {
        for msg in inbox.drain(..) {
            batch.add(msg, &mut flushes);
        }
        if batch.rows > 0
            && let Err(e) = write_with_retries(&pool, &sql, &batch).await
        {
            let err = pg_error("write batch", e);
            tracing::error!(error = %err, rows = batch.rows,
                "postgres recorder: batch could not be written; its rows are lost");
            shared.failed_rows.fetch_add(batch.rows, Ordering::Relaxed);
            let lost = unreported.as_ref().map_or(0, |(n, _)| *n) + batch.rows;
            unreported = Some((lost, err.to_string()));
        }
        batch.clear();
        if !flushes.is_empty() {
            for done in flushes.drain(..) {
                let answer = match &unreported {
                    None => Ok(()),
                    Some((lost, last)) => Err(Error::external(
                        "postgres",
                        "write batch",
                        format!("{lost} recorded rows could not be written; last error: {last}"),
                    )),
                };
                // The flusher may have stopped waiting; nothing to do then.
                let _ = done.send(answer);
            }
            unreported = None;
        }
    }
    tracing::debug!("postgres recorder: writer stopped");
}
