//! Exact request bodies (snapshots) and decoding of realistic answers and streams.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::llm::message::{ContentBlock, MediaSource, Message, Role};
use crate::llm::tests::fixtures::{self, CANARY_KEY, decode_sse, plan};
use crate::llm::{
    ChatRequest, DecodePlan, Dialect, Reasoning, StopReason, StreamDelta, ToolChoice, decode,
    encode,
};
use crate::{Error, ErrorKind, RetrySignal};

fn encode_json(req: &ChatRequest, thinking: bool, native: bool) -> anyhow::Result<(String, Value)> {
    let t = fixtures::target(Dialect::Anthropic)
        .with_thinking(thinking)
        .with_native_tools(native);
    let enc = encode(&t, req)?;
    Ok((
        enc.body_str().to_owned(),
        serde_json::from_slice(&enc.body)?,
    ))
}

/// A signature and thinking text with characters that a careless re-encoding would change.
const SIGNATURE: &str = "EqQBCgIYAhIM+/=\u{2028}x\"y";
const THOUGHT: &str = "The user wants weather; call both tools.\n\t\u{e9}";

fn thinking_round() -> ChatRequest {
    let mut r = fixtures::tool_round();
    let messages = Arc::make_mut(&mut r.messages);
    messages[1] = Message::assistant(vec![
        ContentBlock::Thinking {
            thinking: THOUGHT.into(),
            signature: SIGNATURE.into(),
        },
        ContentBlock::RedactedThinking {
            data: "EmwKAhgBEgy3va==".into(),
        },
        ContentBlock::text("Checking."),
        ContentBlock::tool_call("toolu_01", "get_weather", json!({"city": "Boston"})),
        ContentBlock::tool_call("toolu_02", "get_time", json!({"city": "Boston"})),
    ]);
    messages[2] = Message::tool_results(vec![ContentBlock::tool_result(
        "toolu_01",
        "get_weather",
        "11C",
    )]);
    messages[3] = Message::tool_results(vec![ContentBlock::tool_error(
        "toolu_02", "get_time", "down",
    )]);
    r.reasoning = Reasoning::Tokens(2048);
    r.max_output_tokens = 4096;
    r
}

#[test]
fn plain_body() -> anyhow::Result<()> {
    let (body, v) = encode_json(&fixtures::plain(), false, true)?;
    insta::assert_snapshot!(body);
    assert_eq!(v["system"], "You are terse.");
    let enc = encode(&fixtures::target(Dialect::Anthropic), &fixtures::plain())?;
    assert_eq!(enc.url, "https://api.example.invalid/v1/messages");
    let names: Vec<_> = enc.headers.iter().map(|h| (h.name(), h.value())).collect();
    assert!(names.contains(&("anthropic-version", Some("2023-06-01"))));
    assert!(names.contains(&("x-api-key", None)));
    assert!(!format!("{enc:?}").contains(CANARY_KEY));
    Ok(())
}

#[test]
fn tools_body() -> anyhow::Result<()> {
    let mut req = fixtures::with_tools();
    req.tool_choice = ToolChoice::Required;
    req.stream = true;
    let (body, v) = encode_json(&req, false, true)?;
    insta::assert_snapshot!(body);
    assert_eq!(v["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        v["tools"][0]["input_schema"],
        *fixtures::weather_tool().parameters
    );
    Ok(())
}

#[test]
fn thinking_round_body_keeps_blocks_verbatim_and_batches_results() -> anyhow::Result<()> {
    let (body, v) = encode_json(&thinking_round(), true, true)?;
    insta::assert_snapshot!(body);
    let assistant = &v["messages"][1];
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE})
    );
    assert_eq!(assistant["content"][1]["type"], "redacted_thinking");
    assert_eq!(assistant["content"][3]["type"], "tool_use");
    // The two result turns travel as one user turn, results first, then the follow-up.
    let results = &v["messages"][2];
    assert_eq!(v["messages"].as_array().map(Vec::len), Some(3));
    let kinds: Vec<_> = results["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| b["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["tool_result", "tool_result", "text"]);
    assert_eq!(results["content"][1]["is_error"], true);
    assert!(results["content"][0].get("is_error").is_none());
    assert_eq!(
        v["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(v["max_tokens"], 4096 + 2048);
    Ok(())
}

#[test]
fn thinking_survives_a_decode_encode_round_trip_byte_identical() -> anyhow::Result<()> {
    let answer = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE},
            {"type": "redacted_thinking", "data": "EmwK/+=="},
            {"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": {"city": "Paris"}}
        ],
        "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}});
    let raw = answer.to_string();
    let r = decode(
        &DecodePlan {
            stream: false,
            ..plan(Dialect::Anthropic, false)
        },
        raw.as_bytes(),
    )?;
    let mut req = fixtures::with_tools();
    Arc::make_mut(&mut req.messages).push(r.to_message());
    Arc::make_mut(&mut req.messages).push(Message::tool_results(vec![ContentBlock::tool_result(
        "toolu_9",
        "get_weather",
        "ok",
    )]));
    req.reasoning = Reasoning::Tokens(1500);
    let (body, v) = encode_json(&req, true, true)?;
    // The strings come back exactly as the provider sent them, in the original order, first.
    let sent = &v["messages"][1]["content"];
    assert_eq!(sent[0], answer["content"][0]);
    assert_eq!(sent[1], answer["content"][1]);
    assert_eq!(sent[2]["type"], "tool_use");
    for s in [THOUGHT, SIGNATURE, "EmwK/+=="] {
        let literal = serde_json::to_string(s)?;
        assert!(body.contains(&literal), "{literal} not in {body}");
    }
    Ok(())
}

#[test]
fn thinking_budget_is_raised_and_forced_choice_falls_back() -> anyhow::Result<()> {
    let mut req = fixtures::with_tools();
    req.reasoning = Reasoning::Tokens(300);
    req.max_output_tokens = 1000;
    req.tool_choice = ToolChoice::Tool("get_weather".into());
    let (_, v) = encode_json(&req, true, true)?;
    assert_eq!(v["thinking"]["budget_tokens"], 1024);
    assert_eq!(v["max_tokens"], 2024);
    // Forced choice falls back to `auto`, the default, which is not written.
    assert!(v.get("tool_choice").is_none(), "{v}");
    // Without thinking support: no thinking parameter, the forced choice stays, and old thinking
    // blocks are not sent.
    let (_, v) = encode_json(&req, false, true)?;
    assert!(v.get("thinking").is_none());
    assert_eq!(
        v["tool_choice"],
        json!({"type": "tool", "name": "get_weather"})
    );
    let (_, v) = encode_json(&thinking_round(), false, true)?;
    assert_eq!(v["messages"][1]["content"][0]["type"], "text");
    Ok(())
}

#[test]
fn a_tool_turn_without_thinking_from_another_entry_goes_without_thinking() -> anyhow::Result<()> {
    // The tool round was served by an entry without thinking: its turn has no thinking block.
    let mut req = fixtures::tool_round();
    req.reasoning = Reasoning::Tokens(2048);
    req.max_output_tokens = 4096;
    let (_, v) = encode_json(&req, true, true)?;
    assert!(v.get("thinking").is_none(), "{v}");
    assert_eq!(v["max_tokens"], 4096);
    // The same round with its thinking blocks keeps thinking on.
    let (_, v) = encode_json(&thinking_round(), true, true)?;
    assert_eq!(v["thinking"]["budget_tokens"], 2048);
    Ok(())
}

#[test]
fn structured_output_and_effort_body() -> anyhow::Result<()> {
    let mut req = fixtures::structured();
    req.reasoning = Reasoning::Effort("high".into());
    let (body, v) = encode_json(&req, false, true)?;
    insta::assert_snapshot!(body);
    assert_eq!(v["output_config"]["effort"], "high");
    assert_eq!(v["output_config"]["format"]["type"], "json_schema");
    assert_eq!(
        v["output_config"]["format"]["schema"]["additionalProperties"],
        false
    );
    Ok(())
}

#[test]
fn text_tool_fallback_body() -> anyhow::Result<()> {
    let (body, v) = encode_json(&fixtures::tool_round(), false, false)?;
    insta::assert_snapshot!(body);
    assert!(v.get("tools").is_none() && v.get("tool_choice").is_none());
    let system = v["system"].as_str().unwrap_or_default();
    assert!(system.starts_with("You are terse.\n\n") && system.contains("\n<tools>\n["));
    assert_eq!(
        v["messages"][1]["content"][0]["text"],
        r#"Checking.
{"tool_calls":[{"name":"get_weather","arguments":{"city":"Boston","unit":null}},{"name":"get_time","arguments":{"city":"Boston"}}]}"#
    );
    Ok(())
}

#[test]
fn media_blocks_render() -> anyhow::Result<()> {
    let req = ChatRequest::new(
        "",
        vec![Message::new(
            Role::User,
            vec![
                ContentBlock::Image {
                    media_type: "image/png".into(),
                    source: MediaSource::Base64("iVBORw0KGgo=".into()),
                },
                ContentBlock::File {
                    media_type: "application/pdf".into(),
                    name: Some("report.pdf".into()),
                    source: MediaSource::Url("https://files.example.invalid/r.pdf".into()),
                },
                ContentBlock::text("Summarise."),
            ],
        )],
    );
    let (_, v) = encode_json(&req, false, true)?;
    assert!(v.get("system").is_none());
    assert_eq!(
        v["messages"][0]["content"],
        json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "document", "source": {"type": "url", "url": "https://files.example.invalid/r.pdf"}, "title": "report.pdf"},
            {"type": "text", "text": "Summarise."}
        ])
    );
    Ok(())
}

fn whole() -> DecodePlan {
    DecodePlan {
        stream: false,
        ..plan(Dialect::Anthropic, false)
    }
}

#[test]
fn decodes_answers_with_usage_unknown_blocks_and_stop_reasons() -> anyhow::Result<()> {
    let body = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
      "content":[{"type":"thinking","thinking":"hmm","signature":"sig"},
                 {"type":"server_tool_use","id":"srv_1","name":"web_search","input":{}},
                 {"type":"text","text":"Let me check.","citations":null},
                 {"type":"tool_use","id":"toolu_01D7","name":"get_weather","input":{"city":"Paris"}}],
      "stop_reason":"tool_use","stop_sequence":null,
      "usage":{"input_tokens":472,"output_tokens":89,"cache_creation_input_tokens":100,"cache_read_input_tokens":1800,
               "cache_creation":{"ephemeral_5m_input_tokens":0},"output_tokens_details":{"thinking_tokens":60},"service_tier":"standard"}}"#;
    let r = decode(&whole(), body.as_bytes())?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.content.len(), 3);
    assert_eq!(r.text(), "Let me check.");
    assert_eq!(r.tool_calls()[0].id, "toolu_01D7");
    assert_eq!(r.usage.input, 472 + 100 + 1800);
    assert_eq!(
        (r.usage.cached, r.usage.cache_creation, r.usage.reasoning),
        (1800, 100, 60)
    );
    for (wire, stop) in [
        ("end_turn", StopReason::EndTurn),
        ("max_tokens", StopReason::MaxTokens),
        ("stop_sequence", StopReason::StopSequence),
        ("refusal", StopReason::Refusal),
        ("pause_turn", StopReason::Other("pause_turn".into())),
        ("something_new", StopReason::Other("something_new".into())),
    ] {
        let b = json!({"type": "message", "model": "m", "content": [{"type": "text", "text": "x"}], "stop_reason": wire});
        assert_eq!(decode(&whole(), b.to_string().as_bytes())?.stop, stop);
    }
    let overloaded =
        br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    // An overload is transient (an outage, not a limit of the account).
    assert!(matches!(
        decode(&whole(), overloaded),
        Err(Error::Retry(RetrySignal::Transient { .. }))
    ));
    Ok(())
}

const STREAM: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" think."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking."}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}

event: brand_new_event
data: {"type":"brand_new_event","x":1}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

"#;

#[tokio::test]
async fn decodes_a_thinking_and_tool_stream() -> anyhow::Result<()> {
    let (r, deltas) = decode_sse(plan(Dialect::Anthropic, false), STREAM).await;
    let r = r?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.model, "claude-sonnet-4-5");
    assert_eq!(
        r.content,
        vec![
            ContentBlock::Thinking {
                thinking: "Let me think.".into(),
                signature: "EqQB".into()
            },
            ContentBlock::text("Checking."),
            ContentBlock::tool_call("toolu_1", "get_weather", json!({"city": "Paris"})),
            ContentBlock::tool_call("toolu_2", "get_time", json!({})),
        ]
    );
    assert_eq!((r.usage.input, r.usage.output), (472, 89));
    assert_eq!(
        deltas,
        vec![
            StreamDelta::Thinking("Let me".into()),
            StreamDelta::Thinking(" think.".into()),
            StreamDelta::Text("Checking.".into()),
            StreamDelta::ToolCallStart {
                index: 0,
                id: "toolu_1".into(),
                name: "get_weather".into()
            },
            StreamDelta::ToolCallArguments {
                index: 0,
                fragment: "{\"city\": \"Pa".into()
            },
            StreamDelta::ToolCallArguments {
                index: 0,
                fragment: "ris\"}".into()
            },
            StreamDelta::ToolCallStart {
                index: 1,
                id: "toolu_2".into(),
                name: "get_time".into()
            },
        ]
    );
    Ok(())
}

#[tokio::test]
async fn an_error_event_inside_a_200_stream_is_an_error() {
    let start = STREAM
        .split("event: content_block_start")
        .next()
        .unwrap_or_default();
    let sse = format!(
        "{start}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n"
    );
    let (r, _) = decode_sse(plan(Dialect::Anthropic, false), &sse).await;
    // After `message_start` but before any content the request may be sent again: the error is
    // classified like an HTTP failure (overloaded: transient).
    assert!(matches!(
        r,
        Err(Error::Retry(RetrySignal::Transient { .. }))
    ));
    // After content it is final: the request is never replayed.
    let first_delta = STREAM
        .split_inclusive("\n\n")
        .position(|e| e.contains("content_block_delta"))
        .unwrap_or_default();
    let head: String = STREAM
        .split_inclusive("\n\n")
        .take(first_delta + 1)
        .collect();
    let sse = format!(
        "{head}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}}}\n\n"
    );
    let (r, deltas) = decode_sse(plan(Dialect::Anthropic, false), &sse).await;
    assert!(!deltas.is_empty(), "content came first");
    assert_eq!(r.err().map(|e| e.kind()), Some(ErrorKind::ExternalService));
    let sse = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let (r, _) = decode_sse(plan(Dialect::Anthropic, false), sse).await;
    assert!(matches!(
        r,
        Err(Error::Retry(RetrySignal::Transient { .. }))
    ));
    // A stream cut off before any content is a transient failure: it may be sent again.
    let (r, _) = decode_sse(plan(Dialect::Anthropic, false), start).await;
    assert!(
        matches!(r, Err(Error::Retry(RetrySignal::Transient { .. }))),
        "{r:?}"
    );
}

#[tokio::test]
async fn truncated_tool_input_is_kept_raw_and_the_stop_stays_max_tokens() -> anyhow::Result<()> {
    let sse = r#"event: message_start
data: {"type":"message_start","message":{"model":"m","usage":{"input_tokens":5,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":50}}

event: message_stop
data: {"type":"message_stop"}

"#;
    let (r, _) = decode_sse(plan(Dialect::Anthropic, false), sse).await;
    let r = r?;
    assert_eq!(r.stop, StopReason::MaxTokens);
    assert_eq!(r.tool_calls()[0].arguments, &json!("{\"city\": \"Pa"));
    Ok(())
}

#[test]
fn odd_tool_schemas_and_a_format_without_effort() -> anyhow::Result<()> {
    let mut req = fixtures::tool_round();
    req.response = fixtures::structured().response;
    let mut odd = fixtures::time_tool();
    odd.parameters = Arc::new(json!("not a schema"));
    req.tools.push(odd);
    let enc = encode(&fixtures::target(Dialect::Anthropic), &req)?;
    let v: Value = serde_json::from_slice(&enc.body)?;
    // A schema that is not an object goes as the empty object schema.
    assert_eq!(
        v["tools"][2]["input_schema"],
        json!({"type": "object", "properties": {}})
    );
    // A structured answer without an effort: the format alone.
    assert_eq!(v["output_config"]["format"]["type"], "json_schema");
    assert!(v["output_config"].get("effort").is_none());
    Ok(())
}
