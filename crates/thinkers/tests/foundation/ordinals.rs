//! Step ordinals: sequential and fanned out.

use thinkers::job::{META_ITERATION, doer};

use crate::support::dispatcher;

#[tokio::test]
async fn sequential_and_fanned_out_children_are_numbered_by_step() {
    let (d, rec) = dispatcher();
    let root = d.submit(doer("root", |cx| async move {
        for _ in 0..3 {
            cx.submit(doer("seq", |cx| async move { Ok(cx.ordinal()) }))
                .await?;
        }
        let step = cx.fan_out();
        let a = step.submit(doer("par", |cx| async move { Ok(cx.ordinal()) }));
        let b = step.submit(doer("par", |cx| async move { Ok(cx.ordinal()) }));
        // A child submitted after the fan-out is the step after it, even while the fanned-out
        // children still run.
        let after = cx.submit(doer("after", |cx| async move {
            Ok((cx.ordinal(), cx.metadata(META_ITERATION)))
        }));
        Ok((a.await?, b.await?, after.await?))
    }));
    let (a, b, after) = root.await.unwrap();
    assert_eq!(a, Some(4));
    assert_eq!(b, Some(4));
    assert_eq!(after, (Some(5), Some(serde_json::json!(5))));
    let rows = rec.jobs();
    let seq: Vec<_> = rows
        .iter()
        .filter(|r| r.start.class == "seq")
        .map(|r| r.start.ordinal)
        .collect();
    assert_eq!(seq, vec![Some(1), Some(2), Some(3)]);
    let par: Vec<_> = rows
        .iter()
        .filter(|r| r.start.class == "par")
        .map(|r| r.start.ordinal)
        .collect();
    assert_eq!(par, vec![Some(4), Some(4)]);
    assert!(
        rows.iter()
            .any(|r| r.start.class == "after" && r.start.ordinal == Some(5))
    );
}

#[tokio::test]
async fn ordinal_is_in_child_metadata_and_lineage_is_linked() {
    let (d, rec) = dispatcher();
    let root = d.submit(doer("root", |cx| async move {
        let child = cx.submit(doer("child", |cx| async move {
            let grandchild = cx.submit(doer("grandchild", |cx| async move {
                Ok((cx.parent(), cx.workflow(), cx.metadata(META_ITERATION)))
            }));
            Ok((cx.id(), grandchild.await?))
        }));
        child.await
    }));
    let root_id = root.id();
    let (child_id, (gc_parent, gc_workflow, gc_meta)) = root.await.unwrap();
    assert_eq!(gc_parent, Some(child_id));
    assert_eq!(gc_workflow, root_id);
    assert_eq!(gc_meta, Some(serde_json::json!(1)));
    assert!(rec.jobs().iter().all(|r| r.start.workflow == root_id));
}

#[tokio::test]
async fn a_child_run_in_place_is_recorded_like_a_submitted_one() {
    let (d, rec) = dispatcher();
    let root = d.submit(doer("root", |cx| async move {
        let step = cx.fan_out();
        let here = step
            .run(doer("here", |cx| async move {
                Ok((cx.ordinal(), cx.parent(), cx.metadata(META_ITERATION)))
            }))
            .await?;
        let beside = step
            .submit(doer("beside", |cx| async move { Ok(cx.ordinal()) }))
            .await?;
        Ok((cx.id(), here, beside))
    }));
    let (root_id, (ordinal, parent, meta), beside) = root.await.unwrap();
    assert_eq!(ordinal, Some(1));
    assert_eq!(beside, Some(1), "both children share the step");
    assert_eq!(parent, Some(root_id));
    assert_eq!(meta, Some(serde_json::json!(1)));
    let here = rec
        .jobs()
        .into_iter()
        .find(|r| r.start.class == "here")
        .expect("the child run in place has a start row");
    assert_eq!(here.start.parent, Some(root_id));
    assert_eq!(here.start.workflow, root_id);
    assert_eq!(here.status(), thinkers::record::JobStatus::Succeeded);
}

#[tokio::test]
async fn a_child_run_in_place_is_cancelled_and_recorded_when_its_caller_stops() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let (d, rec) = dispatcher();
    let started = Arc::new(AtomicBool::new(false));
    let seen = started.clone();
    let root = d.submit(doer("root", move |cx| {
        let started = started.clone();
        async move {
            let child = cx.fan_out().run(doer("stalled", move |_cx| {
                let started = started.clone();
                async move {
                    started.store(true, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                    Ok(())
                }
            }));
            // The caller stops waiting after a moment: the child is dropped with it.
            let _ = tokio::time::timeout(std::time::Duration::from_millis(50), child).await;
            Ok(())
        }
    }));
    root.await.unwrap();
    assert!(seen.load(Ordering::SeqCst), "the child ran");
    let stalled = rec
        .jobs()
        .into_iter()
        .find(|r| r.start.class == "stalled")
        .expect("the child has a start row");
    assert_eq!(stalled.status(), thinkers::record::JobStatus::Cancelled);
    let end = stalled.end.expect("an end row");
    assert_eq!(end.error_kind.as_deref(), Some("cancelled"));
}

#[tokio::test]
async fn cancelling_the_caller_cancels_a_child_run_in_place_and_what_that_child_spawned() {
    use std::sync::Arc;
    use tokio::sync::Notify;
    let (d, rec) = dispatcher();
    let ready = Arc::new(Notify::new());
    let signal = ready.clone();
    let root = d.submit(doer("root", move |cx| {
        let signal = signal.clone();
        async move {
            cx.fan_out()
                .run(doer("in_place", move |cx| {
                    let signal = signal.clone();
                    async move {
                        // A grandchild on a task of its own, which outlives nothing it hangs from.
                        let spawned = cx.submit(doer("spawned", |_cx| async move {
                            std::future::pending::<()>().await;
                            Ok(())
                        }));
                        signal.notify_one();
                        spawned.await?;
                        Ok(())
                    }
                }))
                .await
        }
    }));
    ready.notified().await;
    root.cancel();
    let outcome = root.await;
    assert!(
        matches!(outcome, Err(thinkers::Error::Cancelled)),
        "{outcome:?}"
    );
    // The spawned grandchild notices its token on its own task; give it a moment.
    for _ in 0..100 {
        let ended = rec.jobs().iter().filter(|r| r.end.is_some()).count();
        if ended == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    for class in ["root", "in_place", "spawned"] {
        let row = rec
            .jobs()
            .into_iter()
            .find(|r| r.start.class == class)
            .unwrap_or_else(|| panic!("{class} has a start row"));
        assert_eq!(
            row.status(),
            thinkers::record::JobStatus::Cancelled,
            "{class}: {row:?}"
        );
    }
}

#[tokio::test]
async fn the_ordinal_reads_as_iteration_metadata_until_the_job_sets_its_own() {
    let (d, _) = dispatcher();
    let root = d.submit(doer("root", |cx| async move {
        cx.submit(doer("child", |cx| async move {
            let before = (cx.metadata(META_ITERATION), cx.metadata_all());
            cx.set_metadata(META_ITERATION, serde_json::json!("mine"));
            let grandchild = cx.submit(doer("grandchild", |cx| async move {
                Ok(cx.ancestor_metadata(META_ITERATION))
            }));
            Ok((before, cx.metadata(META_ITERATION), grandchild.await?))
        }))
        .await
    }));
    let ((one, all), after, seen_below) = root.await.unwrap();
    assert_eq!(one, Some(serde_json::json!(1)));
    assert_eq!(all.get(META_ITERATION), Some(&serde_json::json!(1)));
    assert_eq!(after, Some(serde_json::json!("mine")));
    assert_eq!(seen_below, Some(serde_json::json!("mine")));
}

#[tokio::test]
async fn a_child_run_in_place_reads_cancellation_from_its_ancestors() {
    use std::sync::{Arc, Mutex};
    let (d, _) = dispatcher();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = Arc::new(Mutex::new(Some(tx)));
    let root = d.submit(doer("root", move |cx| {
        let tx = tx.clone();
        async move {
            // The child hands out its own context, then ends; the caller waits to be cancelled.
            let child = cx
                .fan_out()
                .run(doer("in_place", |cx| async move { Ok(cx.clone()) }))
                .await?;
            if let Some(tx) = tx.lock().unwrap().take() {
                let _ = tx.send(child);
            }
            cx.cancelled().await;
            Ok(())
        }
    }));
    let child = rx.await.unwrap();
    assert!(!child.is_cancelled(), "nothing was cancelled yet");
    root.cancel();
    assert!(
        child.is_cancelled(),
        "the root's cancellation reaches the child"
    );
    // A wait that makes the child's token only now finds it cancelled at once.
    tokio::time::timeout(std::time::Duration::from_secs(5), child.cancelled())
        .await
        .expect("the token made after the cancellation starts cancelled");
    assert!(matches!(root.await, Err(thinkers::Error::Cancelled)));
}
