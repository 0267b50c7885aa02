//! Faults: every kind, through the header, injected rules (in code and over HTTP) and random
//! rates; each counted in the stats.

use std::time::Duration;

use serde_json::{Value, json};
use thinkers_sim::{FaultKind, FaultRule, Profile, SimConfig, SimModel};

use crate::support::*;

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn structured(model: &str) -> Value {
    json!({"model": model, "messages": [user("Give me the summary")],
        "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": answer_schema()}}})
}

fn answer_schema() -> Value {
    json!({"type": "object", "required": ["summary", "score"], "additionalProperties": false,
        "properties": {"summary": {"type": "string"}, "score": {"type": "integer", "minimum": 0, "maximum": 10}}})
}

fn claude(extra: &Value) -> Value {
    let mut body = json!({"model": "claude-sim", "max_tokens": 1024, "messages": [user("Give me the summary")]});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

#[tokio::test]
async fn transport_faults_in_both_dialects() {
    let sim = start_default().await;
    let r = openai_with(&sim, &structured("gpt-sim"), &[("x-sim-fault", "http_500")]).await;
    assert_eq!(r.status, 500);
    assert_openai_schema("ErrorResponse", &r.body);
    assert_eq!(r.body["error"]["type"], "server_error");
    let r = anthropic_with(&sim, &claude(&json!({})), &[("x-sim-fault", "http_500")]).await;
    assert_eq!(r.status, 500);
    assert_eq!(r.body["error"]["type"], "api_error");

    let r = openai_with(
        &sim,
        &structured("gpt-sim"),
        &[("x-sim-fault", "overloaded_529")],
    )
    .await;
    assert_eq!(r.status, 503);
    assert_eq!(r.body["error"]["type"], "server_error");
    let r = anthropic_with(
        &sim,
        &claude(&json!({})),
        &[("x-sim-fault", "overloaded_529")],
    )
    .await;
    assert_eq!(r.status, 529);
    assert_eq!(r.body["error"]["type"], "overloaded_error");

    let r = openai_with(
        &sim,
        &structured("gpt-sim"),
        &[("x-sim-fault", "rate_limit_429")],
    )
    .await;
    assert_eq!(r.status, 429);
    assert_eq!(r.body["error"]["code"], "rate_limit_exceeded");
    assert_eq!(r.header("retry-after").as_deref(), Some("1"));
    assert_eq!(r.header("retry-after-ms").as_deref(), Some("1000"));
    let r = anthropic_with(
        &sim,
        &claude(&json!({})),
        &[("x-sim-fault", "rate_limit_429")],
    )
    .await;
    assert_eq!(r.status, 429);
    assert_eq!(r.body["error"]["type"], "rate_limit_error");

    let typo = openai_with(
        &sim,
        &structured("gpt-sim"),
        &[("x-sim-fault", "http_5000")],
    )
    .await;
    assert_eq!(typo.status, 400);
    assert!(
        typo.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("http_5000")
    );

    let stats = sim.stats();
    assert_eq!(stats.totals.faults, 6);
    assert_eq!(stats.totals.faults_by_kind[&FaultKind::Overloaded529], 2);
    assert_eq!(
        stats.totals.rate_limited, 0,
        "injected 429s are faults, not limit refusals"
    );
}

#[tokio::test]
async fn hang_outlasts_the_client_and_shutdown_still_returns() {
    let sim = start(SimConfig::builder().hang_ms(120_000).build().unwrap()).await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let err = client
        .post(format!("{}/chat/completions", sim.openai_base_url()))
        .bearer_auth("k")
        .header("x-sim-fault", "hang")
        .json(&json!({"model": "m", "messages": [user("hi")]}))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(sim.stats().totals.faults_by_kind[&FaultKind::Hang], 1);
    tokio::time::timeout(Duration::from_secs(10), sim.shutdown())
        .await
        .expect("shutdown must not wait for the hang")
        .unwrap();
}

#[tokio::test]
async fn content_faults_reshape_the_answer() {
    let sim = start_default().await;
    let content = |r: &Reply| {
        r.body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };

    let r = openai_with(&sim, &structured("gpt-sim"), &[("x-sim-fault", "truncate")]).await;
    assert_eq!(r.body["choices"][0]["finish_reason"], "length");
    assert!(
        serde_json::from_str::<Value>(&content(&r)).is_err(),
        "cut mid-JSON: {}",
        content(&r)
    );
    assert!(content(&r).starts_with('{'));
    let r = anthropic_with(&sim, &claude(&json!({})), &[("x-sim-fault", "truncate")]).await;
    assert_eq!(r.body["stop_reason"], "max_tokens");

    let r = openai_with(
        &sim,
        &structured("gpt-sim"),
        &[("x-sim-fault", "malformed_json")],
    )
    .await;
    assert_eq!(r.body["choices"][0]["finish_reason"], "stop");
    assert!(serde_json::from_str::<Value>(&content(&r)).is_err());

    let r = openai_with(
        &sim,
        &structured("gpt-sim"),
        &[("x-sim-fault", "wrong_shape")],
    )
    .await;
    let parsed: Value = serde_json::from_str(&content(&r)).unwrap();
    assert!(parsed.is_string(), "{parsed}");
    assert!(!is_valid(&answer_schema(), &parsed));

    let tools = json!([weather_tool_openai()]);
    let with_tools = json!({"model": "gpt-sim", "tools": tools, "messages": [user("weather?")]});
    let r = openai_with(&sim, &with_tools, &[("x-sim-fault", "unknown_tool")]).await;
    let call = &r.body["choices"][0]["message"]["tool_calls"][0];
    assert_ne!(call["function"]["name"], "get_weather");
    assert_eq!(r.body["choices"][0]["finish_reason"], "tool_calls");

    let r = openai_with(&sim, &with_tools, &[("x-sim-fault", "invalid_tool_args")]).await;
    let call = &r.body["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert!(!is_valid(&weather_schema(), &args), "{args}");

    let claude_tools =
        json!({"tools": [{"name": "get_weather", "input_schema": weather_schema()}]});
    let r = anthropic_with(
        &sim,
        &claude(&claude_tools),
        &[("x-sim-fault", "invalid_tool_args")],
    )
    .await;
    let block = r.body["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap()
        .clone();
    assert!(!is_valid(&weather_schema(), &block["input"]));

    let stats = sim.stats();
    assert_eq!(stats.totals.faults, 7);
    assert_eq!(
        stats.model("gpt-sim").faults_by_kind[&FaultKind::WrongShape],
        1
    );
    assert!(stats.totals.output_tokens > 0);
}

#[tokio::test]
async fn stream_errors_break_the_stream() {
    let sim = start_default().await;
    let mut body = claude(&json!({"stream": true}));
    body["messages"] = json!([user(
        "tell me a long story about streams and errors in them"
    )]);
    let (events, _) = anthropic_stream(&sim, &body, &[("x-sim-fault", "stream_error")]).await;
    let last = events.last().unwrap();
    assert_eq!(last.event, "error");
    assert_eq!(last.json()["error"]["type"], "overloaded_error");
    assert!(events.iter().all(|e| e.event != "message_stop"));
    assert_eq!(events[0].event, "message_start");

    let mut body = structured("gpt-sim");
    body["stream"] = json!(true);
    let (events, broken) = openai_stream(&sim, &body, &[("x-sim-fault", "stream_error")]).await;
    assert!(broken, "the connection is cut");
    assert!(events.iter().all(|e| e.data != "[DONE]"));

    // Without streaming the same fault is a 500.
    let r = openai_with(
        &sim,
        &structured("gpt-sim"),
        &[("x-sim-fault", "stream_error")],
    )
    .await;
    assert_eq!(r.status, 500);
    assert_eq!(
        sim.stats().totals.faults_by_kind[&FaultKind::StreamError],
        3
    );
}

#[tokio::test]
async fn injected_rules_are_consumed_per_model() {
    let sim = start_default().await;
    sim.inject(
        FaultRule::new(FaultKind::Http500)
            .for_model("gpt-plain")
            .times(2),
    );
    let ok = openai(&sim, &structured("gpt-sim")).await;
    assert_eq!(ok.status, 200);
    for _ in 0..2 {
        assert_eq!(openai(&sim, &structured("gpt-plain")).await.status, 500);
    }
    assert_eq!(openai(&sim, &structured("gpt-plain")).await.status, 200);

    // The same over HTTP, one rule and a list.
    let resp = client()
        .post(format!("{}/sim/faults", sim.base_url()))
        .json(&json!([{"kind": "overloaded", "count": 1}, {"model": "claude-sim", "kind": "wrong_shape"}]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let pending: Value = resp.json().await.unwrap();
    assert_eq!(pending["pending"].as_array().unwrap().len(), 2);
    assert_eq!(pending["pending"][0]["kind"], "overloaded_529");
    assert_eq!(anthropic(&sim, &claude(&json!({}))).await.status, 529);
    let shaped = anthropic(&sim, &claude(&json!({}))).await;
    assert!(
        serde_json::from_str::<Value>(shaped.body["content"][0]["text"].as_str().unwrap())
            .unwrap()
            .is_string()
    );
    let bad = client()
        .post(format!("{}/sim/faults", sim.base_url()))
        .json(&json!({"kind": "gremlins"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
}

#[tokio::test]
async fn random_rates_fire_and_are_deterministic_by_seed() {
    let config = |seed| {
        let mut rates = thinkers_sim::FaultRates::new();
        rates.insert(FaultKind::Http500, 0.5);
        SimConfig::builder()
            .model(SimModel::new("flaky").profile(Profile {
                rates,
                ..Profile::default()
            }))
            .seed(seed)
            .build()
            .unwrap()
    };
    let run = |seed| async move {
        let sim = start(config(seed)).await;
        let mut statuses = Vec::new();
        for _ in 0..24 {
            statuses.push(
                openai(
                    &sim,
                    &json!({"model": "flaky", "messages": [user("same question")]}),
                )
                .await
                .status,
            );
        }
        (statuses, sim.stats().model("flaky").faults)
    };
    let (a, faults) = run(3).await;
    let (b, _) = run(3).await;
    assert_eq!(a, b);
    assert!(a.contains(&500) && a.contains(&200), "{a:?}");
    assert_eq!(faults as usize, a.iter().filter(|s| **s == 500).count());

    // Kinds that make no sense for a request are not rolled onto it.
    let mut rates = thinkers_sim::FaultRates::new();
    rates.insert(FaultKind::UnknownTool, 1.0);
    let sim = start(
        SimConfig::builder()
            .model(SimModel::new("m").profile(Profile {
                rates,
                ..Profile::default()
            }))
            .build()
            .unwrap(),
    )
    .await;
    assert_eq!(
        openai(&sim, &json!({"model": "m", "messages": [user("x")]}))
            .await
            .body["choices"][0]["finish_reason"],
        "stop"
    );
    let r = openai(
        &sim,
        &json!({"model": "m", "tools": [weather_tool_openai()], "messages": [user("x")]}),
    )
    .await;
    assert_ne!(
        r.body["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
}
