//! The OpenAI Chat Completions dialect.

use serde_json::{Value, json};

use crate::support::*;

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

#[tokio::test]
async fn plain_answer_has_the_documented_shape() {
    let sim = start_default().await;
    let reply = openai(
        &sim,
        &json!({"model": "gpt-plain", "messages": [
            {"role": "system", "content": "Be brief."},
            user("What is a seat in the dispatcher?")
        ]}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_openai_schema("CreateChatCompletionResponse", &reply.body);
    let body = &reply.body;
    assert_eq!(body["object"], "chat.completion");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(body["model"], "gpt-plain");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "stop");
    assert_eq!(choice["message"]["role"], "assistant");
    assert!(choice["message"]["refusal"].is_null());
    assert!(choice["logprobs"].is_null());
    assert!(choice["message"].get("tool_calls").is_none());
    let content = choice["message"]["content"].as_str().unwrap();
    assert!(
        content.contains("What is a seat in the dispatcher?"),
        "{content}"
    );
    let usage = &body["usage"];
    let prompt = usage["prompt_tokens"].as_u64().unwrap();
    let completion = usage["completion_tokens"].as_u64().unwrap();
    assert!(prompt > 0 && completion > 0);
    assert_eq!(usage["total_tokens"].as_u64().unwrap(), prompt + completion);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 0);
    assert!(reply.header("x-request-id").unwrap().starts_with("req_"));
    assert!(reply.header("x-ratelimit-limit-requests").is_none());
}

#[tokio::test]
async fn missing_key_and_unknown_model_get_real_errors() {
    let sim = start_default().await;
    let resp = client()
        .post(format!("{}/chat/completions", sim.openai_base_url()))
        .json(&json!({"model": "gpt-sim", "messages": [user("hi")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let body: Value = resp.json().await.unwrap();
    assert_openai_schema("ErrorResponse", &body);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("API key")
    );

    let reply = openai(
        &sim,
        &json!({"model": "gpt-nope", "messages": [user("hi")]}),
    )
    .await;
    assert_eq!(reply.status, 404);
    assert_openai_schema("ErrorResponse", &reply.body);
    assert_eq!(reply.body["error"]["code"], "model_not_found");
    assert_eq!(reply.body["error"]["type"], "invalid_request_error");
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gpt-nope")
    );

    let reply = openai(&sim, &json!({"model": "gpt-sim", "messages": []})).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.body["error"]["param"], "messages");
}

#[tokio::test]
async fn tool_round_then_final_answer_quoting_the_result() {
    let sim = start(
        thinkers_sim::SimConfig::builder()
            .model(
                thinkers_sim::SimModel::new("gpt-sim").profile(thinkers_sim::Profile {
                    parallel_tool_calls: 2,
                    ..Default::default()
                }),
            )
            .build()
            .unwrap(),
    )
    .await;
    let tools = json!([weather_tool_openai(), time_tool_openai()]);
    let first = openai(
        &sim,
        &json!({"model": "gpt-sim", "tools": tools, "messages": [user("Weather in Paris?")]}),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_openai_schema("CreateChatCompletionResponse", &first.body);
    let choice = &first.body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert!(choice["message"]["content"].is_null());
    let calls = choice["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "two distinct tools: {calls:?}");
    let names: Vec<&str> = calls
        .iter()
        .map(|c| c["function"]["name"].as_str().unwrap())
        .collect();
    assert_ne!(names[0], names[1]);
    for call in calls {
        assert!(call["id"].as_str().unwrap().starts_with("call_"));
        assert_eq!(call["type"], "function");
        let args: Value =
            serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
        let schema = if call["function"]["name"] == "get_weather" {
            weather_schema()
        } else {
            time_tool_openai()["function"]["parameters"].clone()
        };
        assert_valid(&schema, &args);
    }
    let mut messages = vec![user("Weather in Paris?"), choice["message"].clone()];
    for call in calls {
        messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": format!("result for {}: 18C and sunny", call["function"]["name"])}));
    }
    let second = openai(
        &sim,
        &json!({"model": "gpt-sim", "tools": tools, "messages": messages}),
    )
    .await;
    assert_eq!(second.status, 200, "{}", second.body);
    let choice = &second.body["choices"][0];
    assert_eq!(choice["finish_reason"], "stop");
    let content = choice["message"]["content"].as_str().unwrap();
    assert!(content.contains("18C and sunny"), "{content}");
}

#[tokio::test]
async fn unanswered_or_stray_tool_calls_are_refused() {
    let sim = start_default().await;
    let call = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]});
    let reply = openai(
        &sim,
        &json!({"model": "gpt-sim", "tools": [weather_tool_openai()], "messages": [user("hi"), call, user("well?")]}),
    )
    .await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("call_1")
    );
    let reply = openai(
        &sim,
        &json!({"model": "gpt-sim", "messages": [user("hi"), {"role": "tool", "tool_call_id": "call_9", "content": "x"}]}),
    )
    .await;
    assert_eq!(reply.status, 400);
    let reply = openai(
        &sim,
        &json!({"model": "gpt-sim", "tool_choice": "required", "messages": [user("hi")]}),
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.body["error"]["param"], "tool_choice");
}

#[tokio::test]
async fn forced_and_disabled_tool_choice_are_honoured() {
    let sim = start_default().await;
    let tools = json!([weather_tool_openai(), time_tool_openai()]);
    let named = openai(
        &sim,
        &json!({"model": "gpt-sim", "tools": tools,
        "tool_choice": {"type": "function", "function": {"name": "get_time"}},
        "messages": [user("x")]}),
    )
    .await;
    let calls = named.body["choices"][0]["message"]["tool_calls"]
        .as_array()
        .unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["function"]["name"], "get_time");
    let none = openai(
        &sim,
        &json!({"model": "gpt-sim", "tools": tools, "tool_choice": "none",
        "messages": [user("x")]}),
    )
    .await;
    assert_eq!(none.body["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn structured_answers_follow_the_requested_schema() {
    let sim = start_default().await;
    let schema = json!({"type": "object", "additionalProperties": false,
    "required": ["summary", "confidence", "sources"],
    "properties": {
        "summary": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "sources": {"type": "array", "items": {"type": "string", "format": "uri"}, "minItems": 1}
    }});
    let reply = openai(&sim, &json!({"model": "gpt-sim", "messages": [user("Summarise the report")],
        "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "strict": true, "schema": schema}}})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let content = reply.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    let value: Value = serde_json::from_str(content).unwrap();
    assert_valid(&schema, &value);
    assert!(
        value["summary"]
            .as_str()
            .unwrap()
            .contains("Summarise the report")
    );

    let json_mode = openai(
        &sim,
        &json!({"model": "gpt-sim", "messages": [user("Reply in JSON please")],
        "response_format": {"type": "json_object"}}),
    )
    .await;
    let content = json_mode.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    assert!(serde_json::from_str::<Value>(content).unwrap().is_object());
    let refused = openai(
        &sim,
        &json!({"model": "gpt-sim", "messages": [user("no keyword here")],
        "response_format": {"type": "json_object"}}),
    )
    .await;
    assert_eq!(refused.status, 400);
}

/// A model whose profile refuses `json_schema` answers it as llama-cpp-python's server does
/// (HTTP 500, the validation error naming `response_format` on the message's second line) and
/// answers a `json_object` with a `schema` beside its type to that schema, no "json" needed.
#[tokio::test]
async fn a_refused_response_format_is_a_500_naming_it_and_json_object_takes_a_schema() {
    let sim = start(
        thinkers_sim::SimConfig::builder()
            .log_bodies(true)
            .model(
                thinkers_sim::SimModel::new("gpt-sim").profile(thinkers_sim::Profile {
                    refused_formats: vec!["json_schema".into()],
                    ..Default::default()
                }),
            )
            .build()
            .unwrap(),
    )
    .await;
    let schema = json!({"type": "object", "additionalProperties": false,
        "required": ["urgent"], "properties": {"urgent": {"type": "boolean"}}});
    let refused = openai(&sim, &json!({"model": "gpt-sim", "messages": [user("Classify")],
        "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}}))
    .await;
    assert_eq!(refused.status, 500, "{}", refused.body);
    let error = &refused.body["error"];
    assert_eq!(error["type"], "internal_server_error");
    assert!(error["param"].is_null());
    let message = error["message"].as_str().unwrap();
    let mut lines = message.lines();
    assert_eq!(lines.next(), Some("1 validation error:"));
    let second = lines.next().unwrap();
    assert!(
        second.contains("'response_format'") && second.contains("'text' or 'json_object'"),
        "{message}"
    );
    assert_eq!(sim.requests().len(), 1, "the refused request is logged");

    let answered = openai(
        &sim,
        &json!({"model": "gpt-sim", "messages": [user("Classify")],
        "response_format": {"type": "json_object", "schema": schema}}),
    )
    .await;
    assert_eq!(answered.status, 200, "{}", answered.body);
    let content = answered.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    assert_valid(&schema, &serde_json::from_str(content).unwrap());
    assert_eq!(sim.stats().model("gpt-sim").requests, 2);
}

#[tokio::test]
async fn streaming_matches_the_plain_answer_and_ends_with_usage_and_done() {
    let sim = start_default().await;
    let tools = json!([weather_tool_openai()]);
    let request =
        json!({"model": "gpt-sim", "tools": tools, "messages": [user("Weather in Rome?")]});
    let plain = openai(&sim, &request).await.body;
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let (events, broken) = openai_stream(&sim, &streamed, &[]).await;
    assert!(!broken);
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(Sse::json).collect();
    for chunk in &chunks {
        assert_openai_schema("CreateChatCompletionStreamResponse", chunk);
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["id"], chunks[0]["id"]);
    }
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"], plain["usage"]);
    for chunk in &chunks[..chunks.len() - 1] {
        assert!(chunk["usage"].is_null() && chunk.get("usage").is_some());
    }
    let finish = &chunks[chunks.len() - 2]["choices"][0];
    assert_eq!(finish["finish_reason"], "tool_calls");
    // Reassemble the tool calls from the deltas.
    let mut id = String::new();
    let mut name = String::new();
    let mut args = String::new();
    for chunk in &chunks {
        for call in chunk["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            assert_eq!(call["index"], 0);
            if let Some(i) = call["id"].as_str() {
                id = i.to_owned();
                name = call["function"]["name"].as_str().unwrap().to_owned();
            }
            args.push_str(call["function"]["arguments"].as_str().unwrap_or(""));
        }
    }
    let expected = &plain["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(id, expected["id"]);
    assert_eq!(name, expected["function"]["name"]);
    assert_eq!(args, expected["function"]["arguments"]);

    // Text answers stream as content pieces that add up to the plain answer.
    let text_request = json!({"model": "gpt-sim", "messages": [user("Tell me about streams")]});
    let plain_text =
        openai(&sim, &text_request).await.body["choices"][0]["message"]["content"].clone();
    let mut streamed = text_request.clone();
    streamed["stream"] = json!(true);
    let (events, _) = openai_stream(&sim, &streamed, &[]).await;
    let text: String = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| {
            e.json()["choices"][0]["delta"]["content"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert_eq!(json!(text), plain_text);
    assert!(
        events
            .iter()
            .filter(|e| e.data != "[DONE]")
            .all(|e| e.json().get("usage").is_none())
    );
}

#[tokio::test]
async fn logprobs_cover_the_content_and_list_enum_alternatives() {
    let sim = start_default().await;
    let schema = json!({"type": "object", "required": ["choice"], "additionalProperties": false,
        "properties": {"choice": {"type": "string", "enum": ["option_alpha", "option_beta", "option_gamma"]}}});
    let reply = openai(&sim, &json!({"model": "gpt-plain", "messages": [user("Pick one")],
        "logprobs": true, "top_logprobs": 3,
        "response_format": {"type": "json_schema", "json_schema": {"name": "decision", "schema": schema}}})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_openai_schema("CreateChatCompletionResponse", &reply.body);
    let choice = &reply.body["choices"][0];
    let content = choice["message"]["content"].as_str().unwrap();
    let entries = choice["logprobs"]["content"].as_array().unwrap();
    let rebuilt: String = entries
        .iter()
        .map(|e| e["token"].as_str().unwrap())
        .collect();
    assert_eq!(rebuilt, content);
    let picked: Value = serde_json::from_str(content).unwrap();
    let picked = picked["choice"].as_str().unwrap();
    let entry = entries.iter().find(|e| e["token"] == picked).unwrap();
    let top = entry["top_logprobs"].as_array().unwrap();
    assert_eq!(top.len(), 3);
    assert_eq!(top[0]["token"], picked);
    assert!(top.iter().all(|t| t["logprob"].as_f64().unwrap() <= 0.0));
    let alternatives: Vec<&str> = top[1..]
        .iter()
        .map(|t| t["token"].as_str().unwrap())
        .collect();
    assert!(
        alternatives
            .iter()
            .all(|a| a.starts_with("option_") && *a != picked),
        "{alternatives:?}"
    );
    let bad = openai(
        &sim,
        &json!({"model": "gpt-plain", "messages": [user("x")], "top_logprobs": 2}),
    )
    .await;
    assert_eq!(bad.status, 400);
}

#[tokio::test]
async fn reasoning_effort_counts_reasoning_tokens_on_thinking_models_only() {
    let sim = start_default().await;
    let reply = openai(
        &sim,
        &json!({"model": "gpt-sim", "reasoning_effort": "high",
        "messages": [user("Think hard")]}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let usage = &reply.body["usage"];
    let reasoning = usage["completion_tokens_details"]["reasoning_tokens"]
        .as_u64()
        .unwrap();
    assert!(reasoning > 0);
    assert!(usage["completion_tokens"].as_u64().unwrap() > reasoning);
    let refused = openai(
        &sim,
        &json!({"model": "gpt-plain", "reasoning_effort": "high",
        "messages": [user("Think hard")]}),
    )
    .await;
    assert_eq!(refused.status, 400);
    assert_eq!(refused.body["error"]["param"], "reasoning_effort");
    let unknown = openai(
        &sim,
        &json!({"model": "gpt-sim", "reasoning_effort": "ultra",
        "messages": [user("x")]}),
    )
    .await;
    assert_eq!(unknown.status, 400);
}

#[tokio::test]
async fn output_budget_is_checked_and_enforced() {
    let sim = start_default().await;
    let too_big = openai(
        &sim,
        &json!({"model": "gpt-sim", "max_completion_tokens": 1_000_000,
        "messages": [user("x")]}),
    )
    .await;
    assert_eq!(too_big.status, 400);
    let tiny = openai(
        &sim,
        &json!({"model": "gpt-plain", "max_completion_tokens": 3,
        "messages": [user("Please write a long essay about rate limits")]}),
    )
    .await;
    assert_eq!(tiny.status, 200);
    assert_eq!(tiny.body["choices"][0]["finish_reason"], "length");
    assert_eq!(tiny.body["usage"]["completion_tokens"], 3);
    let stream_opts = openai(
        &sim,
        &json!({"model": "gpt-sim", "stream_options": {"include_usage": true},
        "messages": [user("x")]}),
    )
    .await;
    assert_eq!(stream_opts.status, 400);
}

#[tokio::test]
async fn logprobs_are_deterministic_for_a_seed_and_cover_rankings_and_streams() {
    let schema = json!({"type": "object", "required": ["ranking"], "additionalProperties": false,
        "properties": {"ranking": {"type": "array", "minItems": 3, "maxItems": 3,
            "items": {"type": "string", "enum": ["alpha", "beta", "gamma", "delta", "epsilon"]}}}});
    let request = json!({"model": "gpt-plain", "messages": [user("Rank them")],
        "logprobs": true, "top_logprobs": 5,
        "response_format": {"type": "json_schema", "json_schema": {"name": "ranking", "schema": schema}}});
    let sim = start_default().await;
    let first = openai(&sim, &request).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_openai_schema("CreateChatCompletionResponse", &first.body);
    let again = openai(&sim, &request).await.body;
    let other_sim = start_default().await;
    let elsewhere = openai(&other_sim, &request).await.body;
    let logprobs = &first.body["choices"][0]["logprobs"];
    assert_eq!(
        logprobs, &again["choices"][0]["logprobs"],
        "same sim, same request"
    );
    assert_eq!(logprobs, &elsewhere["choices"][0]["logprobs"], "same seed");

    // Every ranked id is one token whose alternatives are other ids of the enum, each entry in
    // the documented shape (token, logprob, bytes, top_logprobs of token/logprob/bytes).
    let content = first.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    let ranking: Value = serde_json::from_str(content).unwrap();
    let entries = logprobs["content"].as_array().unwrap();
    for id in ranking["ranking"].as_array().unwrap() {
        let id = id.as_str().unwrap();
        let entry = entries.iter().find(|e| e["token"] == id).unwrap();
        assert_eq!(entry["bytes"], json!(id.as_bytes()));
        let top = entry["top_logprobs"].as_array().unwrap();
        assert_eq!(top.len(), 5, "{entry}");
        assert_eq!(top[0]["token"], id);
        for alt in &top[1..] {
            let token = alt["token"].as_str().unwrap();
            assert!(
                ["alpha", "beta", "gamma", "delta", "epsilon"].contains(&token) && token != id,
                "{alt}"
            );
            assert_eq!(alt["bytes"], json!(token.as_bytes()));
        }
    }

    // Streamed, the chunks' logprobs add up to the same tokens as the whole answer.
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let (events, broken) = openai_stream(&sim, &streamed, &[]).await;
    assert!(!broken);
    let tokens: Vec<Value> = events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .flat_map(|e| {
            e.json()["choices"][0]["logprobs"]["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    let streamed_text: String = tokens
        .iter()
        .map(|t| t["token"].as_str().unwrap())
        .collect();
    assert_eq!(streamed_text, content);
}
