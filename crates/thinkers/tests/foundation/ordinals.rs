//! Step ordinals: sequential, parallel, raw.

use thinkers::job::{META_ITERATION, doer};

use crate::support::dispatcher;

#[tokio::test]
async fn sequential_parallel_and_raw_ordinals() {
    let (d, rec) = dispatcher();
    let root = d.submit(doer("root", |cx| async move {
        for _ in 0..3 {
            cx.submit_in_step(doer("seq", |cx| async move { Ok(cx.ordinal()) }))
                .await?;
        }
        cx.next_step();
        let a = cx.submit_in_current_step(doer("par", |cx| async move { Ok(cx.ordinal()) }));
        let b = cx.submit_in_current_step(doer("par", |cx| async move { Ok(cx.ordinal()) }));
        let raw = cx.submit(doer("raw", |cx| async move {
            Ok((cx.ordinal(), cx.metadata(META_ITERATION)))
        }));
        Ok((a.await?, b.await?, raw.await?))
    }));
    let (a, b, raw) = root.await.unwrap();
    assert_eq!(a, Some(4));
    assert_eq!(b, Some(4));
    assert_eq!(raw, (None, None));
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
            .any(|r| r.start.class == "raw" && r.start.ordinal.is_none())
    );
}

#[tokio::test]
async fn ordinal_is_in_child_metadata_and_lineage_is_linked() {
    let (d, rec) = dispatcher();
    let root = d.submit(doer("root", |cx| async move {
        let child = cx.submit_in_step(doer("child", |cx| async move {
            let grandchild = cx.submit_in_step(doer("grandchild", |cx| async move {
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
