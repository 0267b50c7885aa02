//! What a store says about work whose process is gone, and when a model call's row is durable.

use super::*;

/// The job rows: id, status, error, ended_at_ms.
async fn jobs(b: &Backend) -> Result<Vec<(String, String, Option<String>, Option<i64>)>> {
    let sql = "SELECT id, status, error, ended_at_ms FROM jobs ORDER BY id";
    Ok(match &b.store {
        Store::Sqlite(s) => sqlx::query_as(sql).fetch_all(s.pool()).await?,
        #[cfg(feature = "postgres")]
        Store::Postgres(s) => sqlx::query_as(sql).fetch_all(s.pool()).await?,
    })
}

fn status_of(rows: &[(String, String, Option<String>, Option<i64>)], id: JobId) -> String {
    let id = id.to_string();
    rows.iter()
        .find(|r| r.0 == id)
        .map_or_else(|| "missing".to_owned(), |r| r.1.clone())
}

both!(the_running_jobs_of_a_gone_process_are_interrupted_when_the_store_opens);
async fn the_running_jobs_of_a_gone_process_are_interrupted_when_the_store_opens(
    b: &Backend,
) -> Result<()> {
    let target = b.target.clone().context("a reopenable store")?;
    let (root, child, done) = (JobId::new(), JobId::new(), JobId::new());
    let now = thinkers::record::now_ms();
    b.recorder.job_started(start(root, None, root, "root", now));
    b.recorder
        .job_started(start(child, Some(root), root, "child", now));
    b.recorder
        .job_started(start(done, Some(root), root, "done", now));
    b.recorder
        .job_finished(end(done, JobStatus::Succeeded, now + 1));
    b.recorder.flush().await?;
    // Opened while the writing process beats its heartbeat: nothing is touched.
    open(&target).await?.close().await;
    let rows = jobs(b).await?;
    assert_eq!(status_of(&rows, root), "running");
    assert_eq!(status_of(&rows, child), "running");

    // The writing process falls silent (as a killed one does): its heartbeat goes stale.
    b.execute("UPDATE owners SET heartbeat_at_ms = heartbeat_at_ms - 3600000")
        .await?;
    open(&target).await?.close().await;
    let rows = jobs(b).await?;
    assert_eq!(status_of(&rows, root), "interrupted");
    assert_eq!(status_of(&rows, child), "interrupted");
    assert_eq!(
        status_of(&rows, done),
        "succeeded",
        "an ended job is left alone"
    );
    for (id, status, error, ended) in &rows {
        if status == "interrupted" {
            let error = error.as_deref().unwrap_or_default();
            assert!(
                error.contains("stopped without recording its end") && error.contains("pid"),
                "{id}: {error}"
            );
            assert!(ended.is_some_and(|e| e >= now), "{id} has an end time");
        }
    }
    assert_eq!(
        b.scalar("SELECT COUNT(*) FROM owners WHERE ended_at_ms IS NULL")
            .await?,
        0,
        "the gone owner is closed"
    );
    let wf = b.records.workflow_jobs(root).await?;
    assert!(wf.iter().all(|j| j.status != JobStatus::Running), "{wf:?}");
    Ok(())
}

both!(closing_the_recorder_ends_the_jobs_it_still_holds);
async fn closing_the_recorder_ends_the_jobs_it_still_holds(b: &Backend) -> Result<()> {
    let w = JobId::new();
    b.recorder
        .job_started(start(w, None, w, "root", thinkers::record::now_ms()));
    b.recorder.close().await?;
    let rows = jobs(b).await?;
    assert_eq!(status_of(&rows, w), "interrupted");
    assert_eq!(
        b.scalar("SELECT COUNT(*) FROM owners WHERE end_reason = 'closed'")
            .await?,
        1
    );
    // After the close nothing more is taken, and the recorder says so.
    b.recorder.llm_run(run(w, w, "x", "sim-small", 1));
    assert_eq!(b.recorder.unwritten(), 1);
    assert_eq!(count(b, "llm_runs").await?, 0);
    // A second close is harmless.
    b.recorder.close().await?;
    Ok(())
}

both!(a_durable_model_call_is_stored_when_its_recording_returns);
async fn a_durable_model_call_is_stored_when_its_recording_returns(b: &Backend) -> Result<()> {
    let w = JobId::new();
    b.recorder.job_started(start(w, None, w, "root", 1));
    // No flush: the durable call alone waits for its batch's commit, start row included.
    b.recorder
        .llm_run_durable(run(w, w, "root", "sim-small", 2))
        .await?;
    assert_eq!(count(b, "llm_runs").await?, 1);
    assert_eq!(count(b, "jobs").await?, 1);
    // Fifty at once share commits and are all stored when each returns.
    let calls = (0..50).map(|i| {
        b.recorder
            .llm_run_durable(run(w, w, "root", "sim-small", 3 + i))
    });
    futures::future::try_join_all(calls).await?;
    assert_eq!(count(b, "llm_runs").await?, 51);
    Ok(())
}
