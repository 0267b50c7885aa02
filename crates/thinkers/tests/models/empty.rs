//! Issue 28, point 9: an Anthropic answer with no content and no stop reason is a provider
//! failure, not an empty success, asked again at most once in every dialect; a 200 whose body
//! cannot be parsed is retried at most once.

use thinkers::ErrorKind;
use thinkers_sim::{FaultKind, FaultRule};

use crate::support::{Timeouts, call, entry, faulty, model, requests, streamed};

#[tokio::test]
async fn an_empty_anthropic_answer_is_retried_whole_and_streamed() {
    let f = faulty(&Timeouts::default(), "THINKERS_SIM_KEY", None).await;
    for (i, stream) in [(0usize, false), (1, true)] {
        let (m, e) = (model(true, i), entry(true, i));
        f.sim
            .inject(FaultRule::new(FaultKind::EmptyAnswer).for_model(&m));
        let out = if stream {
            f.rt.run(streamed(&e).0).await
        } else {
            f.rt.run(call(&e)).await
        }
        .unwrap_or_else(|err| panic!("{e} (stream {stream}): {err}"));
        assert!(!out.response.text().is_empty(), "{e}: the retry's answer");
        assert_eq!(requests(&f.sim, &m), 2, "{e}: the empty answer was retried");
    }
}

#[tokio::test]
async fn always_empty_anthropic_answers_fail_saying_so() {
    let f = faulty(&Timeouts::default(), "THINKERS_SIM_KEY", None).await;
    for (i, stream) in [(2usize, false), (3, true)] {
        let (m, e) = (model(true, i), entry(true, i));
        f.sim.inject(
            FaultRule::new(FaultKind::EmptyAnswer)
                .for_model(&m)
                .times(100),
        );
        let result = if stream {
            f.rt.run(streamed(&e).0).await
        } else {
            f.rt.run(call(&e)).await
        };
        let err = match result {
            Ok(out) => panic!(
                "{e} (stream {stream}): an empty success: {:?}",
                out.response
            ),
            Err(err) => err,
        };
        assert_eq!(err.kind(), ErrorKind::ExternalService, "{e}: {err}");
        assert!(err.to_string().contains("empty"), "{e}: {err}");
        assert!(requests(&f.sim, &m) >= 2, "{e}: retried before giving up");
    }
}

#[tokio::test]
async fn an_unparseable_200_body_is_retried_at_most_once() {
    let f = faulty(&Timeouts::default(), "THINKERS_SIM_KEY", None).await;
    for anthropic in [false, true] {
        let (m, e) = (model(anthropic, 4), entry(anthropic, 4));
        f.sim
            .inject(FaultRule::new(FaultKind::CutJson).for_model(&m).times(100));
        let err = f.rt.run(call(&e)).await.expect_err("every body is cut");
        assert_eq!(err.kind(), ErrorKind::ExternalService, "{e}: {err}");
        assert_eq!(
            requests(&f.sim, &m),
            2,
            "{e}: one retry (each retry pays for the answer again): {err}"
        );
    }
}

#[tokio::test]
async fn an_always_empty_answer_is_asked_again_once_in_every_dialect() {
    // Anthropic, Gemini and Bedrock say an answer is empty (no content, no stop reason), whole
    // and streamed: each is paid twice at most, then a clear error naming the entry.
    let (sim, rt) = crate::outages::every_dialect().await;
    for (_, e, m, _) in crate::outages::DIALECTS {
        if !["a-e", "g-e", "b-e"].contains(&e) {
            continue;
        }
        for stream in [false, true] {
            sim.inject(
                FaultRule::new(FaultKind::EmptyAnswer)
                    .for_model(m)
                    .times(100),
            );
            let before = requests(&sim, m);
            let result = if stream {
                rt.run(streamed(e).0).await
            } else {
                rt.run(call(e)).await
            };
            let err = match result {
                Ok(out) => panic!(
                    "{e} (stream {stream}): an empty success: {:?}",
                    out.response
                ),
                Err(err) => err,
            };
            assert_eq!(
                requests(&sim, m) - before,
                2,
                "{e} (stream {stream}): asked again once: {err}"
            );
            assert_eq!(err.kind(), ErrorKind::ExternalService, "{e}: {err}");
            let msg = err.to_string();
            assert!(msg.contains("the answer was empty"), "{e}: {msg}");
            assert!(msg.contains(&format!("entry `{e}`")), "{e}: {msg}");
        }
    }
}
