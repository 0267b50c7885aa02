//! The batching recorder, written once for SQLite and PostgreSQL ([`super::SqliteRecorder`],
//! [`super::PgRecorder`]).
//!
//! The recorder methods only push onto an unbounded channel, so the dispatcher never waits on
//! the database. One writer task takes everything queued (up to [`BATCH_ROWS`] messages), folds
//! each job's start and end into one row, and writes the batch in one transaction of multi-row
//! statements of fixed shapes (chunks of 64, 32, …, 1 rows, `$n` parameters, which both
//! databases read), so prepared statements are reused. A batch holds each job id at most once
//! among the starts and once among the lone ends, since PostgreSQL refuses a statement that
//! upserts one row twice.
//!
//! **Group commit.** A model call recorded through
//! [`Recorder::llm_run_durable`](thinkers::record::Recorder::llm_run_durable) waits for the commit
//! of the batch that holds its row (when durable calls are on, the default). Calls that arrive
//! while a batch is being written wait for the next one, so fifty calls in flight share a
//! commit instead of paying one each. Rows are written in the order they were queued, so a
//! call's durable row also makes its job's start row durable.
//!
//! **Ownership.** The writer registers its process as an owner ([`super::owner`]) before its
//! first batch, names it in every job row, beats its heartbeat every [`HEARTBEAT`], and on
//! [`Recorder::close`] writes what is queued, then ends its own running jobs as interrupted and
//! closes its owner row.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use super::owner::{HEARTBEAT, Owner, OwnerOps};
use thinkers::job::JobId;
use thinkers::record::{CompactionRow, JobEnd, JobStart, LimitEvent, LlmRun, Recorder, now_ms};
use thinkers::{Error, Result};

/// The most messages one batch (one transaction) takes from the queue.
pub(crate) const BATCH_ROWS: usize = 512;

/// Row counts of the multi-row statements, largest first; any count is a sum of these.
pub(crate) const CHUNKS: [usize; 7] = [64, 32, 16, 8, 4, 2, 1];

/// How often a batch that failed with a transient error is tried again.
const MAX_RETRIES: u32 = 5;

/// The wait before the first retry; doubled each time.
const RETRY_BACKOFF: Duration = Duration::from_millis(25);

type Done = oneshot::Sender<Result<()>>;

pub(crate) enum Msg {
    Start(JobStart),
    End(JobEnd),
    /// A model call; with a sender, answered after the commit of the batch holding it.
    Run(LlmRun, Option<Done>),
    Compaction(CompactionRow),
    Limit(LimitEvent),
    Flush(Done),
    Close(Done),
}

/// One job row to upsert from its start, with its end folded in when both are in the batch.
pub(crate) struct JobUpsert {
    pub(crate) start: JobStart,
    pub(crate) end: Option<JobEnd>,
}

/// What one transaction writes.
#[derive(Default)]
pub(crate) struct Batch {
    pub(crate) jobs: Vec<JobUpsert>,
    by_id: HashMap<JobId, usize>,
    /// Ends whose start is not in this batch (already stored, or yet to come).
    pub(crate) ends: Vec<JobEnd>,
    pub(crate) runs: Vec<LlmRun>,
    pub(crate) compactions: Vec<CompactionRow>,
    pub(crate) limits: Vec<LimitEvent>,
    rows: u64,
    /// Model calls waiting for this batch's commit.
    durable: Vec<Done>,
}

impl Batch {
    /// Add `msg`; a flush or close is handed back to be answered after the write.
    fn add(&mut self, msg: Msg) -> Option<Msg> {
        match msg {
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
            Msg::Run(run, done) => {
                self.rows += 1;
                self.runs.push(run);
                self.durable.extend(done);
            }
            Msg::Compaction(row) => {
                self.rows += 1;
                self.compactions.push(row);
            }
            Msg::Limit(row) => {
                self.rows += 1;
                self.limits.push(row);
            }
            other @ (Msg::Flush(_) | Msg::Close(_)) => return Some(other),
        }
        None
    }

    fn clear(&mut self) {
        self.jobs.clear();
        self.by_id.clear();
        self.ends.clear();
        self.runs.clear();
        self.compactions.clear();
        self.limits.clear();
        self.rows = 0;
    }
}

/// The statement texts, one per chunk size and kind, built once per writer.
pub(crate) struct Statements {
    pub(crate) jobs: Vec<Arc<str>>,
    pub(crate) ends: Vec<Arc<str>>,
    pub(crate) runs: Vec<Arc<str>>,
}

impl Statements {
    pub(crate) fn new() -> Self {
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
                 error, started_at_ms, ended_at_ms, attempts, owner)",
                12,
                "ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, \
                 workflow = excluded.workflow, class = excluded.class, \
                 ordinal = excluded.ordinal, started_at_ms = excluded.started_at_ms, \
                 owner = excluded.owner, \
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
                "INSERT INTO jobs (id, status, error_kind, error, ended_at_ms, attempts, owner)",
                7,
                "ON CONFLICT (id) DO UPDATE SET status = excluded.status, \
                 error_kind = excluded.error_kind, error = excluded.error, \
                 ended_at_ms = excluded.ended_at_ms, attempts = excluded.attempts",
            ),
            runs: build(
                "INSERT INTO llm_runs (job, workflow, class, entry, model, input_tokens, \
                 output_tokens, reasoning_tokens, cached_tokens, output_budget, latency_ms, \
                 stop_reason, cost, currency, at_ms, escalated, priced, cache_write_tokens)",
                18,
                "",
            ),
        }
    }
}

/// Split `rows` into chunks of the sizes in [`CHUNKS`], yielding each chunk with the index of
/// its size.
pub(crate) fn chunks<T>(rows: &[T]) -> impl Iterator<Item = (usize, &[T])> {
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

/// A token count as the signed integer both databases store.
pub(crate) fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// One backend's writes: a batch in one transaction, and the owner rows.
pub(crate) trait Sink: OwnerOps + 'static {
    /// `sqlite` or `postgres`, for errors and logs.
    fn backend(&self) -> &'static str;
    /// Write `batch` in one transaction, every job row naming `owner`.
    fn write<'a>(
        &'a self,
        sql: &'a Statements,
        batch: &'a Batch,
        owner: &'a str,
    ) -> BoxFuture<'a, std::result::Result<(), sqlx::Error>>;
    /// Whether trying the same write later may succeed.
    fn is_transient(&self, err: &sqlx::Error) -> bool;
    /// `err` as the crate's error, naming the backend and `step`.
    fn error(&self, step: &str, err: sqlx::Error) -> Error;
}

#[derive(Default)]
struct Shared {
    /// Rows handed to the recorder and not yet written (or given up on).
    queued: AtomicU64,
    failed_rows: AtomicU64,
    writer_gone_reported: AtomicBool,
}

/// The batching recorder of either backend (see the module docs). Cheap to clone; clones share
/// the queue and the writer task, which ends at [`Recorder::close`] or when the last clone is
/// dropped.
#[derive(Clone)]
pub(crate) struct BatchRecorder {
    tx: mpsc::UnboundedSender<Msg>,
    shared: Arc<Shared>,
    backend: &'static str,
    durable_calls: bool,
}

impl std::fmt::Debug for BatchRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchRecorder")
            .field("backend", &self.backend)
            .field("durable_calls", &self.durable_calls)
            .field("failed_rows", &self.failed_rows())
            .finish_non_exhaustive()
    }
}

impl BatchRecorder {
    /// Start a recorder writing to `sink`, with durable model calls on. Spawns the writer task
    /// on the current tokio runtime, so it must be called from within one.
    pub(crate) fn new<S: Sink>(sink: S, who: &str) -> Result<Self> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
            Error::system(
                format!("{who}::new"),
                format!("must be called inside a tokio runtime: {e}"),
            )
        })?;
        let (tx, rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::default());
        let backend = sink.backend();
        runtime.spawn(write_loop(sink, rx, Arc::clone(&shared)));
        Ok(Self {
            tx,
            shared,
            backend,
            durable_calls: true,
        })
    }

    /// Whether [`Recorder::llm_run_durable`] waits for its row's commit.
    pub(crate) fn set_durable_calls(&mut self, on: bool) {
        self.durable_calls = on;
    }

    pub(crate) fn failed_rows(&self) -> u64 {
        self.shared.failed_rows.load(Ordering::Relaxed)
    }

    fn writer_gone(&self) -> Error {
        Error::system(
            format!("{} recorder", self.backend),
            "the writer task has stopped (the recorder was closed, or its tokio runtime shut \
             down)",
        )
    }

    /// Queue `msg`; `false` when the writer is gone (the row is counted as lost).
    fn send(&self, msg: Msg) -> bool {
        self.shared.queued.fetch_add(1, Ordering::Relaxed);
        if self.tx.send(msg).is_ok() {
            return true;
        }
        self.shared.failed_rows.fetch_add(1, Ordering::Relaxed);
        if !self
            .shared
            .writer_gone_reported
            .swap(true, Ordering::Relaxed)
        {
            tracing::error!(
                backend = self.backend,
                "recorder: rows arrived after the writer stopped; they are not stored"
            );
        }
        false
    }

    async fn ask(&self, make: impl FnOnce(Done) -> Msg) -> Result<()> {
        let (done, wait) = oneshot::channel();
        if self.tx.send(make(done)).is_err() {
            return Err(self.writer_gone());
        }
        wait.await.map_err(|_| self.writer_gone())?
    }
}

impl Recorder for BatchRecorder {
    fn job_started(&self, row: JobStart) {
        self.send(Msg::Start(row));
    }

    fn job_finished(&self, row: JobEnd) {
        self.send(Msg::End(row));
    }

    fn llm_run(&self, row: LlmRun) {
        self.send(Msg::Run(row, None));
    }

    fn llm_run_durable(&self, row: LlmRun) -> BoxFuture<'_, Result<()>> {
        if !self.durable_calls {
            self.llm_run(row);
            return Box::pin(async { Ok(()) });
        }
        Box::pin(async move {
            self.shared.queued.fetch_add(1, Ordering::Relaxed);
            let (done, wait) = oneshot::channel();
            if self.tx.send(Msg::Run(row, Some(done))).is_err() {
                self.shared.failed_rows.fetch_add(1, Ordering::Relaxed);
                return Err(self.writer_gone());
            }
            wait.await.map_err(|_| self.writer_gone())?
        })
    }

    fn compaction(&self, row: CompactionRow) {
        self.send(Msg::Compaction(row));
    }

    fn limit_event(&self, row: LimitEvent) {
        self.send(Msg::Limit(row));
    }

    fn flush(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(self.ask(Msg::Flush))
    }

    fn close(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            match self.ask(Msg::Close).await {
                // Closed before (by another clone); rows handed over since were logged as lost.
                Err(_) if self.tx.is_closed() => Ok(()),
                other => other,
            }
        })
    }

    fn unwritten(&self) -> u64 {
        self.shared.queued.load(Ordering::Relaxed)
    }
}

/// Write with retries on transient failures.
async fn write_with_retries<S: Sink>(
    sink: &S,
    sql: &Statements,
    batch: &Batch,
    owner: &str,
) -> std::result::Result<(), sqlx::Error> {
    let mut retry = 0;
    loop {
        match sink.write(sql, batch, owner).await {
            Ok(()) => return Ok(()),
            Err(e) if retry < MAX_RETRIES && sink.is_transient(&e) => {
                let wait = RETRY_BACKOFF.saturating_mul(1 << retry);
                retry += 1;
                tracing::warn!(backend = sink.backend(), error = %e, rows = batch.rows, retry,
                    ?wait, "recorder: batch failed transiently; retrying");
                tokio::time::sleep(wait).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The writer task: register the owner, then batch, write, answer flushes and durable calls,
/// beat the heartbeat. Ends at a close or when every sender is gone.
async fn write_loop<S: Sink>(sink: S, mut rx: mpsc::UnboundedReceiver<Msg>, shared: Arc<Shared>) {
    let backend = sink.backend();
    let owner = Owner::this_process();
    if let Err(e) = sink.register(&owner).await {
        tracing::error!(backend, error = %e,
            "recorder: could not register this process as an owner; if it dies, its running \
             jobs will not be closed by the next process");
    }
    let sql = Statements::new();
    let mut inbox = Vec::with_capacity(BATCH_ROWS);
    let mut batch = Batch::default();
    let mut answers: Vec<Msg> = Vec::new();
    // Failures since the last flush was answered: how many rows, and the last error.
    let mut unreported: Option<(u64, String)> = None;
    let mut closing: Option<Done> = None;
    let mut beat = tokio::time::interval(HEARTBEAT);
    beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    beat.tick().await;
    loop {
        let received = tokio::select! {
            n = rx.recv_many(&mut inbox, BATCH_ROWS) => n,
            _ = beat.tick() => {
                if let Err(e) = sink.heartbeat(&owner.id, now_ms()).await {
                    tracing::warn!(backend, error = %e, "recorder: owner heartbeat failed");
                }
                continue;
            }
        };
        if received == 0 {
            break;
        }
        for msg in inbox.drain(..) {
            answers.extend(batch.add(msg));
        }
        let written = if batch.rows == 0 {
            Ok(())
        } else {
            write_with_retries(&sink, &sql, &batch, &owner.id).await
        };
        shared.queued.fetch_sub(
            batch.rows.min(shared.queued.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
        let durable = std::mem::take(&mut batch.durable);
        match written {
            Ok(()) => {
                for done in durable {
                    let _ = done.send(Ok(()));
                }
            }
            Err(e) => {
                let err = sink.error("write batch", e);
                tracing::error!(backend, error = %err, rows = batch.rows,
                    "recorder: batch could not be written; its rows are lost");
                shared.failed_rows.fetch_add(batch.rows, Ordering::Relaxed);
                let lost = unreported.as_ref().map_or(0, |(n, _)| *n) + batch.rows;
                unreported = Some((lost, err.to_string()));
                for done in durable {
                    let _ = done.send(Err(Error::external(
                        backend,
                        "write batch",
                        format!("the model call's row could not be written: {err}"),
                    )));
                }
            }
        }
        batch.clear();
        for msg in answers.drain(..) {
            let done = match msg {
                Msg::Flush(done) => done,
                Msg::Close(done) => {
                    // No more is taken; what is already queued is still written (the loop
                    // ends when the queue is empty).
                    rx.close();
                    closing = Some(done);
                    continue;
                }
                _ => continue,
            };
            let answer = match &unreported {
                None => Ok(()),
                Some((lost, last)) => Err(Error::external(
                    backend,
                    "write batch",
                    format!("{lost} recorded rows could not be written; last error: {last}"),
                )),
            };
            // The flusher may have stopped waiting; nothing to do then.
            let _ = done.send(answer);
            unreported = None;
        }
    }
    if let Some(done) = closing {
        let closed = sink
            .close_owner(
                &owner.id,
                now_ms(),
                "closed",
                "the process stopped before the job ended",
            )
            .await;
        let answer = match (closed, unreported.take()) {
            (Err(e), _) => Err(e),
            (Ok(_), Some((lost, last))) => Err(Error::external(
                backend,
                "write batch",
                format!("{lost} recorded rows could not be written; last error: {last}"),
            )),
            (Ok(n), None) => {
                if n > 0 {
                    tracing::warn!(
                        backend,
                        jobs = n,
                        "recorder closed with jobs still running; they are recorded as \
                         interrupted"
                    );
                }
                Ok(())
            }
        };
        let _ = done.send(answer);
    }
    tracing::debug!(backend, "recorder: writer stopped");
}
