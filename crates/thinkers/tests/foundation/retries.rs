//! Retry signals re-run the same instance, each within its own bound, and are never failures.

use std::sync::atomic::Ordering;
use std::time::Duration;

use thinkers::dispatch::{Limits, Rate};
use thinkers::record::JobStatus;
use thinkers::{Error, ErrorKind, RetrySignal};
use tokio::time::Instant;

use crate::support::{Scripted, SeatJob, dispatcher, dispatcher_with};

fn throttled(secs: u64) -> Error {
    Error::throttled(None, Some(Duration::from_secs(secs)))
}

fn transient() -> Error {
    Error::transient("sim", "503", None)
}

#[tokio::test(start_paused = true)]
async fn throttling_waits_then_reruns_the_same_instance() {
    let (d, rec) = dispatcher();
    let t0 = Instant::now();
    let (job, _) = Scripted::new(vec![throttled(5), throttled(5)]);
    assert_eq!(d.run(job).await.unwrap(), 3);
    assert!(Instant::now() - t0 >= Duration::from_secs(10));
    let row = &rec.jobs()[0];
    assert_eq!(row.status(), JobStatus::Succeeded);
    assert_eq!(row.end.as_ref().unwrap().attempts, 3);
    assert!(
        row.end.as_ref().unwrap().error.is_none(),
        "a retry signal is never a failure"
    );
}

#[tokio::test(start_paused = true)]
async fn throttling_stops_at_its_bound() {
    let (d, _) = dispatcher();
    let bound = d.config().max_throttles;
    let (job, runs) = Scripted::new((0..=bound).map(|_| throttled(1)).collect());
    let err = d.run(job).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AttemptsExhausted);
    assert_eq!(runs.load(Ordering::SeqCst), bound + 1);
}

#[tokio::test(start_paused = true)]
async fn throttling_with_a_budget_pauses_the_budget_for_everyone() {
    let limits = Limits {
        tokens: Some(Rate::per_minute(1_000_000)),
        ..Limits::default()
    };
    let (d, _) = dispatcher_with("model:e", limits);
    let t0 = Instant::now();
    let (job, _) = Scripted::new(vec![Error::throttled(
        Some("model:e".into()),
        Some(Duration::from_secs(30)),
    )]);
    let throttled = d.submit(job);
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(1)).await;
    let other = d.run(SeatJob::new("model:e", 10)).await.unwrap();
    assert!(
        other - t0 >= Duration::from_secs(30),
        "the paused budget admitted nothing"
    );
    throttled.await.unwrap();
}

#[tokio::test]
async fn corrections_rerun_at_once_up_to_the_bound() {
    let (d, _) = dispatcher();
    let (job, _) = Scripted::new(
        (0..3)
            .map(|i| Error::correction(format!("fix {i}")))
            .collect(),
    );
    assert_eq!(d.run(job).await.unwrap(), 4);

    let (job, runs) = Scripted::new(
        (0..4)
            .map(|i| Error::correction(format!("fix {i}")))
            .collect(),
    );
    let err = d.run(job).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AttemptsExhausted);
    assert!(err.to_string().contains("fix 3"), "{err}");
    assert_eq!(runs.load(Ordering::SeqCst), 4);

    let (mut job, runs) = Scripted::new(vec![Error::correction("once")]);
    job.max_corrections = 0;
    assert!(d.run(job).await.is_err());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn truncation_escalates_exactly_once() {
    let (d, _) = dispatcher();
    let esc = || Error::Retry(RetrySignal::TruncationEscalation);
    let (job, _) = Scripted::new(vec![esc()]);
    assert_eq!(d.run(job).await.unwrap(), 2);

    let (job, runs) = Scripted::new(vec![esc(), esc()]);
    let err = d.run(job).await.unwrap_err();
    assert!(err.to_string().contains("truncated"), "{err}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn transient_failures_back_off_and_are_bounded() {
    let (d, _) = dispatcher();
    let (job, _) = Scripted::new(vec![transient(), transient()]);
    assert_eq!(d.run(job).await.unwrap(), 3);

    let bound = d.config().max_transient_retries;
    let (job, runs) = Scripted::new((0..=bound).map(|_| transient()).collect());
    let err = d.run(job).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ExternalService);
    assert_eq!(runs.load(Ordering::SeqCst), bound + 1);
}

#[tokio::test(start_paused = true)]
async fn a_transient_failure_waits_as_long_as_the_server_asked() {
    let (d, _) = dispatcher();
    let t0 = Instant::now();
    let asked = Error::transient("sim", "503", Some(Duration::from_secs(7)));
    let (job, _) = Scripted::new(vec![asked]);
    assert_eq!(d.run(job).await.unwrap(), 2);
    // The backoff alone would have been 200 ms.
    assert!(Instant::now() - t0 >= Duration::from_secs(7));
}

#[tokio::test(start_paused = true)]
async fn an_unreadable_answer_is_retried_once_on_its_own_bound() {
    let (d, _) = dispatcher();
    let unreadable = || {
        Error::Retry(RetrySignal::UnreadableAnswer {
            service: "sim".into(),
            detail: "not JSON".into(),
        })
    };
    let (job, _) = Scripted::new(vec![unreadable(), transient()]);
    assert_eq!(d.run(job).await.unwrap(), 3);
    let (job, runs) = Scripted::new(vec![unreadable(), unreadable()]);
    let err = d.run(job).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ExternalService);
    assert!(err.to_string().contains("not JSON"), "{err}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_escalated_attempt_is_visible_to_requirements() {
    use std::borrow::Cow;
    use thinkers::job::{Job, JobContext, Requirements, Resources};
    struct Esc(Vec<bool>);
    impl Job for Esc {
        type Output = Vec<bool>;
        fn class(&self) -> Cow<'static, str> {
            "esc".into()
        }
        fn requirements(&mut self, req: &mut Requirements, _: &JobContext) -> thinkers::Result<()> {
            self.0.push(req.attempt().escalated);
            Ok(())
        }
        async fn execute(
            &mut self,
            res: &Resources,
            _: &JobContext,
        ) -> thinkers::Result<Vec<bool>> {
            if res.attempt().escalated {
                Ok(self.0.clone())
            } else {
                Err(Error::Retry(RetrySignal::TruncationEscalation))
            }
        }
    }
    let (d, _) = dispatcher();
    assert_eq!(d.run(Esc(Vec::new())).await.unwrap(), vec![false, true]);
}

#[tokio::test(start_paused = true)]
async fn a_server_wait_longer_than_the_cap_is_cut_to_it_without_overflow() {
    // The largest value a `Retry-After` header can carry, with a budget (the pause) and without
    // (the job's own sleep): each waits the dispatcher's cap, once, and the job runs again.
    let limits = Limits {
        tokens: Some(Rate::per_minute(1_000_000)),
        ..Limits::default()
    };
    let (d, _) = dispatcher_with("model:e", limits);
    let cap = d.config().max_server_wait;
    let huge = Duration::from_secs(u64::MAX);
    for budget in [Some("model:e".to_owned()), None] {
        let t0 = Instant::now();
        let (job, runs) = Scripted::new(vec![Error::throttled(budget.clone(), Some(huge))]);
        assert_eq!(d.run(job).await.unwrap(), 2, "{budget:?}");
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        let took = Instant::now() - t0;
        assert!(
            took >= cap && took < cap + Duration::from_secs(1),
            "{took:?}"
        );
    }
    // A transient failure's server wait is capped the same way.
    let t0 = Instant::now();
    let (job, _) = Scripted::new(vec![Error::transient("sim", "503", Some(huge))]);
    assert_eq!(d.run(job).await.unwrap(), 2);
    assert!(Instant::now() - t0 < cap + Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn a_throttled_budget_admits_again_when_the_pause_ends() {
    // The throttled job and every other job on the budget run again when the pause ends, not
    // later.
    let limits = Limits {
        tokens: Some(Rate::per_minute(1_000_000)),
        ..Limits::default()
    };
    let (d, _) = dispatcher_with("model:e", limits);
    let t0 = Instant::now();
    let (job, _) = Scripted::new(vec![Error::throttled(
        Some("model:e".into()),
        Some(Duration::from_millis(2_500)),
    )]);
    let throttled = d.submit(job);
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(1)).await;
    let other = d.run(SeatJob::new("model:e", 10)).await.unwrap() - t0;
    assert!(
        other >= Duration::from_millis(2_500) && other < Duration::from_millis(2_600),
        "{other:?}"
    );
    assert_eq!(throttled.await.unwrap(), 2);
    let took = Instant::now() - t0;
    assert!(took < Duration::from_millis(2_600), "{took:?}");
}
