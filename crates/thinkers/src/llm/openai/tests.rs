//! Exact request bodies (snapshots) and decoding of realistic answers and streams.

use serde_json::{Value, json};

use crate::llm::message::ContentBlock;
use crate::llm::tests::fixtures::{self, CANARY_KEY, decode_sse, plan};
use crate::llm::{
    ChatRequest, DecodePlan, Dialect, EncodedRequest, Reasoning, StopReason, StreamDelta,
    ToolChoice, decode, encode,
};
use crate::{Error, ErrorKind, RetrySignal};

fn body(dialect: Dialect, native_tools: bool, req: &ChatRequest) -> anyhow::Result<String> {
    let t = fixtures::target(dialect).with_native_tools(native_tools);
    Ok(encode(&t, req)?.body_str().to_owned())
}

fn json_body(enc: &EncodedRequest) -> anyhow::Result<Value> {
    Ok(serde_json::from_slice(&enc.body)?)
}

#[test]
fn plain_body() -> anyhow::Result<()> {
    insta::assert_snapshot!(body(Dialect::OpenAi, true, &fixtures::plain())?);
    Ok(())
}

#[test]
fn tools_body_is_strict_and_streams_with_usage() -> anyhow::Result<()> {
    let mut req = fixtures::with_tools();
    req.stream = true;
    req.reasoning = Reasoning::Tokens(4000);
    let t = fixtures::target(Dialect::OpenAi).with_thinking(true);
    let enc = encode(&t, &req)?;
    insta::assert_snapshot!(enc.body_str());
    let v = json_body(&enc)?;
    assert_eq!(v["stream_options"], json!({"include_usage": true}));
    assert_eq!(v["reasoning_effort"], "medium");
    let params = &v["tools"][0]["function"]["parameters"];
    assert_eq!(params["additionalProperties"], false);
    assert_eq!(
        params["properties"]["unit"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(v["tools"][0]["function"]["strict"], true);
    Ok(())
}

#[test]
fn tool_results_body() -> anyhow::Result<()> {
    insta::assert_snapshot!(body(Dialect::OpenAi, true, &fixtures::everything())?);
    Ok(())
}

#[test]
fn structured_output_body() -> anyhow::Result<()> {
    let enc = encode(&fixtures::target(Dialect::OpenAi), &fixtures::structured())?;
    insta::assert_snapshot!(enc.body_str());
    let v = json_body(&enc)?;
    let rf = &v["response_format"];
    assert_eq!(rf["type"], "json_schema");
    assert_eq!(rf["json_schema"]["strict"], true);
    assert_eq!(rf["json_schema"]["schema"]["additionalProperties"], false);
    assert!(
        rf["json_schema"]["schema"]["properties"]["note"]
            .get("maxLength")
            .is_none()
    );
    Ok(())
}

#[test]
fn text_tool_fallback_body() -> anyhow::Result<()> {
    let mut req = fixtures::tool_round();
    req.response = fixtures::structured().response;
    let enc = encode(
        &fixtures::target(Dialect::OpenAi).with_native_tools(false),
        &req,
    )?;
    insta::assert_snapshot!(enc.body_str());
    let v = json_body(&enc)?;
    assert!(v.get("tools").is_none() && v.get("tool_choice").is_none());
    // The answer schema cannot be native: it would forbid the tool-call object.
    assert!(v.get("response_format").is_none());
    let system = v["messages"][0]["content"].as_str().unwrap_or_default();
    assert!(system.contains("\n<tools>\n") && system.contains("\n<response_schema>\n"));
    assert!(enc.plan.text_tools);
    assert_eq!(enc.plan.next_call_number, 3);
    Ok(())
}

#[test]
fn openai_compatible_body() -> anyhow::Result<()> {
    let mut req = fixtures::everything();
    req.response = fixtures::structured().response;
    let t = fixtures::target(Dialect::OpenAiCompatible);
    let enc = encode(&t, &req)?;
    insta::assert_snapshot!(enc.body_str());
    let v = json_body(&enc)?;
    assert_eq!(v["max_tokens"], 2048);
    assert!(v.get("max_completion_tokens").is_none());
    assert_eq!(v["tool_choice"], "required");
    assert_eq!(v["tools"].as_array().map(Vec::len), Some(1));
    assert!(v["tools"][0]["function"].get("strict").is_none());
    assert!(v.get("response_format").is_none());
    // A named tool that is not offered cannot narrow the list.
    let mut unknown = req.clone();
    unknown.tool_choice = ToolChoice::Tool("nope".into());
    let v = json_body(&encode(&t, &unknown)?)?;
    assert_eq!(v["tools"].as_array().map(Vec::len), Some(2));
    // Without a key, no authorization header.
    let mut keyless = t;
    keyless.api_key = None;
    assert!(
        encode(&keyless, &req)?
            .headers
            .iter()
            .all(|h| h.name() != "authorization")
    );
    Ok(())
}

#[test]
fn the_key_travels_only_in_the_redacted_header() -> anyhow::Result<()> {
    let enc = encode(&fixtures::target(Dialect::OpenAi), &fixtures::everything())?;
    assert!(!enc.body_str().contains(CANARY_KEY));
    assert!(!format!("{enc:?}").contains(CANARY_KEY));
    assert!(!format!("{:?}", fixtures::target(Dialect::OpenAi)).contains(CANARY_KEY));
    let auth = enc.headers.iter().find(|h| h.name() == "authorization");
    assert_eq!(
        auth.map(|h| h.raw_value().to_owned()),
        Some(format!("Bearer {CANARY_KEY}"))
    );
    assert_eq!(enc.url, "https://api.example.invalid/v1/chat/completions");
    Ok(())
}

fn whole(dialect: Dialect) -> DecodePlan {
    DecodePlan {
        stream: false,
        ..plan(dialect, false)
    }
}

#[test]
fn decodes_the_spec_tool_call_example() -> anyhow::Result<()> {
    let body = r#"{
      "id": "chatcmpl-abc123", "object": "chat.completion", "created": 1699896916,
      "model": "gpt-4o-mini", "service_tier": "default",
      "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "refusal": null,
        "annotations": [], "tool_calls": [{"id": "call_abc123", "type": "function",
        "function": {"name": "get_current_weather", "arguments": "{\n\"location\": \"Boston, MA\"\n}"}}]},
        "logprobs": null, "finish_reason": "tool_calls"}],
      "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99,
        "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 5, "audio_tokens": 0,
          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
    }"#;
    let r = decode(&whole(Dialect::OpenAi), body.as_bytes())?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.model, "gpt-4o-mini");
    assert_eq!(
        r.content,
        vec![ContentBlock::tool_call(
            "call_abc123",
            "get_current_weather",
            json!({"location": "Boston, MA"})
        )]
    );
    assert_eq!((r.usage.input, r.usage.output), (82, 17));
    assert_eq!((r.usage.cached, r.usage.reasoning), (64, 5));
    Ok(())
}

#[test]
fn decodes_local_server_quirks() -> anyhow::Result<()> {
    // Tool calls with finish_reason "stop", a missing id, object arguments, string arguments that
    // do not parse, unknown fields everywhere, no usage.
    let body = r#"{"model": "llama3", "timings": {"x": 1}, "choices": [{"message": {"role": "assistant",
        "content": "", "tool_calls": [
          {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
          {"id": "", "function": {"name": "get_time", "arguments": "{\"city\": \"Par"}},
          {"id": "x9", "function": {"name": "noop", "arguments": ""}}
        ]}, "finish_reason": "stop", "extra": true}]}"#;
    let plan = DecodePlan {
        next_call_number: 7,
        ..whole(Dialect::OpenAiCompatible)
    };
    let r = decode(&plan, body.as_bytes())?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(
        r.content,
        vec![
            ContentBlock::tool_call("call_7", "get_weather", json!({"city": "Paris"})),
            ContentBlock::tool_call("call_8", "get_time", json!("{\"city\": \"Par")),
            ContentBlock::tool_call("x9", "noop", json!({})),
        ]
    );
    assert_eq!(r.usage, crate::llm::Usage::default());
    Ok(())
}

#[test]
fn decodes_text_refusal_truncation_and_unknown_reasons() -> anyhow::Result<()> {
    let p = whole(Dialect::OpenAi);
    let text = r#"{"model":"m","choices":[{"message":{"content":"Hello","reasoning_content":"think"},"finish_reason":"length",
        "logprobs":{"content":[{"token":"Hello","logprob":-0.1,"bytes":[72],"top_logprobs":[{"token":"Hello","logprob":-0.1},{"token":"Hi","logprob":-2.5}]}]}}]}"#;
    let r = decode(&p, text.as_bytes())?;
    assert_eq!(r.stop, StopReason::MaxTokens);
    assert_eq!(r.text(), "Hello");
    assert!(
        matches!(&r.content[0], ContentBlock::Thinking { thinking, .. } if thinking == "think")
    );
    let lp = r.logprobs.unwrap_or_default();
    assert_eq!(
        lp[0].top,
        vec![("Hello".to_owned(), -0.1), ("Hi".to_owned(), -2.5)]
    );

    let refusal = r#"{"choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}"#;
    let r = decode(&p, refusal.as_bytes())?;
    assert_eq!(r.stop, StopReason::Refusal);
    assert_eq!(r.text(), "I can't help with that.");

    let odd = r#"{"choices":[{"message":{"content":"x"},"finish_reason":"brand_new_reason"}]}"#;
    assert_eq!(
        decode(&p, odd.as_bytes())?.stop,
        StopReason::Other("brand_new_reason".into())
    );
    let filtered = r#"{"choices":[{"message":{"content":null},"finish_reason":"content_filter"}]}"#;
    assert_eq!(decode(&p, filtered.as_bytes())?.stop, StopReason::Refusal);
    Ok(())
}

#[test]
fn decode_failures_are_typed() {
    let p = whole(Dialect::OpenAi);
    let e = decode(&p, br#"{"error":{"message":"boom","type":"server_error"}}"#);
    assert!(matches!(e, Err(Error::ExternalService { .. })));
    // An answer that is not the protocol's shape is retried once, on its own bound.
    let e = decode(&p, br#"{"choices":[]}"#);
    assert!(matches!(
        e,
        Err(Error::Retry(RetrySignal::UnreadableAnswer { .. }))
    ));
    let e = decode(&p, b"<html>");
    assert!(matches!(
        e,
        Err(Error::Retry(RetrySignal::UnreadableAnswer { .. }))
    ));
}

#[test]
fn text_tool_answers_decode_like_native_ones() -> anyhow::Result<()> {
    let p = DecodePlan {
        next_call_number: 3,
        ..whole(Dialect::OpenAi)
    };
    let p = DecodePlan {
        text_tools: true,
        ..p
    };
    let content = "```json\n{\"tool_calls\":[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}]}\n```";
    let body = json!({"model": "m", "choices": [{"message": {"content": content}, "finish_reason": "stop"}]});
    let r = decode(&p, body.to_string().as_bytes())?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(
        r.content,
        vec![ContentBlock::tool_call(
            "call_3",
            "get_weather",
            json!({"city": "Oslo"})
        )]
    );
    let body = json!({"model": "m", "choices": [{"message": {"content": "{\"answer\": 1}"}, "finish_reason": "stop"}]});
    let r = decode(&p, body.to_string().as_bytes())?;
    assert_eq!(
        (r.stop.clone(), r.text()),
        (StopReason::EndTurn, "{\"answer\": 1}".to_owned())
    );
    Ok(())
}

const VERIFIED_CAPTURE: &str = r#"data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796029034,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":null},"logprobs":null,"finish_reason":null}],"obfuscation":"xyz"}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796029034,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_N_ch5","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796029034,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":\"San Fra"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796029034,"model":"gpt-4o","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ncisco\",\"unit\":\"fahrenheit\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796029034,"model":"gpt-4o","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1796029034,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":15,"total_tokens":19}}

data: [DONE]

"#;

#[tokio::test]
async fn decodes_the_verified_stream_capture() -> anyhow::Result<()> {
    let (r, deltas) = decode_sse(plan(Dialect::OpenAi, false), VERIFIED_CAPTURE).await;
    let r = r?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(
        r.content,
        vec![ContentBlock::tool_call(
            "call_N_ch5",
            "get_weather",
            json!({"location": "San Francisco", "unit": "fahrenheit"})
        )]
    );
    assert_eq!((r.usage.input, r.usage.output), (4, 15));
    assert_eq!(r.model, "gpt-4o");
    assert_eq!(
        deltas[0],
        StreamDelta::ToolCallStart {
            index: 0,
            id: "call_N_ch5".into(),
            name: "get_weather".into()
        }
    );
    let args: String = deltas
        .iter()
        .filter_map(|d| match d {
            StreamDelta::ToolCallArguments { fragment, .. } => Some(fragment.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        args,
        "{\"location\":\"San Francisco\",\"unit\":\"fahrenheit\"}"
    );
    Ok(())
}

#[tokio::test]
async fn decodes_ollama_style_streams() -> anyhow::Result<()> {
    // No index, whole calls in one delta, two parallel calls, object arguments, finish "stop".
    let sse = r#"data: {"model":"qwen","choices":[{"delta":{"content":"Sure. "}}]}

data: {"model":"qwen","choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}}]}

data: {"model":"qwen","choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"get_time","arguments":{"city":"Rome"}}}]}}]}

data: {"model":"qwen","choices":[{"delta":{},"finish_reason":"stop"}]}

data: [DONE]

"#;
    let (r, deltas) = decode_sse(plan(Dialect::OpenAiCompatible, false), sse).await;
    let r = r?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(
        r.content,
        vec![
            ContentBlock::text("Sure. "),
            ContentBlock::tool_call("a", "get_weather", json!({"city": "Rome"})),
            ContentBlock::tool_call("b", "get_time", json!({"city": "Rome"})),
        ]
    );
    assert_eq!(deltas[0], StreamDelta::Text("Sure. ".into()));
    Ok(())
}

#[tokio::test]
async fn stream_errors_and_early_ends_are_reported() {
    let sse = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"error\":{\"message\":\"server had an error\",\"type\":\"server_error\"}}\n\n";
    let (r, _) = decode_sse(plan(Dialect::OpenAi, false), sse).await;
    assert_eq!(r.err().map(|e| e.kind()), Some(ErrorKind::ExternalService));
    let sse = "data: {\"error\":{\"message\":\"busy\",\"type\":\"server_error\"}}\n\n";
    let (r, _) = decode_sse(plan(Dialect::OpenAi, false), sse).await;
    assert!(matches!(
        r,
        Err(Error::Retry(RetrySignal::Transient { .. }))
    ));
    let sse = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let (r, _) = decode_sse(plan(Dialect::OpenAi, false), sse).await;
    assert_eq!(r.err().map(|e| e.kind()), Some(ErrorKind::ExternalService));
}

#[tokio::test]
async fn streamed_text_tool_calls_are_held_back_and_delivered_as_calls() -> anyhow::Result<()> {
    let sse = "data: {\"choices\":[{\"delta\":{\"content\":\"{\\\"tool_calls\\\":[{\\\"name\\\":\"}}]}\n\n\
               data: {\"choices\":[{\"delta\":{\"content\":\"\\\"get_time\\\",\\\"arguments\\\":{}}]}\"}}]}\n\n\
               data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let (r, deltas) = decode_sse(plan(Dialect::OpenAi, true), sse).await;
    let r = r?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(
        r.content,
        vec![ContentBlock::tool_call("call_1", "get_time", json!({}))]
    );
    assert!(!deltas.iter().any(|d| matches!(d, StreamDelta::Text(_))));
    assert!(matches!(&deltas[0], StreamDelta::ToolCallStart { name, .. } if name == "get_time"));
    Ok(())
}

#[test]
fn media_parts_and_raw_arguments_render() -> anyhow::Result<()> {
    let v: Value = serde_json::from_str(&body(Dialect::OpenAi, true, &fixtures::media())?)?;
    assert_eq!(
        v["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": [
                {"type": "text", "text": "Compare these."},
                {"type": "image_url", "image_url": {"url": "https://x.invalid/a.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
                {"type": "file", "file": {
                    "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBE"}},
                {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBF"}},
            ]},
            {"role": "assistant", "content": "Looking closer.", "tool_calls": [
                {"id": "call_1", "type": "function",
                    "function": {"name": "zoom", "arguments": "{\"x\": 1,"}},
                {"id": "call_2", "type": "function",
                    "function": {"name": "zoom", "arguments": "{}"}},
            ]},
        ])
    );
    // One image alone is still a list of parts; one text alone is a string.
    let mut one = fixtures::media();
    let first = &mut std::sync::Arc::make_mut(&mut one.messages)[0].content;
    first.drain(2..);
    first.remove(0);
    let v: Value = serde_json::from_str(&body(Dialect::OpenAi, true, &one)?)?;
    assert_eq!(v["messages"][1]["content"][0]["type"], "image_url");
    Ok(())
}

#[test]
fn a_file_by_url_is_refused_naming_the_messages() {
    let mut req = fixtures::media();
    std::sync::Arc::make_mut(&mut req.messages)[0]
        .content
        .push(ContentBlock::File {
            media_type: "application/pdf".into(),
            name: None,
            source: crate::llm::message::MediaSource::Url("https://x.invalid/a.pdf".into()),
        });
    let err = encode(&fixtures::target(Dialect::OpenAi), &req).err();
    assert!(
        matches!(&err, Some(e) if e.kind() == ErrorKind::InvalidInput && e.to_string().contains("messages")),
        "{err:?}"
    );
}

#[test]
fn forced_choice_and_none_render() -> anyhow::Result<()> {
    let mut req = fixtures::with_tools();
    req.tool_choice = ToolChoice::None;
    let v: Value = serde_json::from_str(&body(Dialect::OpenAi, true, &req)?)?;
    assert_eq!(v["tool_choice"], "none");
    req.tool_choice = ToolChoice::Required;
    let v: Value = serde_json::from_str(&body(Dialect::OpenAi, true, &req)?)?;
    assert_eq!(v["tool_choice"], "required");
    Ok(())
}

#[test]
fn the_effort_reservations_agree_with_the_effort_a_token_budget_is_sent_as() {
    // The tokens reserved for `low`, `medium` and `high` are budgets this dialect sends as that
    // same effort, so the two translations cannot drift apart.
    for name in ["low", "medium", "high"] {
        let reserved = crate::model::effort_tokens(name, crate::model::Depth::Standard);
        assert_eq!(crate::llm::common::effort_for_tokens(reserved), name);
    }
}
