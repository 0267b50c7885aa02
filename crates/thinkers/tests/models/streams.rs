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

/// A streamed call offering a tool, to a server that cannot stream such a call (the sim's
/// `streams_tools = false`, as llama-cpp-python's `chatml-function-calling` ends such a stream
/// empty): with the provider's `stream_tools = false` it is asked whole and its answer reaches
/// the stream's reader; without, every attempt gets the empty stream and the call fails saying
/// so.
#[tokio::test]
async fn a_server_that_cannot_stream_tool_calls_is_asked_for_them_whole() {
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use thinkers::conversation::Message;
    use thinkers::llm::{ChatRequest, LlmCall, StreamDelta, ToolSpec};
    use thinkers::model::{Grade, OutputSize};
    use thinkers_sim::{Profile, Sim, SimConfig, SimModel};

    let sim = Sim::start(
        SimConfig::builder()
            .log_bodies(true)
            .model(SimModel::new("m-llama").profile(Profile {
                streams_tools: false,
                ..Profile::default()
            }))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let base = sim.openai_base_url();
    let mut toml = String::new();
    for (provider, stream_tools) in [("aware", false), ("unaware", true)] {
        toml.push_str(&format!(
            "[providers.{provider}]\ndialect = \"openai-compatible\"\nbase_url = \"{base}\"\n\
             api_key_env = \"THINKERS_SIM_KEY\"\n\
             stream_tools = {stream_tools}\n\n[[entries]]\nid = \"{provider}\"\n\
             provider = \"{provider}\"\nmodel = \"m-llama\"\ngrade = \"small\"\n\
             context_window = 100000\noutput_ceiling = 4096\nprice_in = 1.0\nprice_out = 2.0\n\
             currency = \"USD\"\n\n"
        ));
    }
    let rt = crate::support::runtime(&toml, &timeouts(), None).await;
    let call = |entry: &str| {
        let mut req = ChatRequest::new("Be brief.", vec![Message::user_text("Look it up.")]);
        req.tools = vec![ToolSpec {
            name: "lookup".into(),
            description: "Look a term up.".into(),
            parameters: Arc::new(json!({"type": "object",
                "properties": {"term": {"type": "string"}}, "required": ["term"]})),
        }];
        let seen = Arc::new(Mutex::new(0usize));
        let sink = Arc::clone(&seen);
        let job = LlmCall::new(Grade::Small, OutputSize::Compact, req)
            .pinned(entry.to_owned())
            .streaming(Box::new(move |_: StreamDelta| {
                *sink.lock().unwrap() += 1;
            }));
        (job, seen)
    };

    let (job, seen) = call("aware");
    let out = rt
        .run(job)
        .await
        .expect("asked whole, the call is answered");
    assert!(
        !out.response.tool_calls().is_empty() || !out.response.text().is_empty(),
        "an answer arrived: {:?}",
        out.response
    );
    assert!(*seen.lock().unwrap() > 0, "the reader saw the answer");
    let bodies = sim.requests();
    let sent = bodies.last().unwrap();
    assert_eq!(sent.body.get("stream"), None, "asked whole: {}", sent.body);

    let (job, _) = call("unaware");
    let err = rt.run(job).await.expect_err("every stream ends empty");
    let msg = err.to_string();
    assert!(
        msg.contains("stream ended before any answer") && msg.contains("unaware"),
        "{msg}"
    );
}
