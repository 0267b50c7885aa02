//! Tests of the stores, the batching recorders and the queries, each on a fresh database.
//!
//! The conformance tests are written once against [`Backend`] and run on SQLite and, with the
//! `postgres` feature, on PostgreSQL (a fresh schema per test): `both!(name)` makes the tests
//! `name::sqlite` and `name::postgres`.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context as _, Result};

use super::*;
use thinkers::dispatch::Dispatcher;
use thinkers::error::{Error, ErrorKind};
use thinkers::job::{JobId, doer};
use thinkers::ops::Trajectory;
use thinkers::record::{JobEnd, JobStart, JobStatus, LlmRun, Recorder};

/// A store of either backend under test, with its recorder and its read queries.
struct Backend {
    store: Store,
    recorder: Arc<dyn Recorder>,
    records: Arc<dyn RecordStore>,
    /// What reopens the same database (a file path or a URL); `None` for in-memory SQLite.
    target: Option<String>,
    /// The PostgreSQL schema to drop afterwards.
    schema: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl Backend {
    async fn on(store: Store) -> Result<Self> {
        Ok(Self {
            recorder: store.recorder()?,
            records: store.records(),
            store,
            target: None,
            schema: None,
            _dir: None,
        })
    }

    /// SQLite in a fresh temporary file.
    async fn sqlite() -> Result<Option<Self>> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("conformance.db");
        let target = path.to_str().context("utf-8 temp path")?.to_owned();
        let mut b = Self::on(open(&target).await?).await?;
        b.target = Some(target);
        b._dir = Some(dir);
        Ok(Some(b))
    }

    /// PostgreSQL in a fresh schema; `None` when PostgreSQL does not answer (and is not
    /// required).
    #[cfg(feature = "postgres")]
    async fn postgres() -> Result<Option<Self>> {
        let Some((url, schema)) = crate::test_services::fresh_pg_schema().await? else {
            return Ok(None);
        };
        let mut b = Self::on(open(&url).await?).await?;
        b.target = Some(url);
        b.schema = Some(schema);
        Ok(Some(b))
    }

    async fn cleanup(self) -> Result<()> {
        self.store.close().await;
        #[cfg(feature = "postgres")]
        if let Some(schema) = &self.schema {
            crate::test_services::drop_schema(schema).await?;
        }
        Ok(())
    }

    /// Run `sql` (a statement without parameters) on the store.
    async fn execute(&self, sql: &'static str) -> Result<()> {
        match &self.store {
            Store::Sqlite(s) => {
                sqlx::query(sql).execute(s.pool()).await?;
            }
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => {
                sqlx::query(sql).execute(s.pool()).await?;
            }
        }
        Ok(())
    }

    /// One number from `sql`.
    async fn scalar(&self, sql: &'static str) -> Result<i64> {
        Ok(match &self.store {
            Store::Sqlite(s) => sqlx::query_scalar(sql).fetch_one(s.pool()).await?,
            #[cfg(feature = "postgres")]
            Store::Postgres(s) => sqlx::query_scalar(sql).fetch_one(s.pool()).await?,
        })
    }
}

async fn count(b: &Backend, table: &'static str) -> Result<i64> {
    let sql = match table {
        "jobs" => "SELECT COUNT(*) FROM jobs",
        "llm_runs" => "SELECT COUNT(*) FROM llm_runs",
        other => anyhow::bail!("unknown table {other}"),
    };
    b.scalar(sql).await
}

/// `name::sqlite` and `name::postgres`, each running the body `name(backend)` on a fresh
/// database and dropping it afterwards.
macro_rules! both {
    ($name:ident) => {
        mod $name {
            use super::*;

            async fn run_on(b: Option<Backend>) -> Result<()> {
                let Some(b) = b else { return Ok(()) };
                let outcome = super::$name(&b).await;
                b.cleanup().await?;
                outcome
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() -> Result<()> {
                run_on(Backend::sqlite().await?).await
            }

            #[cfg(feature = "postgres")]
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() -> Result<()> {
                run_on(Backend::postgres().await?).await
            }
        }
    };
}

fn start(id: JobId, parent: Option<JobId>, workflow: JobId, class: &str, at: i64) -> JobStart {
    JobStart {
        id,
        parent,
        workflow,
        class: class.to_owned(),
        ordinal: parent.map(|_| 1),
        started_at_ms: at,
    }
}

fn end(id: JobId, status: JobStatus, at: i64) -> JobEnd {
    let failed = status != JobStatus::Succeeded;
    JobEnd {
        id,
        status,
        error_kind: failed.then(|| "system".to_owned()),
        error: failed.then(|| "it broke".to_owned()),
        ended_at_ms: at,
        attempts: 1,
    }
}

fn run(job: JobId, workflow: JobId, class: &str, entry: &str, at: i64) -> LlmRun {
    LlmRun {
        job,
        workflow,
        class: class.to_owned(),
        entry: entry.to_owned(),
        model: format!("{entry}-model"),
        input_tokens: 1_200,
        output_tokens: 300,
        reasoning_tokens: 40,
        cached_tokens: 1_000,
        cache_write_tokens: 150,
        output_budget: 4_096,
        latency_ms: 850,
        stop_reason: "end_turn".to_owned(),
        cost: Some(0.0125),
        currency: "USD".to_owned(),
        at_ms: at,
        escalated: false,
    }
}

#[tokio::test]
async fn migrations_apply_on_a_fresh_file_in_wal_mode() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("nested/dir/thinkers.db");
    let target = path.to_str().context("utf-8 temp path")?;
    let store = SqliteStore::open(target).await?;
    assert!(path.exists(), "the file is created");
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .fetch_all(store.pool())
            .await?;
    assert!(tables.contains(&"jobs".to_owned()), "{tables:?}");
    assert!(tables.contains(&"llm_runs".to_owned()), "{tables:?}");
    let indexes: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name")
            .fetch_all(store.pool())
            .await?;
    for name in [
        "jobs_workflow",
        "jobs_parent",
        "llm_runs_workflow",
        "llm_runs_class",
        "llm_runs_entry",
    ] {
        assert!(indexes.contains(&name.to_owned()), "{name} in {indexes:?}");
    }
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(store.pool())
        .await?;
    assert_eq!(mode, "wal");
    store.close().await;

    // Opening again finds the migrations applied and applies nothing twice.
    let again = SqliteStore::open(&format!("sqlite://{target}")).await?;
    let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
        .fetch_one(again.pool())
        .await?;
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))?
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sql"))
        })
        .count();
    assert_eq!(
        applied as usize, files,
        "each migration applied exactly once"
    );
    Ok(())
}

#[tokio::test]
async fn open_accepts_memory_forms_and_refuses_an_empty_target() -> Result<()> {
    for target in ["sqlite::memory:", ":memory:", "sqlite://:memory:"] {
        let b = Backend::on(Store::Sqlite(SqliteStore::open(target).await?)).await?;
        assert_eq!(count(&b, "jobs").await?, 0);
    }
    let err = SqliteStore::open("  ")
        .await
        .err()
        .context("empty target")?;
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    Ok(())
}

both!(dispatcher_records_every_job_of_a_nested_workflow);
async fn dispatcher_records_every_job_of_a_nested_workflow(b: &Backend) -> Result<()> {
    let store = &b.records;
    let dispatcher = Dispatcher::builder().recorder(b.recorder.clone()).build();
    let root = doer("root", |cx| async move {
        cx.submit(doer("prepare", |cx| async move {
            cx.submit(doer("leaf", |_| async { Ok(()) })).await
        }))
        .await?;
        let branches = cx.fan_out();
        let a = branches.submit(doer("branch_a", |_| async { Ok(1) }));
        let b = branches.submit(doer("branch_b", |_| async {
            Err::<i32, _>(Error::system("branch_b", "boom"))
        }));
        let (a, b) = (a.await, b.await);
        cx.submit(doer("finish", |_| async { Ok(()) })).await?;
        Ok((a.ok(), b.err().map(|e| e.kind())))
    });
    let handle = dispatcher.submit(root);
    let workflow = handle.id();
    let (a, b) = handle.await?;
    assert_eq!((a, b), (Some(1), Some(ErrorKind::System)));
    dispatcher.recorder().flush().await?;

    let rows = store.workflow_jobs(workflow).await?;
    assert_eq!(rows.len(), 6);
    let by_class: HashMap<&str, &thinkers::record::JobRecord> =
        rows.iter().map(|r| (r.class.as_str(), r)).collect();
    let root = by_class["root"];
    assert_eq!(root.id, workflow);
    assert_eq!(root.parent, None);
    assert_eq!(root.ordinal, None);
    assert_eq!(root.status, JobStatus::Succeeded);
    for r in &rows {
        assert_eq!(r.workflow, workflow, "{}", r.class);
        assert_eq!(r.attempts, 1, "{}", r.class);
        assert!(
            r.ended_at_ms.is_some_and(|e| e >= r.started_at_ms),
            "{}",
            r.class
        );
    }
    let expect = [
        ("prepare", root.id, 1),
        ("leaf", by_class["prepare"].id, 1),
        ("branch_a", root.id, 2),
        ("branch_b", root.id, 2),
        ("finish", root.id, 3),
    ];
    for (class, parent, ordinal) in expect {
        let r = by_class[class];
        assert_eq!(r.parent, Some(parent), "{class}");
        assert_eq!(r.ordinal, Some(ordinal), "{class}");
    }
    let failed = by_class["branch_b"];
    assert_eq!(failed.status, JobStatus::Failed);
    assert_eq!(failed.error_kind.as_deref(), Some("system"));
    assert!(failed.error.as_deref().is_some_and(|e| e.contains("boom")));
    assert_eq!(by_class["branch_a"].status, JobStatus::Succeeded);

    let trajectory = Trajectory::build(rows.clone());
    let order: Vec<&str> = trajectory
        .entries()
        .iter()
        .map(|e| e.record.class.as_str())
        .collect();
    assert_eq!(&order[..3], ["root", "prepare", "leaf"]);
    assert!(order[3..5].contains(&"branch_a") && order[3..5].contains(&"branch_b"));
    assert_eq!(order[5], "finish");
    let text = trajectory.render();
    assert!(text.contains("│  └─ leaf #1 succeeded"), "{text}");
    assert!(text.contains("branch_b #2 failed"), "{text}");
    assert!(text.contains("boom"), "{text}");
    assert!(text.contains("└─ finish #3 succeeded"), "{text}");

    let listed = store.list_workflows(10).await?;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].workflow, workflow);
    assert_eq!(listed[0].root_class, "root");
    assert_eq!(listed[0].job_count, 6);
    assert_eq!(listed[0].status, JobStatus::Succeeded);
    assert_eq!(listed[0].started_at_ms, root.started_at_ms);
    assert_eq!(listed[0].ended_at_ms, root.ended_at_ms);

    let one = store.job(failed.id).await?.context("the failed job")?;
    assert_eq!(&one, failed);
    assert_eq!(store.job(JobId::new()).await?, None);
    Ok(())
}

both!(flush_waits_for_everything_queued_before_it);
async fn flush_waits_for_everything_queued_before_it(b: &Backend) -> Result<()> {
    let recorder = &b.recorder;
    recorder.flush().await?; // Nothing queued: answers at once.
    let workflow = JobId::new();
    for i in 0..1_500 {
        let id = if i == 0 { workflow } else { JobId::new() };
        let parent = (i > 0).then_some(workflow);
        recorder.job_started(start(id, parent, workflow, "step", i));
    }
    recorder.flush().await?;
    assert_eq!(count(b, "jobs").await?, 1_500);
    Ok(())
}

both!(an_end_reaching_the_store_before_its_start_is_kept);
async fn an_end_reaching_the_store_before_its_start_is_kept(b: &Backend) -> Result<()> {
    let (store, recorder) = (&b.records, &b.recorder);
    let workflow = JobId::new();

    // Across batches: the end is committed first, as a partial row the start completes.
    recorder.job_finished(end(workflow, JobStatus::Failed, 900));
    recorder.flush().await?;
    assert_eq!(
        store.job(workflow).await?,
        None,
        "a partial row is not a job yet"
    );
    recorder.job_started(start(workflow, None, workflow, "root", 100));
    recorder.flush().await?;
    let root = store.job(workflow).await?.context("root")?;
    assert_eq!(root.status, JobStatus::Failed);
    assert_eq!(root.error.as_deref(), Some("it broke"));
    assert_eq!((root.started_at_ms, root.ended_at_ms), (100, Some(900)));
    assert_eq!(root.class, "root");

    // Within one batch, in either order.
    let (a, b) = (JobId::new(), JobId::new());
    recorder.job_finished(end(a, JobStatus::Succeeded, 210));
    recorder.job_started(start(a, Some(workflow), workflow, "a", 200));
    recorder.job_started(start(b, Some(workflow), workflow, "b", 300));
    recorder.job_finished(end(b, JobStatus::Cancelled, 310));
    recorder.flush().await?;
    let a = store.job(a).await?.context("a")?;
    assert_eq!(
        (a.status, a.ended_at_ms, a.attempts),
        (JobStatus::Succeeded, Some(210), 1)
    );
    let b = store.job(b).await?.context("b")?;
    assert_eq!((b.status, b.ended_at_ms), (JobStatus::Cancelled, Some(310)));
    assert_eq!(store.workflow_jobs(workflow).await?.len(), 3);
    Ok(())
}

both!(ten_thousand_jobs_are_written_in_batches);
async fn ten_thousand_jobs_are_written_in_batches(b: &Backend) -> Result<()> {
    let (store, recorder) = (&b.records, &b.recorder);
    let workflow = JobId::new();
    let started = std::time::Instant::now();
    let mut ids = Vec::with_capacity(10_000);
    for i in 0..10_000 {
        let id = if i == 0 { workflow } else { JobId::new() };
        ids.push(id);
        recorder.job_started(start(id, (i > 0).then_some(workflow), workflow, "bulk", i));
        if i % 10 == 0 {
            recorder.llm_run(run(id, workflow, "bulk", "sim-small", i));
        }
    }
    for (i, id) in ids.iter().enumerate() {
        recorder.job_finished(end(*id, JobStatus::Succeeded, 20_000 + i as i64));
    }
    recorder.flush().await?;
    eprintln!(
        "10,000 jobs + 1,000 runs written in {:?}",
        started.elapsed()
    );
    assert_eq!(count(b, "jobs").await?, 10_000);
    assert_eq!(count(b, "llm_runs").await?, 1_000);
    let running = b
        .scalar("SELECT COUNT(*) FROM jobs WHERE status <> 'succeeded'")
        .await?;
    assert_eq!(running, 0);
    let listed = store.list_workflows(5).await?;
    assert_eq!(listed[0].job_count, 10_000);
    Ok(())
}

both!(rows_survive_reopening_the_store);
async fn rows_survive_reopening_the_store(b: &Backend) -> Result<()> {
    let target = b.target.as_deref().context("a reopenable store")?;
    let workflow = JobId::new();
    let child = JobId::new();
    {
        let store = open(target).await?;
        let recorder = store.recorder()?;
        recorder.job_started(start(workflow, None, workflow, "root", 1));
        recorder.job_started(start(child, Some(workflow), workflow, "child", 2));
        recorder.llm_run(run(child, workflow, "child", "sim-medium", 3));
        recorder.job_finished(end(child, JobStatus::Succeeded, 4));
        recorder.job_finished(end(workflow, JobStatus::Succeeded, 5));
        recorder.flush().await?;
        drop(recorder);
        store.close().await;
    }
    let store = open(target).await?.records();
    let jobs = store.workflow_jobs(workflow).await?;
    assert_eq!(
        jobs.iter().map(|j| j.class.as_str()).collect::<Vec<_>>(),
        ["root", "child"]
    );
    assert!(jobs.iter().all(|j| j.status == JobStatus::Succeeded));
    let runs = store
        .llm_runs(LlmRunFilter::new().workflow(workflow))
        .await?;
    assert_eq!(runs, vec![run(child, workflow, "child", "sim-medium", 3)]);
    Ok(())
}

both!(an_unknown_workflow_is_invalid_input_naming_the_id);
async fn an_unknown_workflow_is_invalid_input_naming_the_id(b: &Backend) -> Result<()> {
    let store = &b.records;
    let unknown = JobId::new();
    let err = store
        .workflow_jobs(unknown)
        .await
        .err()
        .context("unknown")?;
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains(&unknown.to_string()), "{err}");
    match err {
        Error::InvalidInput {
            parameter, value, ..
        } => {
            assert_eq!(parameter, "workflow");
            assert_eq!(value, Some(unknown.to_string()));
        }
        other => anyhow::bail!("unexpected {other:?}"),
    }
    let dyn_store = store;
    let err = dyn_store
        .workflow_jobs(unknown)
        .await
        .err()
        .context("unknown")?;
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(dyn_store.list_workflows(5).await?.is_empty());
    assert_eq!(dyn_store.job(unknown).await?, None);
    Ok(())
}

both!(llm_runs_round_trip_and_filter);
async fn llm_runs_round_trip_and_filter(b: &Backend) -> Result<()> {
    let (store, recorder) = (&b.records, &b.recorder);
    let (w1, w2) = (JobId::new(), JobId::new());
    let mut big = run(w1, w1, "planner", "sim-large", 10);
    big.input_tokens = u64::from(u32::MAX) * 4;
    big.escalated = true;
    big.stop_reason = "max_tokens".to_owned();
    recorder.llm_run(big.clone());
    recorder.llm_run(run(w1, w1, "planner", "sim-small", 20));
    recorder.llm_run(run(w1, w1, "writer", "sim-small", 30));
    recorder.llm_run(run(w2, w2, "planner", "sim-small", 40));
    recorder.flush().await?;

    let every = store.llm_runs(LlmRunFilter::new()).await?;
    assert_eq!(every.len(), 4);
    assert_eq!(every[0], big, "every field round-trips");
    let at = |runs: Vec<LlmRun>| runs.iter().map(|r| r.at_ms).collect::<Vec<_>>();
    let of = |f: LlmRunFilter| {
        let store = Arc::clone(store);
        async move { store.llm_runs(f).await }
    };
    assert_eq!(
        at(of(LlmRunFilter::new().workflow(w1)).await?),
        [10, 20, 30]
    );
    assert_eq!(at(of(LlmRunFilter::new().job(w2)).await?), [40]);
    assert_eq!(
        at(of(LlmRunFilter::new().workflows([w2, w1])).await?),
        [10, 20, 30, 40]
    );
    assert_eq!(
        at(of(LlmRunFilter::new().workflows([w2, JobId::new()])).await?),
        [40]
    );
    assert!(of(LlmRunFilter::new().workflows([])).await?.is_empty());
    assert_eq!(
        at(of(LlmRunFilter::new().class("planner")).await?),
        [10, 20, 40]
    );
    assert_eq!(
        at(of(LlmRunFilter::new().entry("sim-small")).await?),
        [20, 30, 40]
    );
    let combined = LlmRunFilter::new()
        .class("planner")
        .entry("sim-small")
        .since_ms(15)
        .limit(1);
    assert_eq!(at(of(combined).await?), [20]);
    Ok(())
}

both!(a_failed_batch_is_counted_and_reported_by_the_next_flush);
async fn a_failed_batch_is_counted_and_reported_by_the_next_flush(b: &Backend) -> Result<()> {
    let (store, recorder) = (&b.records, &b.recorder);
    b.execute("DROP TABLE llm_runs").await?;
    let w = JobId::new();
    recorder.llm_run(run(w, w, "x", "sim-small", 1));
    let err = recorder.flush().await.err().context("the write fails")?;
    assert_eq!(err.kind(), ErrorKind::ExternalService);
    assert!(err.to_string().contains("1 recorded rows"), "{err}");
    // The failure was reported once; later rows are written and flushed normally.
    recorder.job_started(start(w, None, w, "root", 1));
    recorder.flush().await?;
    assert!(store.job(w).await?.is_some());
    Ok(())
}

#[test]
fn a_recorder_needs_a_runtime() -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let store = rt.block_on(SqliteStore::open("sqlite::memory:"))?;
    let err = SqliteRecorder::new(&store)
        .err()
        .context("outside a runtime")?;
    assert_eq!(err.kind(), ErrorKind::System);
    Ok(())
}

/// The chat list and the chat turn lock, on both backends.
mod chats;

/// Owner rows, the sweep of gone processes, close and durable model calls, on both backends.
mod ownership;

/// The journal of durable steps and the approvals, on both backends.
mod steps;

/// Compactions, the report queries and undecodable rows, on both backends.
mod reports;

/// Admission's events (throttles, rate changes), on both backends.
mod limits;
