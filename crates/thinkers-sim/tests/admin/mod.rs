//! The control surface: stats, reset, request log, model list; catalog configuration; `serve`.

use std::net::SocketAddr;

use serde_json::{Value, json};
use thinkers_sim::{SimConfig, StatsSnapshot};

use crate::support::*;

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

const CATALOG: &str = r#"
[providers.sim-openai]
dialect = "openai"
base_url = "{sim}/v1"
api_key_env = "THINKERS_SIM_KEY"

[[entries]]
id = "sim-small"
provider = "sim-openai"
model = "sim-small"
grade = "small"
tpm = 500000
rpm = 1000
thinking = false
native_tools = true

[entries.sim]
latency_ms = [0, 2]
tool_rounds = 2
"#;

#[tokio::test]
async fn stats_reset_and_request_log_over_http() {
    let mut config = SimConfig::from_catalog_toml(CATALOG).unwrap();
    config.log_bodies = true;
    let sim = start(config).await;
    let body = json!({"model": "sim-small", "messages": [user("count me")]});
    assert_eq!(openai(&sim, &body).await.status, 200);
    assert_eq!(
        anthropic(
            &sim,
            &json!({"model": "sim-small", "max_tokens": 10, "messages": [user("me too")]})
        )
        .await
        .status,
        200
    );
    assert_eq!(
        openai(
            &sim,
            &json!({"model": "not-in-catalog", "messages": [user("x")]})
        )
        .await
        .status,
        404
    );
    assert_eq!(
        openai(&sim, &json!({"model": "sim-small", "messages": "nope"}))
            .await
            .status,
        400
    );

    let http: StatsSnapshot = client()
        .get(format!("{}/sim/stats", sim.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(http, sim.stats());
    let small = http.model("sim-small");
    assert_eq!(small.requests, 3);
    assert_eq!(small.invalid, 1);
    assert!(small.input_tokens > 0 && small.output_tokens > 0);
    assert_eq!(http.totals.requests, 3);

    let log: Value = client()
        .get(format!("{}/sim/requests", sim.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let log = log.as_array().unwrap();
    assert_eq!(log.len(), 2, "only decoded requests are logged");
    assert_eq!(log[0]["endpoint"], "/v1/chat/completions");
    assert_eq!(log[1]["endpoint"], "/v1/messages");
    assert_eq!(log[0]["model"], "sim-small");
    assert_eq!(log[0]["body"], body);
    assert!(log[0]["input_tokens"].as_u64().unwrap() > 0);
    assert!(chrono::DateTime::parse_from_rfc3339(log[0]["timestamp"].as_str().unwrap()).is_ok());
    assert_eq!(sim.requests().len(), 2);

    let reset = client()
        .post(format!("{}/sim/reset", sim.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status().as_u16(), 200);
    assert_eq!(sim.stats(), StatsSnapshot::default());
    assert!(sim.requests().is_empty());
}

#[tokio::test]
async fn catalog_profiles_drive_tool_rounds() {
    let sim = start(SimConfig::from_catalog_toml(CATALOG).unwrap()).await;
    let tools = json!([weather_tool_openai()]);
    let mut messages = vec![user("weather?")];
    for round in 0..2 {
        let r = openai(
            &sim,
            &json!({"model": "sim-small", "tools": tools, "messages": messages}),
        )
        .await;
        assert_eq!(
            r.body["choices"][0]["finish_reason"], "tool_calls",
            "round {round}"
        );
        let message = r.body["choices"][0]["message"].clone();
        let id = message["tool_calls"][0]["id"].clone();
        messages.push(message);
        messages.push(
            json!({"role": "tool", "tool_call_id": id, "content": format!("result {round}")}),
        );
    }
    let r = openai(
        &sim,
        &json!({"model": "sim-small", "tools": tools, "messages": messages}),
    )
    .await;
    assert_eq!(r.body["choices"][0]["finish_reason"], "stop");
    assert!(
        r.body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("result 1")
    );
}

#[tokio::test]
async fn model_list_in_both_shapes() {
    let sim = start(SimConfig::from_catalog_toml(CATALOG).unwrap()).await;
    let openai_list: Value = client()
        .get(format!("{}/models", sim.openai_base_url()))
        .bearer_auth("k")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(openai_list["object"], "list");
    assert_eq!(openai_list["data"][0]["id"], "sim-small");
    assert_eq!(openai_list["data"][0]["object"], "model");
    let anthropic_list: Value = client()
        .get(format!("{}/v1/models", sim.base_url()))
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(anthropic_list["data"][0]["type"], "model");
    assert_eq!(anthropic_list["has_more"], false);
    let missing = client()
        .get(format!("{}/v2/whatever", sim.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
}

#[tokio::test]
async fn serve_runs_until_its_shutdown_signal() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(thinkers_sim::serve_with_shutdown(
        SimConfig::default(),
        addr,
        async {
            let _ = stopped.await;
        },
    ));
    let url = format!("http://{addr}/sim/stats");
    let mut up = false;
    for _ in 0..50 {
        if client().get(&url).send().await.is_ok() {
            up = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(up, "the server answers");
    stop.send(()).unwrap();
    let result = tokio::time::timeout(std::time::Duration::from_secs(10), server)
        .await
        .unwrap()
        .unwrap();
    assert!(result.is_ok());
    // Binding a taken port fails with a typed error.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = thinkers_sim::serve(SimConfig::default(), taken.local_addr().unwrap())
        .await
        .unwrap_err();
    assert!(matches!(err, thinkers_sim::SimError::Bind { .. }));
}
