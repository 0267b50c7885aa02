//! The queue protocol against the real PostgreSQL: claims, leases, fencing, attempts, errors.

use std::time::Duration;

use anyhow::{Context as _, Result};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::error::ErrorKind;
use crate::job::doer;
use crate::model::Catalog;
use crate::runtime::Runtime;
use crate::test_services::{drop_schema, fresh_pg_schema};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Sum {
    a: i64,
    b: i64,
    #[serde(default)]
    sleep_ms: u64,
}

fn registry() -> WorkflowRegistry {
    let mut r = WorkflowRegistry::new();
    r.register("sum", |input: Sum| {
        Ok(doer("sum", move |_| async move {
            tokio::time::sleep(Duration::from_millis(input.sleep_ms)).await;
            Ok(input.a + input.b)
        }))
    });
    r
}

async fn worker(store: &PgStore, queue: &str, lease_ms: u64) -> Result<Worker> {
    let runtime = Runtime::builder(Catalog::bundled().with_sim_url("http://127.0.0.1:9"))
        .database(store.location())
        .build()
        .await?;
    Ok(Worker::new(
        store,
        runtime,
        registry(),
        WorkerConfig {
            queue: queue.to_owned(),
            concurrency: 4,
            lease: Duration::from_millis(lease_ms),
            poll: Duration::from_millis(20),
            ..WorkerConfig::default()
        },
    ))
}

fn spawn(
    w: &Worker,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<crate::Result<()>>,
) {
    let stop = CancellationToken::new();
    let (w, s) = (w.clone(), stop.clone());
    (stop, tokio::spawn(async move { w.run(s).await }))
}

async fn finished(q: &WorkflowQueue, id: QueueId) -> Result<WorkflowStatus> {
    q.wait(id, Duration::from_millis(20), Duration::from_secs(20))
        .await?
        .context("the workflow did not finish in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passed_lease_is_claimed_again_and_the_old_holder_is_fenced() -> Result<()> {
    let Some((url, schema)) = fresh_pg_schema().await? else {
        return Ok(());
    };
    let store = PgStore::open(&url).await?;
    let q = WorkflowQueue::new(&store).named("lease");
    let id = q
        .submit(&registry(), "sum", json!({"a": 2, "b": 3}))
        .await?;
    assert_eq!(q.status(id).await?.state, WorkflowState::Queued);

    // A worker that claims and then stops answering (as if killed).
    let ghost = store
        .claim_workflow("lease", "ghost", Duration::from_millis(300))
        .await?
        .context("claimable")?;
    assert_eq!((ghost.id, ghost.attempt), (id, 1));
    let s = q.status(id).await?;
    assert!(
        matches!(&s.state, WorkflowState::Running { worker, lease_expired: false, .. } if worker == "ghost"),
        "{s:?}"
    );
    // While the lease holds nobody else gets it.
    assert!(
        store
            .claim_workflow("lease", "other", Duration::from_secs(1))
            .await?
            .is_none()
    );

    let w = worker(&store, "lease", 900).await?;
    let (stop, task) = spawn(&w);
    let done = finished(&q, id).await?;
    assert_eq!(done.state, WorkflowState::Succeeded { output: json!(5) });
    assert_eq!(done.attempt, 2);
    assert!(done.run.is_some());
    // The ghost wakes up: it can neither extend nor finish what is no longer its attempt.
    assert!(
        !store
            .heartbeat_workflow(id, "ghost", 1, Duration::from_secs(1))
            .await?
    );
    assert!(!store.finish_workflow(id, "ghost", 1, Err("late")).await?);
    assert_eq!(q.status(id).await?, done);
    stop.cancel();
    task.await??;
    assert_eq!(w.finished(), 1);
    store.close().await;
    drop_schema(&schema).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_out_of_attempts_fails_with_the_reason() -> Result<()> {
    let Some((url, schema)) = fresh_pg_schema().await? else {
        return Ok(());
    };
    let store = PgStore::open(&url).await?;
    let q = WorkflowQueue::new(&store).named("attempts").max_attempts(1);
    let id = q
        .submit(&registry(), "sum", json!({"a": 1, "b": 1}))
        .await?;
    store
        .claim_workflow("attempts", "ghost", Duration::from_millis(100))
        .await?
        .context("claimable")?;
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(matches!(
        q.status(id).await?.state,
        WorkflowState::Running {
            lease_expired: true,
            ..
        }
    ));
    assert!(
        store
            .claim_workflow("attempts", "next", Duration::from_secs(1))
            .await?
            .is_none()
    );
    let s = q.status(id).await?;
    match &s.state {
        WorkflowState::Failed { error } => {
            assert!(
                error.contains("attempt 1 of 1") && error.contains("ghost"),
                "{error}"
            );
        }
        other => panic!("expected failed, got {other:?}"),
    }
    store.close().await;
    drop_schema(&schema).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_names_and_bad_inputs_are_named() -> Result<()> {
    let r = registry();
    let err = r.check("summ", &json!({})).err().context("unknown name")?;
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(
        err.to_string().contains("summ") && err.to_string().contains("sum"),
        "{err}"
    );
    let err = r
        .check("sum", &json!({"a": 1, "b": "two"}))
        .err()
        .context("bad field")?;
    assert!(err.to_string().contains("input.b"), "{err}");
    let err = r.check("sum", &json!({"a": 1})).err().context("missing")?;
    assert!(err.to_string().contains("`b`"), "{err}");

    let Some((url, schema)) = fresh_pg_schema().await? else {
        return Ok(());
    };
    let store = PgStore::open(&url).await?;
    let q = WorkflowQueue::new(&store).named("names");
    assert!(q.submit(&r, "summ", json!({})).await.is_err());
    // Submitted unchecked, a name the worker does not know fails with the name in the error.
    let unknown = q.submit_unchecked("summ", &json!({})).await?;
    let bad = q
        .submit_unchecked("sum", &json!({"a": "x", "b": 1}))
        .await?;
    let w = worker(&store, "names", 2_000).await?;
    let (stop, task) = spawn(&w);
    for (id, needle) in [(unknown, "summ"), (bad, "input.a")] {
        match finished(&q, id).await?.state {
            WorkflowState::Failed { error } => assert!(error.contains(needle), "{error}"),
            other => panic!("expected failed, got {other:?}"),
        }
    }
    let err = q.status(QueueId::new()).await.err().context("no such id")?;
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    stop.cancel();
    task.await??;
    store.close().await;
    drop_schema(&schema).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_split_the_queue_and_never_share_a_workflow() -> Result<()> {
    let Some((url, schema)) = fresh_pg_schema().await? else {
        return Ok(());
    };
    let store = PgStore::open(&url).await?;
    let q = WorkflowQueue::new(&store).named("split");
    let mut ids = Vec::new();
    for i in 0..24 {
        ids.push(
            q.submit(&registry(), "sum", json!({"a": i, "b": 1, "sleep_ms": 30}))
                .await?,
        );
    }
    let (w1, w2) = (
        worker(&store, "split", 2_000).await?,
        worker(&store, "split", 2_000).await?,
    );
    let (s1, t1) = spawn(&w1);
    let (s2, t2) = spawn(&w2);
    for (i, id) in ids.iter().enumerate() {
        let s = finished(&q, *id).await?;
        assert_eq!(
            s.state,
            WorkflowState::Succeeded {
                output: json!(i + 1)
            }
        );
        assert_eq!(s.attempt, 1, "claimed exactly once");
    }
    s1.cancel();
    s2.cancel();
    t1.await??;
    t2.await??;
    assert_eq!(w1.finished() + w2.finished(), 24);
    assert!(w1.finished() > 0 && w2.finished() > 0, "both took work");
    store.close().await;
    drop_schema(&schema).await
}
