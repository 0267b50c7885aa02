//! The OpenAI Responses dialect (`/v1/responses`) and Azure OpenAI's paths.

use serde_json::{Value, json};
use thinkers_sim::{SimConfig, SimModel};

use crate::support::*;

fn lookup_tool() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "Current weather for a city",
        "parameters": weather_schema(), "strict": true})
}

async fn post(sim: &thinkers_sim::Sim, path: &str, body: &Value, auth: (&str, &str)) -> Reply {
    let resp = client()
        .post(format!("{}{path}", sim.base_url()))
        .header(auth.0, auth.1)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    Reply {
        status,
        headers,
        body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
    }
}

async fn responses(sim: &thinkers_sim::Sim, body: &Value) -> Reply {
    post(
        sim,
        "/v1/responses",
        body,
        ("authorization", "Bearer sk-test"),
    )
    .await
}

fn items_of<'a>(reply: &'a Reply, kind: &str) -> Vec<&'a Value> {
    reply.body["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == kind)
        .collect()
}

#[tokio::test]
async fn a_plain_answer_is_a_response_object() {
    let sim = start_default().await;
    let reply = responses(
        &sim,
        &json!({"model": "gpt-plain", "instructions": "Be brief.", "input": "What is a seat?"}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let body = &reply.body;
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert!(body["id"].as_str().unwrap().starts_with("resp_"));
    let messages = items_of(&reply, "message");
    let text = messages[0]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("What is a seat?"), "{text}");
    assert_eq!(messages[0]["content"][0]["type"], "output_text");
    let usage = &body["usage"];
    let (input, output) = (
        usage["input_tokens"].as_u64().unwrap(),
        usage["output_tokens"].as_u64().unwrap(),
    );
    assert!(input > 0 && output > 0);
    assert_eq!(usage["total_tokens"].as_u64().unwrap(), input + output);
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 0);
    assert!(reply.header("x-request-id").unwrap().starts_with("req_"));
}

#[tokio::test]
async fn a_tool_round_then_an_answer_and_unanswered_calls_are_refused() {
    let sim = start_default().await;
    let first = json!({"model": "gpt-plain", "input": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [lookup_tool()]});
    let reply = responses(&sim, &first).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let calls = items_of(&reply, "function_call");
    assert_eq!(calls.len(), 1);
    let call = calls[0].clone();
    assert!(call["call_id"].as_str().unwrap().starts_with("call_"));
    let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert_valid(&weather_schema(), &args);

    let mut input = first["input"].as_array().unwrap().clone();
    input.push(call.clone());
    // A call without its output is refused, naming the call.
    let refused = responses(
        &sim,
        &json!({"model": "gpt-plain", "input": input, "tools": [lookup_tool()]}),
    )
    .await;
    assert_eq!(refused.status, 400);
    let msg = refused.body["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("No tool output found for function call"),
        "{msg}"
    );

    input.push(
        json!({"type": "function_call_output", "call_id": call["call_id"], "output": "sunny, 21C"}),
    );
    let reply = responses(
        &sim,
        &json!({"model": "gpt-plain", "input": input, "tools": [lookup_tool()]}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let text = items_of(&reply, "message")[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("sunny, 21C"), "{text}");

    // An output whose call is not in the input.
    let stray = json!({"model": "gpt-plain", "input": [{"role": "user", "content": "x"},
        {"type": "function_call_output", "call_id": "call_nope", "output": "y"}]});
    let refused = responses(&sim, &stray).await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("call_nope")
    );
}

#[tokio::test]
async fn structured_output_follows_text_format() {
    let sim = start_default().await;
    let schema = json!({"type": "object", "properties": {"summary": {"type": "string"},
        "score": {"type": "integer", "minimum": 1, "maximum": 5}},
        "required": ["summary", "score"], "additionalProperties": false});
    let reply = responses(&sim, &json!({"model": "gpt-plain", "input": "Rate it.",
        "text": {"format": {"type": "json_schema", "name": "rating", "schema": schema, "strict": true}}})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let text = items_of(&reply, "message")[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_valid(&schema, &serde_json::from_str(&text).unwrap());
    let nameless = responses(
        &sim,
        &json!({"model": "gpt-plain", "input": "Rate it.",
        "text": {"format": {"type": "json_schema", "schema": schema}}}),
    )
    .await;
    assert_eq!(nameless.status, 400);
    assert_eq!(nameless.body["error"]["param"], "text.format.name");
}

#[tokio::test]
async fn reasoning_items_must_come_back_unchanged() {
    let sim = start_default().await;
    let ask = |input: Value| {
        json!({"model": "gpt-sim", "input": input, "tools": [lookup_tool()],
            "reasoning": {"effort": "low", "summary": "auto"}, "store": false,
            "include": ["reasoning.encrypted_content"]})
    };
    let user = json!({"role": "user", "content": "Weather in Oslo?"});
    let reply = responses(&sim, &ask(json!([user]))).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reasoning = items_of(&reply, "reasoning")[0].clone();
    assert!(reasoning["encrypted_content"].as_str().unwrap().len() > 20);
    assert!(
        reasoning["summary"][0]["text"]
            .as_str()
            .unwrap()
            .contains("get_weather")
    );
    assert!(
        reply.body["usage"]["output_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    let call = items_of(&reply, "function_call")[0].clone();
    let output =
        json!({"type": "function_call_output", "call_id": call["call_id"], "output": "cold"});

    let good = responses(&sim, &ask(json!([user, reasoning, call, output]))).await;
    assert_eq!(good.status, 200, "{}", good.body);

    let mut edited = reasoning.clone();
    edited["summary"][0]["text"] = json!("I changed my mind.");
    let bad = responses(&sim, &ask(json!([user, edited, call, output]))).await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not found")
    );

    // Without `include` the item carries no encrypted content; on a model without reasoning,
    // `include` and an effort are refused.
    let plain = responses(&sim, &json!({"model": "gpt-sim", "input": "hi"})).await;
    assert!(
        items_of(&plain, "reasoning")[0]
            .get("encrypted_content")
            .is_none()
    );
    let refused = responses(
        &sim,
        &json!({"model": "gpt-plain", "input": "hi",
        "reasoning": {"effort": "high"}}),
    )
    .await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["error"]["param"], "reasoning.effort");
}

#[tokio::test]
async fn streams_typed_events_ending_in_response_completed() {
    let sim = start_default().await;
    let resp = client()
        .post(format!("{}/v1/responses", sim.base_url()))
        .bearer_auth("sk-test")
        .json(
            &json!({"model": "gpt-sim", "input": "Weather in Rome?", "tools": [lookup_tool()],
            "stream": true, "include": ["reasoning.encrypted_content"]}),
        )
        .send()
        .await
        .unwrap();
    let (events, broken) = events(resp).await;
    assert!(!broken);
    let kinds: Vec<String> = events.iter().map(|e| e.event.clone()).collect();
    for (e, kind) in events.iter().zip(&kinds) {
        assert_eq!(e.json()["type"], kind.as_str());
    }
    assert_eq!(kinds[0], "response.created");
    assert_eq!(kinds.last().unwrap(), "response.completed");
    for needed in [
        "response.output_item.added",
        "response.reasoning_summary_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ] {
        assert!(
            kinds.iter().any(|k| k == needed),
            "{needed} missing from {kinds:?}"
        );
    }
    let seq: Vec<u64> = events
        .iter()
        .map(|e| e.json()["sequence_number"].as_u64().unwrap())
        .collect();
    assert_eq!(seq, (0..events.len() as u64).collect::<Vec<_>>());
    let args: String = events
        .iter()
        .filter(|e| e.event == "response.function_call_arguments.delta")
        .map(|e| e.json()["delta"].as_str().unwrap().to_owned())
        .collect();
    let done = events.last().unwrap().json();
    let call = done["response"]["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap()
        .clone();
    assert_eq!(call["arguments"].as_str().unwrap(), args);
    assert!(done["response"]["usage"]["output_tokens"].as_u64().unwrap() > 0);

    // Streamed and whole answers are the same answer.
    let whole = responses(
        &sim,
        &json!({"model": "gpt-sim", "input": "Weather in Rome?",
        "tools": [lookup_tool()], "include": ["reasoning.encrypted_content"]}),
    )
    .await;
    assert_eq!(whole.body["output"], done["response"]["output"]);
}

#[tokio::test]
async fn limits_answer_openais_429_and_faults_use_openais_shapes() {
    let sim = start(
        SimConfig::builder()
            .model(SimModel::new("gpt-small").rpm(1))
            .build()
            .unwrap(),
    )
    .await;
    let body = json!({"model": "gpt-small", "input": "hi"});
    let ok = responses(&sim, &body).await;
    assert_eq!(ok.status, 200);
    assert_eq!(
        ok.header("x-ratelimit-limit-requests").as_deref(),
        Some("1")
    );
    let limited = responses(&sim, &body).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.body["error"]["code"], "rate_limit_exceeded");
    assert_eq!(limited.body["error"]["type"], "requests");
    assert!(limited.header("retry-after").is_some() && limited.header("retry-after-ms").is_some());
    assert_eq!(
        limited.header("x-ratelimit-remaining-requests").as_deref(),
        Some("0")
    );

    let sim = start_default().await;
    let resp = client()
        .post(format!("{}/v1/responses", sim.base_url()))
        .bearer_auth("sk-test")
        .header("x-sim-fault", "stream_error")
        .json(&json!({"model": "gpt-plain", "input": "hi", "stream": true}))
        .send()
        .await
        .unwrap();
    let (events, _) = events(resp).await;
    let last = events.last().unwrap();
    assert_eq!(last.event, "error");
    assert_eq!(last.json()["code"], "server_error");
    assert!(events.iter().all(|e| e.event != "response.completed"));
    let unauthenticated = post(&sim, "/v1/responses", &body, ("x-other", "1")).await;
    assert_eq!(unauthenticated.status, 401);
    let previous = responses(
        &sim,
        &json!({"model": "gpt-plain", "input": "hi",
        "previous_response_id": "resp_x"}),
    )
    .await;
    assert_eq!(previous.status, 400);
}

#[tokio::test]
async fn azure_paths_take_the_api_key_header_and_a_version() {
    let sim = start_default().await;
    let chat = json!({"messages": [{"role": "user", "content": "hi"}]});
    let key = ("api-key", "azure-key");
    let reply = post(
        &sim,
        "/openai/deployments/gpt-plain/chat/completions?api-version=2024-10-21",
        &chat,
        key,
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["model"], "gpt-plain");
    assert_eq!(reply.body["object"], "chat.completion");
    let unversioned = post(
        &sim,
        "/openai/deployments/gpt-plain/chat/completions",
        &chat,
        key,
    )
    .await;
    assert_eq!(unversioned.status, 404);
    assert_eq!(unversioned.body["error"]["message"], "Resource not found");
    let keyless = post(
        &sim,
        "/openai/deployments/gpt-plain/chat/completions?api-version=2024-10-21",
        &chat,
        ("x-other", "1"),
    )
    .await;
    assert_eq!(keyless.status, 401);
    let unknown = post(
        &sim,
        "/openai/deployments/nope/chat/completions?api-version=2024-10-21",
        &chat,
        key,
    )
    .await;
    assert_eq!(unknown.status, 404);

    let resp = json!({"model": "gpt-plain", "input": "hi"});
    let reply = post(
        &sim,
        "/openai/responses?api-version=2025-04-01-preview",
        &resp,
        key,
    )
    .await;
    assert_eq!(
        (reply.status, reply.body["object"].clone()),
        (200, json!("response"))
    );
    let reply = post(&sim, "/openai/v1/responses", &resp, key).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reply = post(
        &sim,
        "/openai/v1/chat/completions",
        &json!({"model": "gpt-plain",
        "messages": [{"role": "user", "content": "hi"}]}),
        ("authorization", "Bearer tok"),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    // The plain OpenAI paths still want a bearer token.
    let reply = post(&sim, "/v1/responses", &resp, key).await;
    assert_eq!(reply.status, 401);
}
