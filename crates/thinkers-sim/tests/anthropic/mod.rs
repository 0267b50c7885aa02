//! The Anthropic Messages dialect.

use serde_json::{Value, json};

use crate::support::*;

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn weather_tool() -> Value {
    json!({"name": "get_weather", "description": "Current weather", "input_schema": weather_schema()})
}

fn thinking_on() -> Value {
    json!({"type": "enabled", "budget_tokens": 2048})
}

#[tokio::test]
async fn plain_message_has_the_documented_shape() {
    let sim = start_default().await;
    let reply = anthropic(
        &sim,
        &json!({"model": "claude-sim", "max_tokens": 1024,
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [user("What is admission?")]}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let body = &reply.body;
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], "claude-sim");
    assert!(body["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(body["stop_reason"], "end_turn");
    assert!(body["stop_sequence"].is_null());
    let content = body["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    assert_eq!(content[0]["type"], "text");
    assert!(
        content[0]["text"]
            .as_str()
            .unwrap()
            .contains("What is admission?")
    );
    let usage = &body["usage"];
    assert!(usage["input_tokens"].as_u64().unwrap() > 0);
    assert!(usage["output_tokens"].as_u64().unwrap() > 0);
    assert_eq!(usage["cache_creation_input_tokens"], 0);
    assert_eq!(usage["cache_read_input_tokens"], 0);
    assert!(reply.header("request-id").unwrap().starts_with("req_"));
}

#[tokio::test]
async fn headers_and_required_fields_are_checked() {
    let sim = start_default().await;
    let resp = client()
        .post(format!("{}/v1/messages", sim.base_url()))
        .header("anthropic-version", "2023-06-01")
        .json(&json!({"model": "claude-sim", "max_tokens": 10, "messages": [user("hi")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "authentication_error");
    assert!(body["request_id"].as_str().unwrap().starts_with("req_"));

    let resp = client()
        .post(format!("{}/v1/messages", sim.base_url()))
        .header("x-api-key", "k")
        .json(&json!({"model": "claude-sim", "max_tokens": 10, "messages": [user("hi")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);

    // Current official SDKs send the key as a bearer token, which the API accepts.
    let bearer = client()
        .post(format!("{}/v1/messages", sim.base_url()))
        .bearer_auth("sk-ant-test")
        .header("anthropic-version", "2023-06-01")
        .json(&json!({"model": "claude-sim", "max_tokens": 10, "messages": [user("hi")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(bearer.status().as_u16(), 200);

    let missing = anthropic(
        &sim,
        &json!({"model": "claude-sim", "messages": [user("hi")]}),
    )
    .await;
    assert_eq!(missing.status, 400);
    assert_eq!(missing.body["error"]["type"], "invalid_request_error");
    assert!(
        missing.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_tokens")
    );

    let unknown = anthropic(
        &sim,
        &json!({"model": "claude-nope", "max_tokens": 10, "messages": [user("hi")]}),
    )
    .await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["error"]["type"], "not_found_error");
}

#[tokio::test]
async fn tool_use_round_trip() {
    let sim = start_default().await;
    let tools = json!([weather_tool()]);
    let first = anthropic(
        &sim,
        &json!({"model": "claude-sim", "max_tokens": 1024, "tools": tools,
        "messages": [user("Weather in Oslo?")]}),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.body["stop_reason"], "tool_use");
    let blocks = first.body["content"].as_array().unwrap();
    let call = blocks.iter().find(|b| b["type"] == "tool_use").unwrap();
    assert!(call["id"].as_str().unwrap().starts_with("toolu_"));
    assert_eq!(call["name"], "get_weather");
    assert_valid(&weather_schema(), &call["input"]);

    let follow = json!({"model": "claude-sim", "max_tokens": 1024, "tools": tools, "messages": [
        user("Weather in Oslo?"),
        {"role": "assistant", "content": blocks},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": [{"type": "text", "text": "minus 3 and snowing"}]}]}
    ]});
    let second = anthropic(&sim, &follow).await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert_eq!(second.body["stop_reason"], "end_turn");
    let text = second.body["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("minus 3 and snowing"), "{text}");

    // A tool_use without its result, a stray result, and text before results are refused.
    let unanswered = json!({"model": "claude-sim", "max_tokens": 100, "tools": tools, "messages": [
        user("x"), {"role": "assistant", "content": blocks}, user("and?")]});
    let reply = anthropic(&sim, &unanswered).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tool_result")
    );
    let stray = json!({"model": "claude-sim", "max_tokens": 100, "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "r"}]}]});
    assert_eq!(anthropic(&sim, &stray).await.status, 400);
    let text_first = json!({"model": "claude-sim", "max_tokens": 100, "tools": tools, "messages": [
        user("x"), {"role": "assistant", "content": blocks},
        {"role": "user", "content": [{"type": "text", "text": "here"}, {"type": "tool_result", "tool_use_id": call["id"], "content": "r"}]}]});
    assert_eq!(anthropic(&sim, &text_first).await.status, 400);
}

#[tokio::test]
async fn thinking_blocks_are_signed_and_verified() {
    let sim = start_default().await;
    let tools = json!([weather_tool()]);
    let first = anthropic(
        &sim,
        &json!({"model": "claude-sim", "max_tokens": 4096, "tools": tools,
        "thinking": thinking_on(), "messages": [user("Weather in Lima?")]}),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let blocks = first.body["content"].as_array().unwrap().clone();
    assert_eq!(blocks[0]["type"], "thinking");
    assert!(!blocks[0]["thinking"].as_str().unwrap().is_empty());
    assert!(!blocks[0]["signature"].as_str().unwrap().is_empty());
    assert_eq!(blocks[1]["type"], "tool_use");
    let call_id = blocks[1]["id"].clone();
    let conversation = |assistant: Value| {
        json!({"model": "claude-sim", "max_tokens": 4096, "tools": tools, "thinking": thinking_on(),
            "messages": [user("Weather in Lima?"), {"role": "assistant", "content": assistant},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "22C"}]}]})
    };
    let ok = anthropic(&sim, &conversation(json!(blocks))).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["content"][0]["type"], "thinking");
    assert_eq!(ok.body["stop_reason"], "end_turn");

    let mut edited = blocks.clone();
    edited[0]["thinking"] = json!("I changed my mind.");
    let reply = anthropic(&sim, &conversation(json!(edited))).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("signature")
    );

    let dropped = json!([blocks[1]]);
    let reply = anthropic(&sim, &conversation(dropped)).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("thinking")
    );

    // A different seed signs differently: its blocks do not verify here.
    let other = start(
        thinkers_sim::SimConfig::builder()
            .model(thinkers_sim::SimModel::new("claude-sim").thinking(true))
            .seed(1)
            .build()
            .unwrap(),
    )
    .await;
    let foreign = anthropic(
        &other,
        &json!({"model": "claude-sim", "max_tokens": 4096, "tools": tools,
        "thinking": thinking_on(), "messages": [user("Weather in Lima?")]}),
    )
    .await;
    let foreign_blocks = foreign.body["content"].clone();
    let mut convo = conversation(foreign_blocks.clone());
    convo["messages"][2]["content"][0]["tool_use_id"] = foreign_blocks[1]["id"].clone();
    assert_eq!(anthropic(&sim, &convo).await.status, 400);
}

#[tokio::test]
async fn thinking_rules_match_the_real_api() {
    let sim = start_default().await;
    let tools = json!([weather_tool()]);
    let forced = anthropic(
        &sim,
        &json!({"model": "claude-sim", "max_tokens": 4096, "tools": tools,
        "tool_choice": {"type": "any"}, "thinking": thinking_on(), "messages": [user("x")]}),
    )
    .await;
    assert_eq!(forced.status, 400);
    let unsupported = anthropic(
        &sim,
        &json!({"model": "text-sim", "max_tokens": 4096,
        "thinking": thinking_on(), "messages": [user("x")]}),
    )
    .await;
    assert_eq!(unsupported.status, 400);
    let small_budget = anthropic(
        &sim,
        &json!({"model": "claude-sim", "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 100}, "messages": [user("x")]}),
    )
    .await;
    assert_eq!(small_budget.status, 400);
    let over_max = anthropic(
        &sim,
        &json!({"model": "claude-sim", "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 4096}, "messages": [user("x")]}),
    )
    .await;
    assert_eq!(over_max.status, 400);
    let adaptive = anthropic(
        &sim,
        &json!({"model": "claude-sim", "max_tokens": 4096,
        "thinking": {"type": "adaptive"}, "messages": [user("x")]}),
    )
    .await;
    assert_eq!(adaptive.status, 200);
    assert_eq!(adaptive.body["content"][0]["type"], "thinking");
    let named = anthropic(
        &sim,
        &json!({"model": "claude-sim", "max_tokens": 1024, "tools": tools,
        "tool_choice": {"type": "tool", "name": "get_weather"}, "messages": [user("x")]}),
    )
    .await;
    assert_eq!(named.body["content"][0]["name"], "get_weather");
}

#[tokio::test]
async fn streaming_rebuilds_the_plain_message() {
    let sim = start_default().await;
    let request = json!({"model": "claude-sim", "max_tokens": 4096, "tools": [weather_tool()],
        "thinking": thinking_on(), "messages": [user("Weather in Cairo?")]});
    let plain = anthropic(&sim, &request).await.body;
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let (events, broken) = anthropic_stream(&sim, &streamed, &[]).await;
    assert!(!broken);
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names[0], "message_start");
    assert_eq!(names[1], "content_block_start");
    assert_eq!(names[2], "ping");
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
    for e in &events {
        assert_eq!(e.json()["type"], e.event.as_str());
    }
    let start = events[0].json();
    assert_eq!(start["message"]["content"], json!([]));
    assert!(start["message"]["stop_reason"].is_null());
    assert_eq!(
        start["message"]["usage"]["input_tokens"],
        plain["usage"]["input_tokens"]
    );

    let mut blocks: Vec<Value> = Vec::new();
    let mut partial: Vec<String> = Vec::new();
    for e in &events {
        let data = e.json();
        match e.event.as_str() {
            "content_block_start" => {
                assert_eq!(data["index"].as_u64().unwrap() as usize, blocks.len());
                blocks.push(data["content_block"].clone());
                partial.push(String::new());
            }
            "content_block_delta" => {
                let i = data["index"].as_u64().unwrap() as usize;
                let delta = &data["delta"];
                match delta["type"].as_str().unwrap() {
                    "thinking_delta" => {
                        let t = format!(
                            "{}{}",
                            blocks[i]["thinking"].as_str().unwrap(),
                            delta["thinking"].as_str().unwrap()
                        );
                        blocks[i]["thinking"] = json!(t);
                    }
                    "signature_delta" => blocks[i]["signature"] = delta["signature"].clone(),
                    "text_delta" => {
                        let t = format!(
                            "{}{}",
                            blocks[i]["text"].as_str().unwrap(),
                            delta["text"].as_str().unwrap()
                        );
                        blocks[i]["text"] = json!(t);
                    }
                    "input_json_delta" => {
                        partial[i].push_str(delta["partial_json"].as_str().unwrap());
                    }
                    other => panic!("unexpected delta {other}"),
                }
            }
            "content_block_stop" => {
                let i = data["index"].as_u64().unwrap() as usize;
                if blocks[i]["type"] == "tool_use" {
                    blocks[i]["input"] = serde_json::from_str(&partial[i]).unwrap();
                }
            }
            "message_delta" => {
                assert_eq!(data["delta"]["stop_reason"], plain["stop_reason"]);
                assert_eq!(
                    data["usage"]["output_tokens"],
                    plain["usage"]["output_tokens"]
                );
            }
            _ => {}
        }
    }
    assert_eq!(json!(blocks), plain["content"]);
}

#[tokio::test]
async fn structured_output_config_is_followed() {
    let sim = start_default().await;
    let schema = json!({"type": "object", "required": ["title", "year"], "additionalProperties": false,
        "properties": {"title": {"type": "string"}, "year": {"type": "integer", "minimum": 1900, "maximum": 2100}}});
    let reply = anthropic(
        &sim,
        &json!({"model": "claude-sim", "max_tokens": 1024,
        "output_config": {"format": {"type": "json_schema", "schema": schema}},
        "messages": [user("Name a film")]}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let value: Value =
        serde_json::from_str(reply.body["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_valid(&schema, &value);
}

#[tokio::test]
async fn count_tokens_uses_the_sims_own_count() {
    let sim = start_default().await;
    let body = json!({"model": "claude-sim", "messages": [user("count these words please")]});
    let resp = client()
        .post(format!("{}/v1/messages/count_tokens", sim.base_url()))
        .header("x-api-key", "k")
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let counted: Value = resp.json().await.unwrap();
    let mut full = body.clone();
    full["max_tokens"] = json!(10);
    let answered = anthropic(&sim, &full).await;
    assert_eq!(
        counted["input_tokens"],
        answered.body["usage"]["input_tokens"]
    );
    assert_eq!(
        sim.stats().totals.requests,
        1,
        "counting is not a model request"
    );
}
