//! The record queries beyond a trajectory, on both backends: compactions, and what the
//! operations reports (`thinkers cost`, `thinkers sizing`) ask for (job classes, the window of
//! the recorded calls), plus a stored value that does not decode.

use anyhow::{Context as _, Result};

use super::{Backend, end, run, start};
use crate::LlmRunFilter;
use thinkers::error::ErrorKind;
use thinkers::job::JobId;
use thinkers::record::{CompactionRow, JobStatus, LlmRun};

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

both!(an_unpriced_call_is_stored_and_read_back_as_unknown);
/// A call to an entry without prices reads back with its cost unknown (`None`), not 0; a
/// priced call beside it keeps its cost; a row written before the `priced` column existed
/// (migration 0009) reads back as priced.
async fn an_unpriced_call_is_stored_and_read_back_as_unknown(b: &Backend) -> Result<()> {
    let (records, recorder) = (&b.records, &b.recorder);
    let root = JobId::new();
    let priced = run(root, root, "lookup", "sim-small", 10);
    let unpriced = LlmRun {
        cost: None,
        currency: String::new(),
        ..run(root, root, "lookup", "local-model", 20)
    };
    recorder.llm_run(priced.clone());
    recorder.llm_run(unpriced.clone());
    recorder.flush().await?;
    let back = records.llm_runs(LlmRunFilter::new().workflow(root)).await?;
    assert_eq!(
        back,
        vec![priced, unpriced],
        "the cost and its absence round-trip"
    );
    assert_eq!(
        b.scalar("SELECT COUNT(*) FROM llm_runs WHERE NOT priced")
            .await?,
        1
    );

    // As an older runtime wrote it: no `priced` column in the statement.
    b.execute(
        "INSERT INTO llm_runs (job, workflow, class, entry, model, input_tokens, output_tokens, \
         reasoning_tokens, cached_tokens, output_budget, latency_ms, stop_reason, cost, \
         currency, at_ms, escalated) VALUES ('0190f5c2-7a1e-7cc0-9a6b-0123456789ac', \
         '0190f5c2-7a1e-7cc0-9a6b-0123456789ac', 'old', 'sim-small', 'm', 1, 1, 0, 0, 1, 1, \
         'end_turn', 0.5, 'USD', 30, FALSE)",
    )
    .await?;
    let old = records.llm_runs(LlmRunFilter::new().class("old")).await?;
    assert_eq!(old.len(), 1);
    assert_eq!(old[0].cost, Some(0.5));
    Ok(())
}
