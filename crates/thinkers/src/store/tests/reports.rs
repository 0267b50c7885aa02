//! The record queries beyond a trajectory, on both backends: compactions, and what the
//! operations reports (`thinkers cost`, `thinkers sizing`) ask for (job classes, the window of
//! the recorded calls), plus a stored value that does not decode.

use anyhow::{Context as _, Result};

use super::{Backend, end, run, start};
use crate::error::ErrorKind;
use crate::job::JobId;
use crate::record::{CompactionRow, JobStatus};

fn compaction(job: JobId, workflow: JobId, at_ms: i64) -> CompactionRow {
    CompactionRow {
        job,
        workflow,
        conversation: format!("conv-{at_ms}"),
        before_tokens: 90_000 + u64::try_from(at_ms).unwrap_or(0),
        after_tokens: 12_000,
        summarized_messages: 40,
        at_ms,
    }
}

both!(report_queries_read_what_was_recorded);
/// Compactions round-trip in time order; job classes come back for recorded starts only, across
/// more ids than one statement binds; the window spans the calls at or after its start.
async fn report_queries_read_what_was_recorded(b: &Backend) -> Result<()> {
    let (records, recorder) = (&b.records, &b.recorder);
    let (root, child, lone_end) = (JobId::new(), JobId::new(), JobId::new());
    recorder.job_started(start(root, None, root, "research", 1));
    recorder.job_started(start(child, Some(root), root, "lookup", 2));
    recorder.job_finished(end(lone_end, JobStatus::Succeeded, 3));
    for at in [30, 10, 20] {
        recorder.llm_run(run(child, root, "lookup", "sim-small", at));
    }
    let (late, early) = (compaction(child, root, 50), compaction(root, root, 40));
    recorder.compaction(late.clone());
    recorder.compaction(early.clone());
    recorder.compaction(compaction(child, JobId::new(), 45));
    recorder.flush().await?;

    assert_eq!(records.compactions(root).await?, vec![early, late]);
    assert!(records.compactions(JobId::new()).await?.is_empty());

    // 1,200 ids: three statements; the known ones sit in the first and the last.
    let mut ids: Vec<JobId> = (0..1_198).map(|_| JobId::new()).collect();
    ids.insert(0, root);
    ids.push(child);
    ids.push(lone_end);
    let classes = records.job_classes(&ids).await?;
    assert_eq!(classes.len(), 2, "{classes:?}");
    assert_eq!(classes.get(&root).map(String::as_str), Some("research"));
    assert_eq!(classes.get(&child).map(String::as_str), Some("lookup"));
    assert!(records.job_classes(&[]).await?.is_empty());

    assert_eq!(records.llm_run_window(None).await?, Some((10, 30)));
    assert_eq!(records.llm_run_window(Some(15)).await?, Some((20, 30)));
    assert_eq!(records.llm_run_window(Some(31)).await?, None);
    Ok(())
}

both!(a_stored_value_that_does_not_decode_is_named);
/// A stored status the code does not know is a system error naming the backend, the field and
/// the value, not a panic or a silently wrong record.
async fn a_stored_value_that_does_not_decode_is_named(b: &Backend) -> Result<()> {
    b.execute(
        "INSERT INTO jobs (id, parent, workflow, class, status, started_at_ms, attempts) \
         VALUES ('0190f5c2-7a1e-7cc0-9a6b-0123456789ab', NULL, \
                 '0190f5c2-7a1e-7cc0-9a6b-0123456789ab', 'odd', 'bogus', 1, 0)",
    )
    .await?;
    let id = JobId::parse("0190f5c2-7a1e-7cc0-9a6b-0123456789ab")?;
    let err = b.records.job(id).await.err().context("a bogus status")?;
    assert_eq!(err.kind(), ErrorKind::System);
    let backend = if b
        .target
        .as_deref()
        .is_some_and(|t| t.starts_with("postgres"))
    {
        "postgres"
    } else {
        "sqlite"
    };
    let text = err.to_string();
    assert!(
        text.contains(&format!("{backend} store (decode)")),
        "{text}"
    );
    assert!(
        text.contains("job status") && text.contains("bogus"),
        "{text}"
    );
    let listed = b.records.list_workflows(5).await.err().context("listed")?;
    assert_eq!(listed.kind(), ErrorKind::System);
    Ok(())
}
