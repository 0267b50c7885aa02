//! The Google Gemini dialect (`generateContent`, `streamGenerateContent?alt=sse`).

use serde_json::{Value, json};
use thinkers_sim::{SimConfig, SimModel};

use crate::support::*;

fn user(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

fn weather_tools() -> Value {
    json!([{"functionDeclarations": [
        {"name": "get_weather", "description": "Current weather", "parametersJsonSchema": weather_schema()},
        {"name": "get_time", "description": "Local time",
         "parameters": {"type": "OBJECT", "properties": {"tz": {"type": "STRING", "enum": ["UTC", "CET"]}}, "required": ["tz"]}}
    ]}])
}

async fn sim() -> thinkers_sim::Sim {
    start(
        SimConfig::builder()
            .model(SimModel::new("gemini-sim").thinking(true))
            .model(SimModel::new("gemini-plain"))
            .seed(42)
            .build()
            .unwrap(),
    )
    .await
}

fn parts(body: &Value) -> Vec<Value> {
    body["candidates"][0]["content"]["parts"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_plain_answer_has_the_documented_shape() {
    let sim = sim().await;
    let reply = gemini(
        &sim,
        "gemini-plain",
        &json!({"systemInstruction": {"parts": [{"text": "Be brief."}]},
                "contents": [user("What is admission?")],
                "generationConfig": {"maxOutputTokens": 512}}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let body = &reply.body;
    let candidate = &body["candidates"][0];
    assert_eq!(candidate["content"]["role"], "model");
    assert_eq!(candidate["finishReason"], "STOP");
    let text = parts(body)[0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("What is admission?"), "{text}");
    let usage = &body["usageMetadata"];
    let (prompt, out) = (
        usage["promptTokenCount"].as_u64().unwrap(),
        usage["candidatesTokenCount"].as_u64().unwrap(),
    );
    assert!(prompt > 0 && out > 0);
    assert_eq!(usage["totalTokenCount"].as_u64().unwrap(), prompt + out);
    assert_eq!(body["modelVersion"], "gemini-plain");
    // Gemini sends no rate-limit or retry headers.
    assert!(reply.header("retry-after").is_none());
}

#[tokio::test]
async fn keys_models_methods_and_roles_are_checked() {
    let sim = sim().await;
    let url = format!(
        "{}/models/gemini-plain:generateContent",
        sim.gemini_base_url()
    );
    let body = json!({"contents": [user("hi")]});
    let resp = client().post(&url).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["status"], "PERMISSION_DENIED");
    assert_eq!(err["error"]["code"], 403);

    let reply = gemini(&sim, "gemini-nope", &body).await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.body["error"]["status"], "NOT_FOUND");
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("models/gemini-nope")
    );

    let resp = client()
        .post(format!(
            "{}/models/gemini-plain:streamGenerateContent",
            sim.gemini_base_url()
        ))
        .header("x-goog-api-key", "k")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let resp = client()
        .post(format!(
            "{}/models/gemini-plain:embedContent",
            sim.gemini_base_url()
        ))
        .header("x-goog-api-key", "k")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);

    for (bad, field) in [
        (json!({"contents": []}), "contents"),
        (
            json!({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}),
            "contents[0].role",
        ),
        (
            json!({"contents": [user("x")], "generationConfig": {"maxOutputTokens": 10_000_000}}),
            "generationConfig.maxOutputTokens",
        ),
        (
            json!({"contents": [user("x")], "generationConfig": {"responseJsonSchema": {"type": "object"}}}),
            "generationConfig.responseMimeType",
        ),
    ] {
        let reply = gemini(&sim, "gemini-plain", &bad).await;
        assert_eq!(reply.status, 400, "{bad}: {}", reply.body);
        assert_eq!(reply.body["error"]["status"], "INVALID_ARGUMENT");
        assert_eq!(
            reply.body["error"]["details"][0]["fieldViolations"][0]["field"], field,
            "{}",
            reply.body
        );
    }
}

#[tokio::test]
async fn function_calls_follow_the_declarations_and_the_calling_config() {
    let sim = sim().await;
    let reply = gemini(
        &sim,
        "gemini-plain",
        &json!({"contents": [user("Weather in Paris?")], "tools": weather_tools()}),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let calls: Vec<Value> = parts(&reply.body)
        .into_iter()
        .filter_map(|p| p.get("functionCall").cloned())
        .collect();
    assert!(!calls.is_empty(), "{}", reply.body);
    for call in &calls {
        assert!(call.get("id").is_none(), "Gemini calls carry no id: {call}");
        if call["name"] == "get_weather" {
            assert_valid(&weather_schema(), &call["args"]);
        }
    }
    assert_eq!(reply.body["candidates"][0]["finishReason"], "STOP");

    // ANY with one allowed name forces that function; NONE forbids calls.
    let forced = gemini(
        &sim,
        "gemini-plain",
        &json!({"contents": [user("What time is it?")], "tools": weather_tools(),
                "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_time"]}}}),
    )
    .await;
    let call = &parts(&forced.body)[0]["functionCall"];
    assert_eq!(call["name"], "get_time", "{}", forced.body);
    assert!(["UTC", "CET"].contains(&call["args"]["tz"].as_str().unwrap()));
    let none = gemini(
        &sim,
        "gemini-plain",
        &json!({"contents": [user("Weather?")], "tools": weather_tools(),
                "toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}),
    )
    .await;
    assert!(parts(&none.body)[0].get("text").is_some(), "{}", none.body);
    let unknown = gemini(
        &sim,
        "gemini-plain",
        &json!({"contents": [user("x")], "tools": weather_tools(),
                "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["nope"]}}}),
    )
    .await;
    assert_eq!(unknown.status, 400);

    // The function response turn: answered, the model finishes with text quoting the result.
    let model_turn = json!({"role": "model", "parts": [{"functionCall": {"name": "get_time", "args": {"tz": "UTC"}}}]});
    let answer = gemini(
        &sim,
        "gemini-plain",
        &json!({"contents": [user("What time is it?"), model_turn,
            {"role": "user", "parts": [{"functionResponse": {"name": "get_time", "response": {"output": "12:00 UTC"}}}]}],
            "tools": weather_tools()}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let text = parts(&answer.body)[0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("12:00 UTC"), "{text}");
    // A response without its call turn, or a count that does not match, is refused.
    let stray = gemini(
        &sim,
        "gemini-plain",
        &json!({"contents": [user("x"),
            {"role": "user", "parts": [{"functionResponse": {"name": "get_time", "response": {}}}]}]}),
    )
    .await;
    assert_eq!(stray.status, 400);
    assert!(
        stray.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("immediately after a function call turn")
    );
    let short = gemini(
        &sim,
        "gemini-plain",
        &json!({"contents": [user("x"),
            {"role": "model", "parts": [{"functionCall": {"name": "get_time", "args": {}}}, {"functionCall": {"name": "get_time", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_time", "response": {}}}]}]}),
    )
    .await;
    assert_eq!(short.status, 400);
}

#[tokio::test]
async fn structured_output_keeps_the_schema() {
    let sim = sim().await;
    let schema = json!({"type": "object", "properties": {
        "vendor": {"type": "string"}, "total_cents": {"type": "integer", "minimum": 0}},
        "required": ["vendor", "total_cents"]});
    for config in [
        json!({"responseMimeType": "application/json", "responseJsonSchema": schema}),
        // The OpenAPI-style schema, types in capitals.
        json!({"responseMimeType": "application/json", "responseSchema": {"type": "OBJECT",
            "properties": {"vendor": {"type": "STRING"}, "total_cents": {"type": "INTEGER"}},
            "required": ["vendor", "total_cents"]}}),
    ] {
        let reply = gemini(
            &sim,
            "gemini-plain",
            &json!({"contents": [user("Read the invoice.")], "generationConfig": config}),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        let text = parts(&reply.body)[0]["text"].as_str().unwrap().to_owned();
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_valid(&schema, &answer);
    }
}

fn thinking(include: bool) -> Value {
    json!({"thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": include}})
}

#[tokio::test]
async fn thought_signatures_must_come_back_unchanged() {
    let sim = sim().await;
    let ask = json!({"contents": [user("Weather in Paris?")], "tools": weather_tools(),
        "generationConfig": thinking(true)});
    let reply = gemini(&sim, "gemini-sim", &ask).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let turn = parts(&reply.body);
    assert_eq!(turn[0]["thought"], true, "{}", reply.body);
    let first_call = turn
        .iter()
        .find(|p| p.get("functionCall").is_some())
        .unwrap();
    let signature = first_call["thoughtSignature"].as_str().unwrap().to_owned();
    assert!(
        reply.body["usageMetadata"]["thoughtsTokenCount"]
            .as_u64()
            .unwrap()
            > 0
    );
    let calls = turn
        .iter()
        .filter(|p| p.get("functionCall").is_some())
        .count();
    let responses: Vec<Value> = turn
        .iter()
        .filter_map(|p| p.get("functionCall"))
        .map(|c| json!({"functionResponse": {"name": c["name"], "response": {"output": "sunny"}}}))
        .collect();
    assert_eq!(responses.len(), calls);
    let follow_up = |model_parts: Vec<Value>| {
        json!({"contents": [user("Weather in Paris?"), {"role": "model", "parts": model_parts},
            {"role": "user", "parts": responses.clone()}],
            "tools": weather_tools(), "generationConfig": thinking(true)})
    };
    let back = gemini(&sim, "gemini-sim", &follow_up(turn.clone())).await;
    assert_eq!(back.status, 200, "{}", back.body);

    // Without its signature the turn is refused, naming the call; a changed one too.
    let mut unsigned = turn.clone();
    for p in &mut unsigned {
        p.as_object_mut().unwrap().remove("thoughtSignature");
    }
    let refused = gemini(&sim, "gemini-sim", &follow_up(unsigned)).await;
    assert_eq!(refused.status, 400);
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("missing a `thought_signature`"),
        "{message}"
    );
    let mut changed = turn.clone();
    for p in &mut changed {
        if p.get("thoughtSignature").is_some() {
            p["thoughtSignature"] = json!(format!("{signature}x"));
        }
    }
    let refused = gemini(&sim, "gemini-sim", &follow_up(changed)).await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Corrupted thought signature")
    );

    // Thoughts hidden: no thought part, the signature still comes. A model without thinking
    // refuses a budget.
    let hidden = gemini(
        &sim,
        "gemini-sim",
        &json!({"contents": [user("Hello")], "generationConfig": thinking(false)}),
    )
    .await;
    let hidden_parts = parts(&hidden.body);
    assert!(hidden_parts.iter().all(|p| p.get("thought").is_none()));
    assert!(
        hidden_parts[0]["thoughtSignature"].is_string(),
        "{}",
        hidden.body
    );
    let refused = gemini(
        &sim,
        "gemini-plain",
        &json!({"contents": [user("Hello")], "generationConfig": thinking(true)}),
    )
    .await;
    assert_eq!(refused.status, 400);
}

#[tokio::test]
async fn streams_are_data_events_ending_with_the_finish_reason_and_usage() {
    let sim = sim().await;
    let (events, broken) = gemini_stream(
        &sim,
        "gemini-sim",
        &json!({"contents": [user("Tell me about admission control in a few words.")],
                "generationConfig": thinking(true)}),
        &[],
    )
    .await;
    assert!(!broken);
    assert!(events.len() >= 3, "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| e.event.is_empty() || e.event == "message")
    );
    let chunks: Vec<Value> = events.iter().map(Sse::json).collect();
    assert_eq!(
        chunks[0]["candidates"][0]["content"]["parts"][0]["thought"],
        true
    );
    let last = chunks.last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert!(last["usageMetadata"]["promptTokenCount"].as_u64().unwrap() > 0);
    assert!(last["candidates"][0]["content"]["parts"][0]["thoughtSignature"].is_string());
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c["candidates"][0].get("finishReason").is_none())
    );
    let text: String = chunks[1..]
        .iter()
        .filter_map(|c| c["candidates"][0]["content"]["parts"][0]["text"].as_str())
        .collect();
    assert!(text.contains("admission control"), "{text}");

    // A function call comes whole, in the closing event.
    let (events, _) = gemini_stream(
        &sim,
        "gemini-plain",
        &json!({"contents": [user("Weather in Oslo?")], "tools": weather_tools(),
                "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}}}),
        &[],
    )
    .await;
    let last = events.last().unwrap().json();
    let call = &last["candidates"][0]["content"]["parts"][0]["functionCall"];
    assert_eq!(call["name"], "get_weather");
    assert_valid(&weather_schema(), &call["args"]);
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");

    // A stream error fault: the stream ends with a google.rpc error event.
    let (events, _) = gemini_stream(
        &sim,
        "gemini-plain",
        &json!({"contents": [user("Tell me a long story about queues.")]}),
        &[("x-sim-fault", "stream_error")],
    )
    .await;
    let last = events.last().unwrap().json();
    assert_eq!(last["error"]["status"], "UNAVAILABLE");
}

#[tokio::test]
async fn a_rate_limit_is_resource_exhausted_with_a_retry_delay() {
    let sim = start(
        SimConfig::builder()
            .model(SimModel::new("gemini-limited").tpm(100_000).rpm(1))
            .build()
            .unwrap(),
    )
    .await;
    let body = json!({"contents": [user("hello")], "generationConfig": {"maxOutputTokens": 64}});
    let first = gemini(&sim, "gemini-limited", &body).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let second = gemini(&sim, "gemini-limited", &body).await;
    assert_eq!(second.status, 429, "{}", second.body);
    let error = &second.body["error"];
    assert_eq!(error["code"], 429);
    assert_eq!(error["status"], "RESOURCE_EXHAUSTED");
    let details = error["details"].as_array().unwrap();
    let kinds: Vec<&str> = details
        .iter()
        .map(|d| d["@type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "type.googleapis.com/google.rpc.QuotaFailure",
            "type.googleapis.com/google.rpc.RetryInfo"
        ]
    );
    // The quota broken, with its per-minute figure, as Gemini names it.
    let violation = &details[0]["violations"][0];
    assert_eq!(
        violation["quotaId"], "GenerateRequestsPerMinutePerProjectPerModel",
        "{violation}"
    );
    assert_eq!(violation["quotaValue"], "1", "{violation}");
    let delay = details[1]["retryDelay"].as_str().unwrap();
    let secs: f64 = delay.strip_suffix('s').unwrap().parse().unwrap();
    assert!(secs > 0.0 && secs <= 60.0, "{delay}");
    assert!(second.header("retry-after").is_none());
    // The fault form too.
    let fault = gemini_with(
        &sim,
        "gemini-limited",
        &body,
        &[("x-sim-fault", "rate_limit_429")],
    )
    .await;
    assert_eq!(fault.status, 429);
    assert_eq!(fault.body["error"]["status"], "RESOURCE_EXHAUSTED");
}

/// The official `google-genai` SDKs call `/v1/models/…` by default, REST examples `/v1beta/…`:
/// both paths answer alike, beside the OpenAI routes that share the `/v1` prefix.
#[tokio::test]
async fn generate_content_answers_under_v1_and_v1beta() {
    let sim = start(
        SimConfig::builder()
            .model(SimModel::new("gemini-plain"))
            .seed(42)
            .log_bodies(true)
            .build()
            .unwrap(),
    )
    .await;
    let body = json!({"contents": [user("What is a seat?")]});
    for version in ["v1beta", "v1"] {
        let resp = client()
            .post(format!(
                "{}/{version}/models/gemini-plain:generateContent",
                sim.base_url()
            ))
            .header("x-goog-api-key", "AIza-test")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{version}");
        let answer: Value = resp.json().await.unwrap();
        assert_eq!(answer["candidates"][0]["finishReason"], "STOP", "{answer}");
        let text = parts(&answer)[0]["text"].as_str().unwrap().to_owned();
        assert!(text.contains("What is a seat?"), "{version}: {text}");
        assert_eq!(answer["modelVersion"], "gemini-plain");

        let resp = client()
            .post(format!(
                "{}/{version}/models/gemini-plain:streamGenerateContent?alt=sse",
                sim.base_url()
            ))
            .header("x-goog-api-key", "AIza-test")
            .json(&body)
            .send()
            .await
            .unwrap();
        let (events, broken) = events(resp).await;
        assert!(!broken && !events.is_empty(), "{version}: {events:?}");
        let last = events.last().unwrap().json();
        assert_eq!(last["candidates"][0]["finishReason"], "STOP", "{last}");
    }
    let endpoints: Vec<String> = sim.requests().into_iter().map(|r| r.endpoint).collect();
    assert_eq!(
        endpoints,
        [
            "/v1beta/models/{model}:generateContent",
            "/v1beta/models/{model}:streamGenerateContent",
            "/v1/models/{model}:generateContent",
            "/v1/models/{model}:streamGenerateContent",
        ]
    );

    // Under `/v1` too: a key is needed, an unknown method is a Gemini 404, and the model list
    // beside it is still OpenAI's.
    let url = format!("{}/v1/models/gemini-plain:generateContent", sim.base_url());
    let resp = client().post(&url).json(&body).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    let resp = client()
        .post(format!(
            "{}/v1/models/gemini-plain:embedContent",
            sim.base_url()
        ))
        .header("x-goog-api-key", "AIza-test")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["status"], "NOT_FOUND", "{err}");
    let list: Value = client()
        .get(format!("{}/v1/models", sim.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["object"], "list", "{list}");
    assert_eq!(list["data"][0]["id"], "gemini-plain", "{list}");
}
