//! Cancellation, timeouts, panics and records.

use std::borrow::Cow;
use std::time::Duration;

use thinkers::dispatch::Limits;
use thinkers::job::{Job, JobContext, Requirements, Resources, doer};
use thinkers::record::JobStatus;
use thinkers::{Error, ErrorKind, Result};
use tokio::time::Instant;

use crate::support::{SeatJob, dispatcher, dispatcher_with};

#[tokio::test(start_paused = true)]
async fn cancelling_a_parent_stops_its_children_and_releases_their_permits() {
    let limits = Limits {
        concurrency: Some(2),
        ..Limits::default()
    };
    let (d, rec) = dispatcher_with("service:x", limits);
    let parent = d.submit(doer("parent", |cx| async move {
        let step = cx.fan_out();
        let a = step.submit({
            let mut j = SeatJob::new("service:x", 0);
            j.hold = Duration::from_secs(3600);
            j
        });
        let b = step.submit({
            let mut j = SeatJob::new("service:x", 0);
            j.hold = Duration::from_secs(3600);
            j
        });
        let _ = (a.await, b.await);
        Ok(())
    }));
    tokio::time::sleep(Duration::from_secs(1)).await;
    parent.cancel();
    assert!(matches!(parent.await, Err(Error::Cancelled)));
    // Both slots are free again: a new job is admitted at once.
    let t = Instant::now();
    let started = d.run(SeatJob::new("service:x", 0)).await.unwrap();
    assert_eq!(started, t);
    let cancelled = rec
        .jobs()
        .iter()
        .filter(|r| r.status() == JobStatus::Cancelled)
        .count();
    assert_eq!(
        cancelled, 3,
        "the parent and both children are recorded as cancelled"
    );
}

struct Sleepy(Duration);

impl Job for Sleepy {
    type Output = ();
    fn class(&self) -> Cow<'static, str> {
        "sleepy".into()
    }
    fn timeout(&self) -> Option<Duration> {
        Some(Duration::from_secs(1))
    }
    async fn execute(&mut self, _: &Resources, _: &JobContext) -> Result<()> {
        tokio::time::sleep(self.0).await;
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn timeouts_fire_and_are_recorded() {
    let (d, rec) = dispatcher();
    let err = d.run(Sleepy(Duration::from_secs(10))).await.unwrap_err();
    assert!(matches!(err, Error::Timeout(t) if t == Duration::from_secs(1)));
    assert_eq!(rec.jobs()[0].status(), JobStatus::TimedOut);
    d.run(Sleepy(Duration::from_millis(10))).await.unwrap();
}

struct Panicky {
    in_requirements: bool,
}

impl Job for Panicky {
    type Output = ();
    fn class(&self) -> Cow<'static, str> {
        "panicky".into()
    }
    fn requirements(&mut self, _: &mut Requirements, _: &JobContext) -> Result<()> {
        assert!(!self.in_requirements, "boom in requirements");
        Ok(())
    }
    async fn execute(&mut self, _: &Resources, _: &JobContext) -> Result<()> {
        panic!("boom in execute");
    }
}

#[tokio::test]
async fn a_panicking_job_is_a_recorded_failure_and_the_dispatcher_keeps_working() {
    let (d, rec) = dispatcher();
    for in_requirements in [false, true] {
        let err = d.run(Panicky { in_requirements }).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::System);
        assert!(err.to_string().contains("boom"), "{err}");
    }
    assert_eq!(d.run(doer("after", |_| async { Ok(7) })).await.unwrap(), 7);
    let rows = rec.jobs();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].status(), JobStatus::Failed);
    assert_eq!(rows[1].status(), JobStatus::Failed);
    assert!(
        rows[0]
            .end
            .as_ref()
            .unwrap()
            .error
            .as_ref()
            .unwrap()
            .contains("boom in execute")
    );
    assert_eq!(rows[2].status(), JobStatus::Succeeded);
}

#[tokio::test]
async fn every_job_is_recorded_including_failures() {
    let (d, rec) = dispatcher();
    let out = d
        .run(doer("root", |cx| async move {
            let ok = cx.submit(doer("ok", |_| async { Ok(1) }));
            let bad = cx.submit(doer("bad", |_| async {
                Err::<i32, _>(Error::external("pubmed", "efetch", "HTTP 503"))
            }));
            Ok((ok.await?, bad.await.is_err()))
        }))
        .await
        .unwrap();
    assert_eq!(out, (1, true));
    let rows = rec.jobs();
    assert_eq!(rows.len(), 3);
    let bad = rows.iter().find(|r| r.start.class == "bad").unwrap();
    let end = bad.end.as_ref().unwrap();
    assert_eq!(end.status, JobStatus::Failed);
    assert_eq!(end.error_kind.as_deref(), Some("external_service"));
    assert!(end.error.as_ref().unwrap().contains("pubmed"));
    assert_eq!(end.attempts, 1);
    assert!(rows.iter().all(|r| r.end.is_some()));
    assert!(
        rows.iter()
            .all(|r| r.end.as_ref().unwrap().ended_at_ms >= r.start.started_at_ms)
    );
}

#[tokio::test]
async fn metadata_published_by_a_job_is_readable_after_the_run() {
    let (d, _) = dispatcher();
    let h = d.submit(doer("reporter", |cx| async move {
        cx.set_metadata("report", serde_json::json!({"rows": 2}));
        Ok(())
    }));
    let cx = h.context().clone();
    h.await.unwrap();
    assert_eq!(cx.metadata("report"), Some(serde_json::json!({"rows": 2})));
}

#[tokio::test(start_paused = true)]
async fn a_failing_doer_cancels_the_children_still_running_and_records_why() {
    let (d, rec) = dispatcher();
    let outcome = d
        .run(doer("fails_midway", |cx| async move {
            let step = cx.fan_out();
            // Two children that would run for an hour, and one that fails at once.
            let slow: Vec<_> = (0..2).map(|_| step.submit(hour_long())).collect();
            let failing = step.submit(doer("broken", |_cx| async move {
                Err::<(), _>(Error::system("broken", "it broke"))
            }));
            failing.await?;
            for s in slow {
                s.await?;
            }
            Ok(())
        }))
        .await;
    assert!(outcome.is_err());
    // The children end as their tasks see the cancellation; nothing is left running.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let rows = rec.jobs();
    assert_eq!(rows.len(), 4);
    let running: Vec<_> = rows
        .iter()
        .filter(|r| r.status() == JobStatus::Running)
        .collect();
    assert!(running.is_empty(), "{running:?}");
    let cancelled: Vec<_> = rows
        .iter()
        .filter(|r| r.status() == JobStatus::Cancelled)
        .collect();
    assert_eq!(cancelled.len(), 2, "{rows:?}");
    for row in cancelled {
        let why = row
            .end
            .as_ref()
            .and_then(|e| e.error.clone())
            .unwrap_or_default();
        assert!(
            why.contains("cancelled because `fails_midway`") && why.contains("failed"),
            "{why}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_dispatcher_shutdown_cancels_every_running_job_and_names_the_reason() {
    let (d, rec) = dispatcher();
    let root = d.submit(doer(
        "long",
        |cx| async move { cx.submit(hour_long()).await },
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let left = d
        .shutdown("the process was stopped by SIGTERM", Duration::from_secs(5))
        .await;
    assert_eq!(left, 0, "every task ended within the grace");
    assert!(matches!(root.await, Err(Error::Cancelled)));
    let rows = rec.jobs();
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row.status(), JobStatus::Cancelled, "{row:?}");
        let why = row
            .end
            .as_ref()
            .and_then(|e| e.error.clone())
            .unwrap_or_default();
        assert!(why.contains("SIGTERM"), "{why}");
    }
    // Work submitted after the shutdown is refused the same way, and recorded.
    assert!(matches!(d.run(hour_long()).await, Err(Error::Cancelled)));
    assert_eq!(rec.jobs().len(), 3);
}

/// A doer that sleeps for an hour.
fn hour_long() -> impl Job<Output = ()> {
    doer("hour_long", |_cx| async move {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Ok(())
    })
}
