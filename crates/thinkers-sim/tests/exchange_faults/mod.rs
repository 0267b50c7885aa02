//! The faults that shape the HTTP exchange (what real servers do that a well-behaved provider
//! does not): key-echoing errors, error events and bodies, redirects, server-requested waits,
//! stalled, empty and truncated streams, bodies that are not JSON, empty answers, unknown models.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thinkers_sim::{FaultKind, FaultRule, SimConfig, SimModel};

use crate::support::*;

fn ask(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "max_tokens": 256,
        "messages": [{"role": "user", "content": "Tell me a longer story about seats and grades."}]})
}

const OPENAI_KEY: &str = "sk-test";
const ANTHROPIC_KEY: &str = "sk-ant-test";

#[tokio::test]
async fn error_bodies_echo_the_key_at_every_status() {
    let sim = start_default().await;
    for status in [400u16, 401, 403, 404, 500, 503] {
        let fault = format!("echo_key; status={status}");
        let r = openai_with(&sim, &ask("gpt-sim", false), &[("x-sim-fault", &fault)]).await;
        assert_eq!(r.status, status);
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(OPENAI_KEY), "{status}: {message}");
        assert_openai_schema("ErrorResponse", &r.body);
        let r = anthropic_with(&sim, &ask("claude-sim", false), &[("x-sim-fault", &fault)]).await;
        assert_eq!(r.status, status);
        assert_eq!(r.body["type"], "error");
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(ANTHROPIC_KEY), "{status}: {message}");
    }
    let r = anthropic_with(
        &sim,
        &ask("claude-sim", false),
        &[("x-sim-fault", "echo_key")],
    )
    .await;
    assert_eq!(r.status, 401, "401 by default");
    assert_eq!(r.body["error"]["type"], "authentication_error");
    let r = openai_with(&sim, &ask("gpt-sim", false), &[("x-sim-fault", "echo_key")]).await;
    assert_eq!(r.body["error"]["code"], "invalid_api_key");
    let stats = sim.stats();
    assert_eq!(stats.totals.faults_by_kind[&FaultKind::EchoKey], 14);
}

#[tokio::test]
async fn stream_error_events_echo_the_key_in_both_dialects() {
    let sim = start_default().await;
    let (events, broken) = openai_stream(
        &sim,
        &ask("gpt-sim", true),
        &[("x-sim-fault", "stream_error_echo_key; events=2")],
    )
    .await;
    assert!(!broken);
    let last = events.last().unwrap().json();
    assert!(
        last["error"]["message"]
            .as_str()
            .unwrap()
            .contains(OPENAI_KEY),
        "{last}"
    );
    assert_eq!(
        events.len(),
        1 + 2 + 1,
        "role chunk, two content chunks, the error"
    );
    assert!(events.iter().all(|e| e.data != "[DONE]"));

    let (events, broken) = anthropic_stream(
        &sim,
        &ask("claude-sim", true),
        &[("x-sim-fault", "stream_error_echo_key")],
    )
    .await;
    assert!(!broken);
    let last = events.last().unwrap();
    assert_eq!(last.event, "error");
    let data = last.json();
    assert_eq!(data["error"]["type"], "authentication_error");
    assert!(
        data["error"]["message"]
            .as_str()
            .unwrap()
            .contains(ANTHROPIC_KEY)
    );
    assert!(
        events.iter().all(|e| e.event != "content_block_delta"),
        "no content before the error by default"
    );

    // A non-streamed request gets the key-echoing error body instead.
    let r = openai_with(
        &sim,
        &ask("gpt-sim", false),
        &[("x-sim-fault", "stream_error_echo_key")],
    )
    .await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn a_200_body_can_be_an_error_echoing_the_key() {
    let sim = start_default().await;
    let r = anthropic_with(
        &sim,
        &ask("claude-sim", false),
        &[("x-sim-fault", "error_200")],
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["type"], "error");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(ANTHROPIC_KEY)
    );
    let r = openai_with(
        &sim,
        &ask("gpt-sim", false),
        &[("x-sim-fault", "error_200")],
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(OPENAI_KEY)
    );
}

#[tokio::test]
async fn a_redirect_carries_the_key_in_its_location() {
    let sim = start_default().await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let resp = client
        .post(format!("{}/chat/completions", sim.openai_base_url()))
        .bearer_auth(OPENAI_KEY)
        .header("x-sim-fault", "redirect_key")
        .json(&ask("gpt-sim", false))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 307);
    let location = resp.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        location.ends_with("/v1/chat/completions?key=sk-test"),
        "{location}"
    );
    assert!(location.starts_with(&sim.base_url()), "{location}");
}

#[tokio::test]
async fn retryable_statuses_carry_the_requested_wait() {
    let sim = start_default().await;
    for status in [500u16, 502, 503, 504, 408, 409, 429, 529] {
        let fault = format!("retry_after; status={status}; retry_after_ms=1500");
        let r = anthropic_with(&sim, &ask("claude-sim", false), &[("x-sim-fault", &fault)]).await;
        assert_eq!(r.status, status);
        assert_eq!(r.header("retry-after-ms").as_deref(), Some("1500"));
        assert_eq!(r.header("retry-after"), None);
        assert_eq!(r.body["type"], "error");
    }
    let r = openai_with(
        &sim,
        &ask("gpt-sim", false),
        &[("x-sim-fault", "retry_after; status=503; retry_after_s=2")],
    )
    .await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after").as_deref(), Some("2"));
    assert_eq!(r.body["error"]["type"], "server_error");
    sim.inject(FaultRule::new(FaultKind::RetryAfter).for_model("gpt-sim"));
    let r = openai(&sim, &ask("gpt-sim", false)).await;
    assert_eq!(
        (r.status, r.header("retry-after").as_deref()),
        (503, Some("1"))
    );
}

/// Reads a stream, timing each event; `None` as the last item marks a broken connection.
async fn timed_events(resp: reqwest::Response) -> Vec<(Duration, Option<String>)> {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let start = Instant::now();
    let mut stream = resp.bytes_stream().eventsource();
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => out.push((start.elapsed(), Some(e.data))),
            Err(_) => {
                out.push((start.elapsed(), None));
                break;
            }
        }
    }
    out
}

async fn post_stream(sim: &thinkers_sim::Sim, anthropic: bool, fault: &str) -> reqwest::Response {
    let req = if anthropic {
        client()
            .post(format!("{}/v1/messages", sim.base_url()))
            .header("x-api-key", ANTHROPIC_KEY)
            .header("anthropic-version", "2023-06-01")
            .json(&ask("claude-sim", true))
    } else {
        client()
            .post(format!("{}/chat/completions", sim.openai_base_url()))
            .bearer_auth(OPENAI_KEY)
            .json(&ask("gpt-sim", true))
    };
    req.header("x-sim-fault", fault).send().await.unwrap()
}

#[tokio::test]
async fn streams_stall_mid_answer_and_before_content() {
    let sim = start_default().await;
    for anthropic in [false, true] {
        let opening = if anthropic { 3 } else { 1 };
        let resp = post_stream(&sim, anthropic, "stall_mid_stream; hang_ms=600").await;
        let events = timed_events(resp).await;
        let (cut_at, last) = events.last().unwrap().clone();
        assert!(last.is_none(), "the connection breaks after the stall");
        assert_eq!(events.len(), opening + 2 + 1, "{anthropic}: {events:?}");
        let before = events[events.len() - 2].0;
        assert!(
            cut_at - before >= Duration::from_millis(550),
            "{anthropic}: {events:?}"
        );

        let resp = post_stream(&sim, anthropic, "stall_before_content; hang_ms=400").await;
        let events = timed_events(resp).await;
        assert_eq!(events.len(), opening + 1, "{anthropic}: {events:?}");
        assert!(events.last().unwrap().1.is_none());
        assert!(events.last().unwrap().0 >= Duration::from_millis(380));
        if !anthropic {
            let first: Value = serde_json::from_str(events[0].1.as_ref().unwrap()).unwrap();
            assert_eq!(first["choices"][0]["delta"]["content"], "");
        }
    }
}

#[tokio::test]
async fn a_slow_first_event_then_the_whole_answer() {
    let sim = start_default().await;
    for anthropic in [false, true] {
        let start = Instant::now();
        let resp = post_stream(&sim, anthropic, "slow_first_event; hang_ms=500").await;
        let head = start.elapsed();
        assert!(
            head < Duration::from_millis(400),
            "the head comes at once: {head:?}"
        );
        let events = timed_events(resp).await;
        assert!(events[0].0 >= Duration::from_millis(450), "{events:?}");
        let last = events.last().unwrap().1.clone().unwrap();
        if anthropic {
            assert!(last.contains("message_stop"), "{last}");
        } else {
            assert_eq!(last, "[DONE]");
        }
    }
    assert_eq!(
        sim.stats().model("gpt-sim").faults_by_kind[&FaultKind::SlowFirstEvent],
        1
    );
    assert!(
        sim.stats().model("gpt-sim").output_tokens > 0,
        "an answer was served"
    );
}

#[tokio::test]
async fn empty_and_truncated_streams_end_cleanly_before_any_content() {
    let sim = start_default().await;
    let (events, broken) = openai_stream(
        &sim,
        &ask("gpt-sim", true),
        &[("x-sim-fault", "empty_stream")],
    )
    .await;
    assert!(events.is_empty() && !broken);
    let (events, broken) = anthropic_stream(
        &sim,
        &ask("claude-sim", true),
        &[("x-sim-fault", "empty_stream")],
    )
    .await;
    assert!(events.is_empty() && !broken);

    let (events, broken) = openai_stream(
        &sim,
        &ask("gpt-sim", true),
        &[("x-sim-fault", "truncated_stream")],
    )
    .await;
    assert!(!broken);
    assert_eq!(events.len(), 1, "only the role chunk");
    assert!(events[0].json()["choices"][0]["finish_reason"].is_null());
    let (events, broken) = anthropic_stream(
        &sim,
        &ask("claude-sim", true),
        &[("x-sim-fault", "truncated_stream")],
    )
    .await;
    assert!(!broken);
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names, ["message_start", "content_block_start", "ping"]);
}

#[tokio::test]
async fn bodies_that_are_not_json() {
    let sim = start_default().await;
    let resp = client()
        .post(format!("{}/chat/completions", sim.openai_base_url()))
        .bearer_auth(OPENAI_KEY)
        .header("x-sim-fault", "html_body")
        .json(&ask("gpt-sim", false))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(resp.text().await.unwrap().starts_with("<!DOCTYPE html>"));
    for anthropic in [false, true] {
        let r = if anthropic {
            anthropic_with(
                &sim,
                &ask("claude-sim", false),
                &[("x-sim-fault", "cut_json")],
            )
            .await
        } else {
            openai_with(&sim, &ask("gpt-sim", false), &[("x-sim-fault", "cut_json")]).await
        };
        assert_eq!(r.status, 200);
        let text = r.body.as_str().expect("not parseable, kept as text");
        assert!(text.starts_with('{'), "{text}");
    }
}

#[tokio::test]
async fn an_empty_anthropic_answer_has_no_content_and_no_stop_reason() {
    let sim = start_default().await;
    let r = anthropic_with(
        &sim,
        &ask("claude-sim", false),
        &[("x-sim-fault", "empty_answer")],
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["content"], json!([]));
    assert!(r.body["stop_reason"].is_null());
    assert_eq!(r.body["type"], "message");
    let (events, _) = anthropic_stream(
        &sim,
        &ask("claude-sim", true),
        &[("x-sim-fault", "empty_answer")],
    )
    .await;
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names, ["message_start", "message_delta", "message_stop"]);
    assert!(events[1].json()["delta"]["stop_reason"].is_null());
}

#[tokio::test]
async fn an_unknown_model_is_the_providers_own_404() {
    let sim = start(
        SimConfig::builder()
            .model(SimModel::new("served"))
            .build()
            .unwrap(),
    )
    .await;
    let r = openai(&sim, &ask("not-served", false)).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.body["error"]["code"], "model_not_found");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`not-served`")
    );
    assert_openai_schema("ErrorResponse", &r.body);
    let r = anthropic(&sim, &ask("not-served", false)).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.body["type"], "error");
    assert_eq!(r.body["error"]["type"], "not_found_error");
    assert_eq!(r.body["error"]["message"], "model: not-served");
}

#[tokio::test]
async fn rules_with_parameters_over_http_and_the_request_log_keeps_headers() {
    let sim = start(
        SimConfig::builder()
            .model(SimModel::new("gpt-sim"))
            .log_bodies(true)
            .build()
            .unwrap(),
    )
    .await;
    let resp = client()
        .post(format!("{}/sim/faults", sim.base_url()))
        .json(&json!({"kind": "retry_after", "status": 429, "retry_after_ms": 250}))
        .send()
        .await
        .unwrap();
    let pending: Value = resp.json().await.unwrap();
    assert_eq!(pending["pending"][0]["retry_after_ms"], 250);
    let r = openai(&sim, &ask("gpt-sim", false)).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after-ms").as_deref(), Some("250"));
    let logged = sim.requests();
    let auth = logged[0]
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.as_str());
    assert_eq!(auth, Some("Bearer sk-test"));
    let bad = openai_with(
        &sim,
        &ask("gpt-sim", false),
        &[("x-sim-fault", "hang; forever=1")],
    )
    .await;
    assert_eq!(bad.status, 400, "an unknown parameter is refused");
}
