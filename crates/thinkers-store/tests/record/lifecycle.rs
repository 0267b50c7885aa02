//! The record a runtime leaves in its store when it is dropped instead of shut down.

use thinkers::job::doer;
use thinkers::record::JobStatus;
use thinkers_store::RuntimeBuilderExt as _;

/// A program that ends without `shutdown()` (its `main` returns and tokio stops) still leaves a
/// complete record: dropping the runtime writes every queued row before the tokio runtime that
/// ran the writer goes away.
#[test]
fn a_runtime_dropped_without_shutdown_leaves_a_complete_record() {
    use thinkers::model::Catalog;
    use thinkers_store::SqliteStore;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("record.db").to_string_lossy().into_owned();
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ids = tokio_rt.block_on(async {
        // The bundled catalog bound to an address nothing serves: no model is called here.
        let catalog = Catalog::bundled().with_sim_url("http://127.0.0.1:9");
        let rt = thinkers::Runtime::builder(catalog)
            .database(db.clone())
            .build()
            .await
            .unwrap();
        let mut ids = Vec::new();
        for n in 0..20u32 {
            let handle = rt
                .dispatcher()
                .submit(doer("dropped", move |_| async move { Ok(n) }));
            ids.push(handle.id());
            assert_eq!(handle.await.unwrap(), n);
        }
        // No shutdown: the runtime is dropped at the end of the block, as `main` ends.
        ids
    });
    // Stopping tokio drops every task still running, the recorder's writer with it.
    drop(tokio_rt);
    let check = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    check.block_on(async {
        let store = SqliteStore::open(&db).await.unwrap();
        for id in ids {
            let row = store.job(id).await.unwrap();
            let row = row.unwrap_or_else(|| panic!("job {id} has no row"));
            assert_eq!(row.status, JobStatus::Succeeded, "job {id}");
        }
        store.close().await;
    });
}

/// A runtime built on a current-thread tokio runtime and dropped outside it cannot wait for its
/// writer (nothing drives that runtime): the drop returns at once instead of hanging.
#[test]
fn a_runtime_of_a_current_thread_tokio_runtime_dropped_outside_it_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("record.db").to_string_lossy().into_owned();
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let tokio_rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let rt = tokio_rt.block_on(async {
            let catalog = thinkers::model::Catalog::bundled().with_sim_url("http://127.0.0.1:9");
            let rt = thinkers::Runtime::builder(catalog)
                .database(db)
                .build()
                .await
                .unwrap();
            rt.dispatcher()
                .run(doer("queued", |_| async { Ok(()) }))
                .await
                .unwrap();
            rt
        });
        drop(rt);
        done.send(()).unwrap();
        drop(tokio_rt);
    });
    ended
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("dropping the runtime outside its current-thread tokio runtime hung");
}
