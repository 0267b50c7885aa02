//! Exact request bodies (snapshots), signing at send time, decoding of whole answers, errors and
//! event-stream frames, and reasoning carried across turns byte-identical.

use std::sync::Arc;

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header as FrameHeader, HeaderValue, Message as Frame};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::AwsSigning;
use crate::llm::message::{ContentBlock, Message};
use crate::llm::tests::fixtures::{self, plan};
use crate::llm::{
    ApiKey, ChatRequest, DecodePlan, Dialect, Reasoning, StopReason, StreamDecoder, StreamDelta,
    ToolChoice, WireTarget, decode, encode,
};
use crate::{Error, RetrySignal};

const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYCANARYKEY";
const MODEL: &str = "anthropic.claude-sonnet-4-v1:0";

/// A signature and reasoning text with characters that a careless re-encoding would change.
const SIGNATURE: &str = "EqQBCgIYAhIM+/=\u{2028}x\"y";
const THOUGHT: &str = "The user wants weather; call both tools.\n\t\u{e9}";

fn target(thinking: bool, native: bool) -> WireTarget {
    WireTarget::new(
        Dialect::BedrockConverse,
        "https://bedrock-runtime.us-east-1.amazonaws.com",
        MODEL,
    )
    .with_thinking(thinking)
    .with_native_tools(native)
    .with_aws_signing(AwsSigning::new(
        "us-east-1",
        "AKIDEXAMPLE",
        ApiKey::new(SECRET),
        None,
    ))
}

fn encode_json(req: &ChatRequest, thinking: bool, native: bool) -> anyhow::Result<(String, Value)> {
    let enc = encode(&target(thinking, native), req)?;
    Ok((
        enc.body_str().to_owned(),
        serde_json::from_slice(&enc.body)?,
    ))
}

fn thinking_round() -> ChatRequest {
    let mut r = fixtures::tool_round();
    let messages = Arc::make_mut(&mut r.messages);
    messages[1] = Message::assistant(vec![
        ContentBlock::text("Checking."),
        ContentBlock::Thinking {
            thinking: THOUGHT.into(),
            signature: SIGNATURE.into(),
        },
        ContentBlock::RedactedThinking {
            data: "EmwKAhgBEgy3va==".into(),
        },
        ContentBlock::tool_call("tooluse_01", "get_weather", json!({"city": "Boston"})),
        ContentBlock::tool_call("tooluse_02", "get_time", json!({"city": "Boston"})),
    ]);
    messages[2] = Message::tool_results(vec![ContentBlock::tool_result(
        "tooluse_01",
        "get_weather",
        "{\"temp_c\": 11}",
    )]);
    messages[3] = Message::tool_results(vec![ContentBlock::tool_error(
        "tooluse_02",
        "get_time",
        "down",
    )]);
    r.reasoning = Reasoning::Tokens(2048);
    r.max_output_tokens = 4096;
    r
}

#[test]
fn plain_body() -> anyhow::Result<()> {
    let (body, v) = encode_json(&fixtures::plain(), false, true)?;
    insta::assert_snapshot!(body);
    assert_eq!(v["system"], json!([{"text": "You are terse."}]));
    assert_eq!(v["inferenceConfig"], json!({"maxTokens": 4096}));
    let enc = encode(&target(false, true), &fixtures::plain())?;
    // The model id is percent-encoded into the path.
    assert_eq!(
        enc.url,
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-sonnet-4-v1%3A0/converse"
    );
    assert_eq!(super::model_of_url(&enc.url).as_deref(), Some(MODEL));
    let shown = format!("{enc:?}");
    assert!(
        !shown.contains("CANARY") && shown.contains("signed when sent"),
        "{shown}"
    );
    Ok(())
}

#[test]
fn the_signature_is_made_at_send_time_over_the_exact_body() -> anyhow::Result<()> {
    let enc = encode(&target(false, true), &fixtures::plain())?;
    let headers: HeaderMap = crate::llm::http::request_headers(&enc)?;
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
            && auth.contains("/us-east-1/bedrock/aws4_request")
            && auth.contains("SignedHeaders=content-type;host;x-amz-date"),
        "{auth}"
    );
    assert!(
        headers
            .get("authorization")
            .is_some_and(|v| v.is_sensitive())
    );
    assert!(headers.get("x-amz-date").is_some());
    // The secret key is one of the request's secrets: the redactor takes it out of any text.
    let redactor = crate::llm::redact::Redactor::for_request(&enc);
    assert_eq!(redactor.text(&format!("echo {SECRET}")), "echo <redacted>");
    // A Bedrock API key is sent as a bearer token instead of signing.
    let keyed = target(false, true).with_key(ApiKey::new("bedrock-api-key-CANARY"));
    let headers = crate::llm::http::request_headers(&encode(&keyed, &fixtures::plain())?)?;
    assert_eq!(
        headers.get("authorization").and_then(|v| v.to_str().ok()),
        Some("Bearer bedrock-api-key-CANARY")
    );
    assert!(headers.get("x-amz-date").is_none());
    Ok(())
}

#[test]
fn tools_body() -> anyhow::Result<()> {
    let mut req = fixtures::with_tools();
    req.tool_choice = ToolChoice::Required;
    req.stream = true;
    let (body, v) = encode_json(&req, false, true)?;
    insta::assert_snapshot!(body);
    assert_eq!(v["toolConfig"]["toolChoice"], json!({"any": {}}));
    assert_eq!(
        v["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"],
        *fixtures::weather_tool().parameters
    );
    // Streaming changes the endpoint, not the body.
    let enc = encode(&target(false, true), &req)?;
    assert!(enc.url.ends_with("/converse-stream"), "{}", enc.url);
    req.stream = false;
    assert_eq!(encode(&target(false, true), &req)?.body_str(), body);
    // `none` leaves the tools out of a fresh conversation.
    req.tool_choice = ToolChoice::None;
    let (_, v) = encode_json(&req, false, true)?;
    assert!(v.get("toolConfig").is_none(), "{v}");
    Ok(())
}

#[test]
fn thinking_round_body_keeps_reasoning_verbatim_and_batches_results() -> anyhow::Result<()> {
    let (body, v) = encode_json(&thinking_round(), true, true)?;
    insta::assert_snapshot!(body);
    let assistant = &v["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"reasoningContent": {"reasoningText": {"text": THOUGHT, "signature": SIGNATURE}}})
    );
    assert_eq!(
        assistant[1],
        json!({"reasoningContent": {"redactedContent": "EmwKAhgBEgy3va=="}})
    );
    assert_eq!(assistant[2], json!({"text": "Checking."}));
    assert_eq!(assistant[3]["toolUse"]["toolUseId"], "tooluse_01");
    // The two result turns travel as one user turn, results first, then the follow-up.
    assert_eq!(v["messages"].as_array().map(Vec::len), Some(3));
    let results = &v["messages"][2]["content"];
    assert_eq!(
        results[0],
        json!({"toolResult": {"toolUseId": "tooluse_01", "content": [{"json": {"temp_c": 11}}]}})
    );
    assert_eq!(
        results[1],
        json!({"toolResult": {"toolUseId": "tooluse_02", "content": [{"text": "down"}], "status": "error"}})
    );
    assert_eq!(results[2], json!({"text": "And tomorrow?"}));
    assert_eq!(
        v["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 2048}})
    );
    assert_eq!(v["inferenceConfig"]["maxTokens"], 4096 + 2048);
    // Without thinking support, reasoning is not sent back and no thinking is asked for.
    let (_, v) = encode_json(&thinking_round(), false, true)?;
    assert_eq!(v["messages"][1]["content"][0], json!({"text": "Checking."}));
    assert!(v.get("additionalModelRequestFields").is_none());
    Ok(())
}

#[test]
fn structured_output_and_effort_body() -> anyhow::Result<()> {
    let mut req = fixtures::structured();
    req.reasoning = Reasoning::Effort("high".into());
    let (body, v) = encode_json(&req, false, true)?;
    insta::assert_snapshot!(body);
    assert_eq!(v["outputConfig"]["effort"], "high");
    let format = &v["outputConfig"]["textFormat"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["structure"]["jsonSchema"]["name"], "invoice");
    // The schema travels as JSON text, objects closed.
    let schema: Value = serde_json::from_str(
        format["structure"]["jsonSchema"]["schema"]
            .as_str()
            .unwrap_or_default(),
    )?;
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["vendor", "total_cents"]));
    Ok(())
}

/// A Converse answer with reasoning, redacted reasoning and a tool call.
fn tool_answer() -> Value {
    json!({
        "output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": THOUGHT, "signature": SIGNATURE}}},
            {"reasoningContent": {"redactedContent": "EmwK/+=="}},
            {"text": "Let me check."},
            {"toolUse": {"toolUseId": "tooluse_9", "name": "get_weather", "input": {"city": "Paris"}}}
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 27,
                  "cacheReadInputTokens": 8, "cacheWriteInputTokens": 4},
        "metrics": {"latencyMs": 120}
    })
}

fn whole() -> DecodePlan {
    DecodePlan {
        stream: false,
        ..plan(Dialect::BedrockConverse, false)
    }
}

#[test]
fn a_whole_answer_is_decoded() -> anyhow::Result<()> {
    let r = decode(&whole(), tool_answer().to_string().as_bytes())?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.text(), "Let me check.");
    assert_eq!(r.tool_calls()[0].id, "tooluse_9");
    assert_eq!(r.tool_calls()[0].arguments, &json!({"city": "Paris"}));
    assert_eq!(
        r.content[0],
        ContentBlock::Thinking {
            thinking: THOUGHT.into(),
            signature: SIGNATURE.into()
        }
    );
    assert_eq!(r.usage.input, 22);
    assert_eq!(r.usage.output, 5);
    assert_eq!(r.usage.cached, 8);
    assert_eq!(r.usage.cache_creation, 4);
    let cut = json!({"output": {"message": {"role": "assistant", "content": [{"text": "Hal"}]}},
        "stopReason": "max_tokens", "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}});
    assert_eq!(
        decode(&whole(), cut.to_string().as_bytes())?.stop,
        StopReason::MaxTokens
    );
    let empty = json!({"output": {"message": {"role": "assistant", "content": []}}});
    let e = decode(&whole(), empty.to_string().as_bytes()).unwrap_err();
    // An empty answer: asked again on the unreadable-answer bound (once), not on the transient one.
    assert!(
        matches!(e, Error::Retry(RetrySignal::UnreadableAnswer { .. })),
        "{e:?}"
    );
    Ok(())
}

#[test]
fn reasoning_survives_a_multi_turn_tool_conversation_byte_identical() -> anyhow::Result<()> {
    let answer = tool_answer();
    let first = decode(&whole(), answer.to_string().as_bytes())?;
    let mut req = fixtures::with_tools();
    req.reasoning = Reasoning::Tokens(1500);
    Arc::make_mut(&mut req.messages).push(first.to_message());
    Arc::make_mut(&mut req.messages).push(Message::tool_results(vec![ContentBlock::tool_result(
        "tooluse_9",
        "get_weather",
        "sunny",
    )]));
    let (body, v) = encode_json(&req, true, true)?;
    // Turn two sends the reasoning back exactly as it came, first, in its order.
    let sent = &v["messages"][1]["content"];
    let got = &answer["output"]["message"]["content"];
    assert_eq!(sent[0], got[0]);
    assert_eq!(sent[1], got[1]);
    assert_eq!(sent[2], got[2]);
    assert_eq!(sent[3], got[3]);
    for s in [THOUGHT, SIGNATURE, "EmwK/+=="] {
        let literal = serde_json::to_string(s)?;
        assert!(body.contains(&literal), "{literal} not in {body}");
    }
    // Turn three: the second answer's reasoning joins the first's, both still verbatim.
    let second = json!({"output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Sunny: answer.", "signature": "c2lnMg=="}}},
            {"text": "It is sunny."}]}},
        "stopReason": "end_turn", "usage": {"inputTokens": 30, "outputTokens": 6, "totalTokens": 36}});
    let second = decode(&whole(), second.to_string().as_bytes())?;
    Arc::make_mut(&mut req.messages).push(second.to_message());
    Arc::make_mut(&mut req.messages).push(Message::user_text("Thanks. And Rome?"));
    let (_, v) = encode_json(&req, true, true)?;
    assert_eq!(v["messages"][1]["content"][0], got[0]);
    assert_eq!(
        v["messages"][3]["content"][0],
        json!({"reasoningContent": {"reasoningText": {"text": "Sunny: answer.", "signature": "c2lnMg=="}}})
    );
    Ok(())
}

#[test]
fn bedrock_errors_are_read_from_the_header_and_the_body() {
    let mut headers = HeaderMap::new();
    headers.insert(
        "x-amzn-errortype",
        "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"
            .parse()
            .unwrap_or_else(|_| unreachable!()),
    );
    let e = super::decode::provider_error(
        &headers,
        br#"{"message":"Too many requests, please wait before trying again."}"#,
    );
    assert_eq!(e.kind.as_deref(), Some("ThrottlingException"));
    assert!(e.message.starts_with("Too many requests"));
    let e = super::decode::provider_error(
        &HeaderMap::new(),
        br#"{"__type":"com.amazon.coral.validate#ValidationException","message":"bad"}"#,
    );
    assert_eq!(e.kind.as_deref(), Some("ValidationException"));
}

#[test]
fn bedrock_exceptions_map_onto_the_hierarchy_naming_entry_and_url() -> anyhow::Result<()> {
    use crate::ErrorKind;
    use crate::llm::errors::{Origin, ProviderError};
    let enc = encode(&target(false, true), &fixtures::plain())?;
    let origin = Origin::new(&enc, Some("bedrock"), Some("claude-small"));
    let said = |kind: &str, message: &str| {
        ProviderError::from_error_object(&json!({"type": kind, "message": message}))
    };
    let throttled = origin.refusal(
        429,
        &said("ThrottlingException", "Too many tokens"),
        None,
        None,
        None,
    );
    assert!(
        matches!(throttled, Error::Retry(RetrySignal::Throttled { .. })),
        "{throttled:?}"
    );
    let not_ready = origin.refusal(
        429,
        &said("ModelNotReadyException", "warming"),
        None,
        None,
        None,
    );
    assert!(
        matches!(not_ready, Error::Retry(RetrySignal::Transient { .. })),
        "{not_ready:?}"
    );
    let unavailable = origin.refusal(
        503,
        &said("ServiceUnavailableException", "busy"),
        None,
        None,
        None,
    );
    assert!(matches!(
        unavailable,
        Error::Retry(RetrySignal::Transient { .. })
    ));
    let quota = origin.refusal(
        400,
        &said("ServiceQuotaExceededException", "quota"),
        None,
        None,
        None,
    );
    assert_eq!(quota.kind(), ErrorKind::ExternalService);
    assert!(quota.to_string().contains("quota"), "{quota}");
    let invalid = origin.refusal(
        400,
        &said("ValidationException", "bad input"),
        None,
        None,
        None,
    );
    assert_eq!(invalid.kind(), ErrorKind::InvalidInput);
    let denied = origin.refusal(
        403,
        &said("AccessDeniedException", "no access"),
        None,
        None,
        None,
    );
    assert_eq!(denied.kind(), ErrorKind::ExternalService);
    for e in [&invalid, &denied, &quota] {
        let text = e.to_string();
        assert!(
            text.contains("claude-small")
                && text.contains("/model/anthropic.claude-sonnet-4-v1%3A0/converse"),
            "{text}"
        );
    }
    // A 404 names the model from the path, not the body.
    let missing = origin.refusal(
        404,
        &said("ResourceNotFoundException", "model not found"),
        None,
        None,
        crate::llm::http::model_of(&enc).as_deref(),
    );
    assert!(missing.to_string().contains(MODEL), "{missing}");
    Ok(())
}

/// converse-stream: event-stream frames decoded frame by frame; exceptions and early ends classified.
mod stream;
