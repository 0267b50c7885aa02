//! Exact request bodies (snapshots), decoding of realistic answers and streams, and the
//! reasoning-item round trip across turns.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::llm::message::{ContentBlock, Message};
use crate::llm::tests::fixtures::{self, CANARY_KEY, decode_sse, plan};
use crate::llm::{
    ApiKey, Auth, AzureApi, ChatRequest, DecodePlan, Dialect, EncodedRequest, Reasoning,
    StopReason, StreamDelta, ToolChoice, WireTarget, decode, encode,
};
use crate::{Error, ErrorKind, RetrySignal};

fn target() -> WireTarget {
    fixtures::target(Dialect::OpenAiResponses)
}

fn json_body(enc: &EncodedRequest) -> anyhow::Result<Value> {
    Ok(serde_json::from_slice(&enc.body)?)
}

fn whole() -> DecodePlan {
    DecodePlan {
        stream: false,
        ..plan(Dialect::OpenAiResponses, false)
    }
}

#[test]
fn plain_body() -> anyhow::Result<()> {
    let enc = encode(&target(), &fixtures::plain())?;
    insta::assert_snapshot!(enc.body_str());
    let v = json_body(&enc)?;
    assert_eq!(v["instructions"], "You are terse.");
    assert_eq!(v["store"], false);
    assert!(v.get("include").is_none() && v.get("reasoning").is_none());
    assert_eq!(enc.url, "https://api.example.invalid/v1/responses");
    Ok(())
}

#[test]
fn tools_body_is_flat_strict_and_asks_for_encrypted_reasoning() -> anyhow::Result<()> {
    let mut req = fixtures::with_tools();
    req.stream = true;
    req.reasoning = Reasoning::Tokens(4000);
    let enc = encode(&target().with_thinking(true), &req)?;
    insta::assert_snapshot!(enc.body_str());
    let v = json_body(&enc)?;
    let tool = &v["tools"][0];
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["name"], "get_weather");
    assert_eq!(tool["strict"], true);
    assert_eq!(tool["parameters"]["additionalProperties"], false);
    assert!(tool.get("function").is_none());
    assert_eq!(
        v["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_eq!(v["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(v["stream"], true);
    assert!(v.get("tool_choice").is_none(), "auto is not written");
    Ok(())
}

#[test]
fn tool_results_body() -> anyhow::Result<()> {
    let enc = encode(&target(), &fixtures::everything())?;
    insta::assert_snapshot!(enc.body_str());
    let v = json_body(&enc)?;
    assert_eq!(
        v["tool_choice"],
        json!({"type": "function", "name": "get_weather"})
    );
    // Effort without thinking support is not sent.
    assert!(v.get("reasoning").is_none());
    let input = v["input"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output",
            "message"
        ]
    );
    assert_eq!(input[2]["call_id"], "call_a1");
    assert_eq!(input[2]["arguments"], "{\"city\":\"Boston\",\"unit\":null}");
    assert_eq!(input[5]["output"], "ERROR: time service unavailable");
    Ok(())
}

#[test]
fn structured_output_body() -> anyhow::Result<()> {
    let enc = encode(&target(), &fixtures::structured())?;
    insta::assert_snapshot!(enc.body_str());
    let v = json_body(&enc)?;
    let f = &v["text"]["format"];
    assert_eq!(f["type"], "json_schema");
    assert_eq!(f["name"], "invoice");
    assert_eq!(f["strict"], true);
    assert_eq!(f["schema"]["additionalProperties"], false);
    Ok(())
}

#[test]
fn text_tool_fallback_puts_tools_and_schema_in_the_instructions() -> anyhow::Result<()> {
    let mut req = fixtures::tool_round();
    req.response = fixtures::structured().response;
    let enc = encode(&target().with_native_tools(false), &req)?;
    let v = json_body(&enc)?;
    assert!(v.get("tools").is_none() && v.get("text").is_none());
    let instructions = v["instructions"].as_str().unwrap_or_default();
    assert!(instructions.contains("<tools>") && instructions.contains("<response_schema>"));
    assert!(enc.plan.text_tools);
    Ok(())
}

#[test]
fn the_key_travels_only_in_the_redacted_header_and_azure_uses_api_key() -> anyhow::Result<()> {
    let enc = encode(&target(), &fixtures::everything())?;
    assert!(!enc.body_str().contains(CANARY_KEY));
    assert!(!format!("{enc:?}").contains(CANARY_KEY));
    let auth = enc.headers.iter().find(|h| h.name() == "authorization");
    assert_eq!(
        auth.map(|h| h.raw_value().to_owned()),
        Some(format!("Bearer {CANARY_KEY}"))
    );

    let azure = WireTarget::new(
        Dialect::OpenAiResponses,
        "https://res.openai.azure.com",
        "my-deployment",
    )
    .with_key(ApiKey::new(CANARY_KEY))
    .with_azure(
        Some(AzureApi::Deployment {
            api_version: "2025-04-01-preview".into(),
        }),
        Auth::ApiKey,
    );
    let enc = encode(&azure, &fixtures::plain())?;
    assert_eq!(
        enc.url,
        "https://res.openai.azure.com/openai/responses?api-version=2025-04-01-preview"
    );
    assert!(enc.headers.iter().all(|h| h.name() != "authorization"));
    let key = enc.headers.iter().find(|h| h.name() == "api-key");
    assert!(key.is_some_and(|h| h.is_secret() && h.raw_value() == CANARY_KEY));
    assert!(!format!("{enc:?}").contains(CANARY_KEY));
    assert_eq!(json_body(&enc)?["model"], "my-deployment");

    // Chat Completions on a deployment URL, and the v1 surface.
    let chat = WireTarget {
        dialect: Dialect::OpenAi,
        ..azure.clone()
    };
    assert_eq!(
        encode(&chat, &fixtures::plain())?.url,
        "https://res.openai.azure.com/openai/deployments/my-deployment/chat/completions?api-version=2025-04-01-preview"
    );
    let v1 = azure.with_azure(Some(AzureApi::V1 { api_version: None }), Auth::Bearer);
    let enc = encode(&v1, &fixtures::plain())?;
    assert_eq!(enc.url, "https://res.openai.azure.com/openai/v1/responses");
    assert!(enc.headers.iter().any(|h| h.name() == "authorization"));
    Ok(())
}

/// A reasoning model's answer: a reasoning item with an encrypted payload, a text, a call.
const TOOL_ANSWER: &str = r#"{"id":"resp_1","object":"response","created_at":1741476542,"status":"completed","model":"o4-mini-2025-04-16","output":[{"type":"reasoning","id":"rs_67ccd2bf","summary":[{"type":"summary_text","text":"Need the weather."},{"type":"summary_text","text":"Call the tool."}],"encrypted_content":"gAAAAABo+/x=="},{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Checking.","annotations":[]}]},{"type":"function_call","id":"fc_1","call_id":"call_w1","name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":null}","status":"completed"}],"usage":{"input_tokens":81,"input_tokens_details":{"cached_tokens":64},"output_tokens":44,"output_tokens_details":{"reasoning_tokens":30},"total_tokens":125}}"#;

#[test]
fn decodes_items_usage_and_keeps_the_reasoning_item_whole() -> anyhow::Result<()> {
    let r = decode(&whole(), TOOL_ANSWER.as_bytes())?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.model, "o4-mini-2025-04-16");
    assert_eq!(
        (
            r.usage.input,
            r.usage.output,
            r.usage.cached,
            r.usage.reasoning
        ),
        (81, 44, 64, 30)
    );
    let ContentBlock::Thinking {
        thinking,
        signature,
    } = &r.content[0]
    else {
        panic!("{:?}", r.content);
    };
    assert_eq!(thinking, "Need the weather.\n\nCall the tool.");
    assert!(TOOL_ANSWER.contains(signature.as_str()));
    assert!(signature.starts_with("{\"type\":\"reasoning\"") && signature.ends_with("==\"}"));
    assert_eq!(r.content[1], ContentBlock::text("Checking."));
    assert_eq!(
        r.content[2],
        ContentBlock::tool_call(
            "call_w1",
            "get_weather",
            json!({"city": "Paris", "unit": null})
        )
    );
    Ok(())
}

#[test]
fn a_multi_turn_tool_conversation_carries_reasoning_items_byte_identical() -> anyhow::Result<()> {
    let t = target().with_thinking(true);
    let mut req = fixtures::with_tools();
    req.reasoning = Reasoning::Effort("high".into());
    let first = decode(&whole(), TOOL_ANSWER.as_bytes())?;
    let item = match &first.content[0] {
        ContentBlock::Thinking { signature, .. } => signature.clone(),
        other => panic!("{other:?}"),
    };
    let messages = Arc::make_mut(&mut req.messages);
    messages.push(first.into_message());
    messages.push(Message::tool_results(vec![ContentBlock::tool_result(
        "call_w1",
        "get_weather",
        "{\"temp_c\": 11}",
    )]));
    let second = encode(&t, &req)?;
    let body = second.body_str();
    // The item goes back exactly as it came, followed by its call and the call's output.
    assert!(body.contains(&item), "{body}");
    insta::assert_snapshot!(body);
    let v = json_body(&second)?;
    let input = v["input"].as_array().cloned().unwrap_or_default();
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(input[1]["encrypted_content"], "gAAAAABo+/x==");
    assert_eq!(input[2]["role"], "assistant");
    assert_eq!(input[3]["type"], "function_call");
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": "call_w1", "output": "{\"temp_c\": 11}"})
    );

    // A third turn: the second answer's new reasoning item joins, the first stays as it was.
    let third_answer = TOOL_ANSWER
        .replace("rs_67ccd2bf", "rs_second")
        .replace("gAAAAABo+/x==", "gAAAAABsecond==")
        .replace("call_w1", "call_w2");
    let answer = decode(&whole(), third_answer.as_bytes())?;
    let messages = Arc::make_mut(&mut req.messages);
    messages.push(answer.into_message());
    messages.push(Message::tool_results(vec![ContentBlock::tool_result(
        "call_w2",
        "get_weather",
        "{\"temp_c\": 12}",
    )]));
    let third = encode(&t, &req)?;
    assert!(third.body_str().contains(&item));
    assert!(third.body_str().contains("\"id\":\"rs_second\""));

    // Another dialect never sends the item to its provider; a target without thinking neither.
    let claude = fixtures::target(Dialect::Anthropic).with_thinking(true);
    assert!(!encode(&claude, &req)?.body_str().contains("rs_67ccd2bf"));
    assert!(!encode(&target(), &req)?.body_str().contains("rs_67ccd2bf"));
    Ok(())
}

#[test]
fn incomplete_refused_and_failed_answers() -> anyhow::Result<()> {
    let cut = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "Hal"}]}]});
    let r = decode(&whole(), cut.to_string().as_bytes())?;
    assert_eq!(
        (r.stop.clone(), r.text()),
        (StopReason::MaxTokens, "Hal".to_owned())
    );
    let refused = json!({"status": "completed", "output": [{"type": "message",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}]}]});
    let r = decode(&whole(), refused.to_string().as_bytes())?;
    assert_eq!(r.stop, StopReason::Refusal);
    assert_eq!(r.text(), "I can't help with that.");
    let failed = json!({"status": "failed", "output": [],
        "error": {"code": "server_error", "message": "The model failed."}});
    let e = decode(&whole(), failed.to_string().as_bytes()).unwrap_err();
    assert!(
        matches!(e, Error::Retry(RetrySignal::Transient { .. })),
        "{e:?}"
    );
    let e = decode(&whole(), b"{\"object\": \"list\"}").unwrap_err();
    assert!(
        matches!(e, Error::Retry(RetrySignal::UnreadableAnswer { .. })),
        "{e:?}"
    );
    Ok(())
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

fn stream_events() -> Vec<Value> {
    let reasoning: Value = json!({"type": "reasoning", "id": "rs_9", "summary": [
        {"type": "summary_text", "text": "Think."}], "encrypted_content": "enc/9=="});
    let call = json!({"type": "function_call", "id": "fc_9", "call_id": "call_9",
        "name": "get_weather", "arguments": "", "status": "in_progress"});
    let mut done_call = call.clone();
    done_call["arguments"] = json!("{\"city\":\"Oslo\"}");
    done_call["status"] = json!("completed");
    vec![
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_9", "status": "in_progress", "model": "gpt-5", "output": []}}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {"type": "reasoning", "id": "rs_9", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "sequence_number": 2, "output_index": 0, "item_id": "rs_9", "summary_index": 0, "delta": "Think."}),
        json!({"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": reasoning}),
        json!({"type": "response.output_item.added", "sequence_number": 4, "output_index": 1, "item": {"type": "message", "id": "msg_9", "role": "assistant", "content": [], "status": "in_progress"}}),
        json!({"type": "response.output_text.delta", "sequence_number": 5, "output_index": 1, "item_id": "msg_9", "content_index": 0, "delta": "Let me "}),
        json!({"type": "response.output_text.delta", "sequence_number": 6, "output_index": 1, "item_id": "msg_9", "content_index": 0, "delta": "check."}),
        json!({"type": "response.output_item.done", "sequence_number": 7, "output_index": 1, "item": {"type": "message", "id": "msg_9", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}]}}),
        json!({"type": "response.output_item.added", "sequence_number": 8, "output_index": 2, "item": call}),
        json!({"type": "response.function_call_arguments.delta", "sequence_number": 9, "output_index": 2, "item_id": "fc_9", "delta": "{\"city\":"}),
        json!({"type": "response.function_call_arguments.delta", "sequence_number": 10, "output_index": 2, "item_id": "fc_9", "delta": "\"Oslo\"}"}),
        json!({"type": "response.function_call_arguments.done", "sequence_number": 11, "output_index": 2, "item_id": "fc_9", "arguments": "{\"city\":\"Oslo\"}"}),
        json!({"type": "response.output_item.done", "sequence_number": 12, "output_index": 2, "item": done_call}),
        json!({"type": "response.completed", "sequence_number": 13, "response": {"id": "resp_9", "status": "completed", "model": "gpt-5", "output": [],
            "usage": {"input_tokens": 20, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 4}, "total_tokens": 29}}}),
    ]
}

#[tokio::test]
async fn decodes_a_typed_event_stream() -> anyhow::Result<()> {
    let (r, deltas) = decode_sse(
        plan(Dialect::OpenAiResponses, false),
        &sse(&stream_events()),
    )
    .await;
    let r = r?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.model, "gpt-5");
    assert_eq!(
        (r.usage.input, r.usage.output, r.usage.reasoning),
        (20, 9, 4)
    );
    assert!(
        matches!(&r.content[0], ContentBlock::Thinking { thinking, signature }
        if thinking == "Think." && signature.contains("\"encrypted_content\":\"enc/9==\""))
    );
    assert_eq!(r.content[1], ContentBlock::text("Let me check."));
    assert_eq!(
        r.content[2],
        ContentBlock::tool_call("call_9", "get_weather", json!({"city": "Oslo"}))
    );
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Thinking("Think.".into()),
            StreamDelta::Text("Let me ".into()),
            StreamDelta::Text("check.".into()),
            StreamDelta::ToolCallStart {
                index: 0,
                id: "call_9".into(),
                name: "get_weather".into()
            },
            StreamDelta::ToolCallArguments {
                index: 0,
                fragment: "{\"city\":".into()
            },
            StreamDelta::ToolCallArguments {
                index: 0,
                fragment: "\"Oslo\"}".into()
            },
        ]
    );
    Ok(())
}

#[tokio::test]
async fn stream_errors_and_early_ends() -> anyhow::Result<()> {
    let p = plan(Dialect::OpenAiResponses, false);
    let events = stream_events();
    // Cut before any content: transient; after content: final.
    let (r, _) = decode_sse(p, &sse(&events[..2])).await;
    assert!(
        matches!(r, Err(Error::Retry(RetrySignal::Transient { .. }))),
        "{r:?}"
    );
    let (r, _) = decode_sse(p, &sse(&events[..6])).await;
    assert_eq!(
        r.map_err(|e| e.kind()).err(),
        Some(ErrorKind::ExternalService)
    );
    // An `error` event before content: classified by its code.
    let limited = json!({"type": "error", "sequence_number": 1, "code": "rate_limit_exceeded",
        "message": "Rate limit reached", "param": null});
    let (r, _) = decode_sse(p, &sse(&[events[0].clone(), limited])).await;
    assert!(
        matches!(r, Err(Error::Retry(RetrySignal::Throttled { .. }))),
        "{r:?}"
    );
    // `response.failed` after content: final, naming the provider's message.
    let failed = json!({"type": "response.failed", "sequence_number": 7, "response": {"status": "failed",
        "error": {"code": "server_error", "message": "boom at the provider"}}});
    let mut cut = events[..6].to_vec();
    cut.push(failed);
    let (r, _) = decode_sse(p, &sse(&cut)).await;
    let e = r.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ExternalService);
    assert!(e.to_string().contains("boom at the provider"), "{e}");
    Ok(())
}

#[test]
fn a_named_choice_and_none_are_written() -> anyhow::Result<()> {
    let mut req: ChatRequest = fixtures::with_tools();
    req.tool_choice = ToolChoice::None;
    assert_eq!(json_body(&encode(&target(), &req)?)?["tool_choice"], "none");
    req.tool_choice = ToolChoice::Required;
    assert_eq!(
        json_body(&encode(&target(), &req)?)?["tool_choice"],
        "required"
    );
    Ok(())
}
