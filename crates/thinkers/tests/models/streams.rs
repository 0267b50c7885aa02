//! Issue 28, point 5: streams have an idle timeout between events; the wait for the first event
//! is the request timeout's. A stream that fails before any content is retried like a failed
//! request; after content it is never replayed and fails with a clear error.

use std::time::{Duration, Instant};

use thinkers::ErrorKind;
use thinkers_sim::{FaultKind, FaultRule};

use crate::support::{Timeouts, entry, faulty, model, path, provider, requests, streamed};

fn timeouts() -> Timeouts {
    Timeouts {
        request: Some(Duration::from_secs(10)),
        stream_idle: Some(Duration::from_secs(1)),
        ..Timeouts::default()
    }
}

#[tokio::test]
async fn a_stream_stalling_after_content_fails_soon_and_is_never_replayed() {
    let f = faulty(&timeouts(), "THINKERS_SIM_KEY", None).await;
    for anthropic in [false, true] {
        let m = model(anthropic, 0);
        let e = entry(anthropic, 0);
        f.sim
            .inject(FaultRule::new(FaultKind::StallMidStream).for_model(&m));
        let (job, text) = streamed(&e);
        let started = Instant::now();
        let err = f.rt.run(job).await.expect_err("the stalled stream fails");
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(4),
            "{e}: failed after {took:?}, the idle timeout is 1 s: {err}"
        );
        assert!(
            !text.lock().unwrap().is_empty(),
            "{e}: content arrived first"
        );
        assert_eq!(requests(&f.sim, &m), 1, "{e}: never replayed");
        assert_eq!(err.kind(), ErrorKind::ExternalService, "{e}: {err}");
        let msg = err.to_string();
        for part in [provider(anthropic), e.as_str(), path(anthropic)] {
            assert!(msg.contains(part), "{e}: `{part}` is not named: {msg}");
        }
    }
}

#[tokio::test]
async fn a_stream_that_fails_before_any_content_is_retried() {
    let f = faulty(&timeouts(), "THINKERS_SIM_KEY", None).await;
    let mut failures = Vec::new();
    for anthropic in [false, true] {
        for (i, kind) in [
            FaultKind::StallBeforeContent,
            FaultKind::EmptyStream,
            FaultKind::TruncatedStream,
        ]
        .into_iter()
        .enumerate()
        {
            let m = model(anthropic, i);
            let e = entry(anthropic, i);
            f.sim.inject(FaultRule::new(kind).for_model(&m));
            let (job, text) = streamed(&e);
            let started = Instant::now();
            match f.rt.run(job).await {
                Ok(out) => {
                    let seen = requests(&f.sim, &m);
                    if seen != 2 {
                        failures.push(format!("{kind} on {e}: the sim saw {seen} requests"));
                    }
                    assert_eq!(*text.lock().unwrap(), out.response.text(), "{kind} on {e}");
                    assert!(!out.response.text().is_empty(), "{kind} on {e}");
                    let took = started.elapsed();
                    assert!(took < Duration::from_secs(5), "{kind} on {e}: {took:?}");
                }
                Err(err) => failures.push(format!(
                    "{kind} on {e}: failed after {:?} and {} request(s): {err}",
                    started.elapsed(),
                    requests(&f.sim, &m)
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn the_first_event_may_take_longer_than_the_idle_timeout() {
    let f = faulty(&timeouts(), "THINKERS_SIM_KEY", None).await;
    for anthropic in [false, true] {
        let m = model(anthropic, 0);
        let e = entry(anthropic, 0);
        f.sim.inject(
            FaultRule::new(FaultKind::SlowFirstEvent)
                .hang_ms(1500)
                .for_model(&m),
        );
        let (job, text) = streamed(&e);
        let out =
            f.rt.run(job)
                .await
                .unwrap_or_else(|err| panic!("{e}: a thinking model was cut off: {err}"));
        assert_eq!(*text.lock().unwrap(), out.response.text());
        assert_eq!(requests(&f.sim, &m), 1, "{e}: one request");
    }
}
