//! Exact request bodies (snapshots), decoding of realistic answers and streams, and thought
//! signatures carried across turns byte-identical.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::llm::message::{ContentBlock, MediaSource, Message, Role};
use crate::llm::tests::fixtures::{self, CANARY_KEY, decode_sse, plan};
use crate::llm::{
    ChatRequest, ChatResponse, DecodePlan, Dialect, Reasoning, StopReason, StreamDelta, ToolChoice,
    decode, encode,
};
use crate::{Error, ErrorKind, RetrySignal};

fn target(thinking: bool, native: bool) -> crate::llm::WireTarget {
    let mut t = fixtures::target(Dialect::Gemini)
        .with_thinking(thinking)
        .with_native_tools(native);
    t.base_url = "https://generativelanguage.example.invalid/v1beta/".into();
    t.model = "gemini-x".into();
    t
}

fn encode_json(req: &ChatRequest, thinking: bool, native: bool) -> anyhow::Result<(String, Value)> {
    let enc = encode(&target(thinking, native), req)?;
    Ok((
        enc.body_str().to_owned(),
        serde_json::from_slice(&enc.body)?,
    ))
}

fn whole() -> DecodePlan {
    DecodePlan {
        stream: false,
        ..plan(Dialect::Gemini, false)
    }
}

/// Signatures with characters that a careless re-encoding would change.
const SIG_CALL: &str = "CiQB0e2Kb+/=\u{2028}x\"y";
const SIG_TEXT: &str = "Cs8BAdHtim/+==";
const SIG_THOUGHT: &str = "EqQBCgIYAhIM+/=";
const THOUGHT: &str = "The user wants weather; call the tool.\n\t\u{e9}";

#[test]
fn plain_body_url_and_key_header() -> anyhow::Result<()> {
    let (body, v) = encode_json(&fixtures::plain(), false, true)?;
    insta::assert_snapshot!(body);
    assert_eq!(
        v["systemInstruction"],
        json!({"parts": [{"text": "You are terse."}]})
    );
    assert_eq!(v["contents"][0]["role"], "user");
    assert!(v.get("model").is_none(), "the model is in the URL: {v}");
    let enc = encode(&target(false, true), &fixtures::plain())?;
    assert_eq!(
        enc.url,
        "https://generativelanguage.example.invalid/v1beta/models/gemini-x:generateContent"
    );
    let names: Vec<_> = enc.headers.iter().map(|h| (h.name(), h.value())).collect();
    assert!(names.contains(&("x-goog-api-key", None)), "{names:?}");
    assert!(!enc.url.contains(CANARY_KEY) && !format!("{enc:?}").contains(CANARY_KEY));
    let mut req = fixtures::plain();
    req.stream = true;
    let enc = encode(&target(false, true), &req)?;
    assert_eq!(
        enc.url,
        "https://generativelanguage.example.invalid/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
    );
    assert!(enc.plan.stream);
    // A streamed body is the same body: streaming is chosen by the URL.
    assert_eq!(enc.body_str(), body);
    Ok(())
}

#[test]
fn tools_body_and_tool_choices() -> anyhow::Result<()> {
    let mut req = fixtures::with_tools();
    req.tool_choice = ToolChoice::Tool("get_weather".into());
    let (body, v) = encode_json(&req, false, true)?;
    insta::assert_snapshot!(body);
    let decl = &v["tools"][0]["functionDeclarations"];
    assert_eq!(decl[0]["name"], "get_weather");
    assert_eq!(
        decl[0]["parametersJsonSchema"],
        *fixtures::weather_tool().parameters
    );
    assert_eq!(
        v["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}})
    );
    for (choice, config) in [
        (ToolChoice::Auto, Value::Null),
        (
            ToolChoice::None,
            json!({"functionCallingConfig": {"mode": "NONE"}}),
        ),
        (
            ToolChoice::Required,
            json!({"functionCallingConfig": {"mode": "ANY"}}),
        ),
    ] {
        req.tool_choice = choice;
        let (_, v) = encode_json(&req, false, true)?;
        assert_eq!(v.get("toolConfig").cloned().unwrap_or(Value::Null), config);
    }
    // A schema that is not an object declares a function without parameters.
    let mut odd = fixtures::time_tool();
    odd.parameters = Arc::new(json!("not a schema"));
    req.tools.push(odd);
    let (_, v) = encode_json(&req, false, true)?;
    assert!(
        v["tools"][0]["functionDeclarations"][2]
            .get("parametersJsonSchema")
            .is_none()
    );
    Ok(())
}

#[test]
fn tool_round_body_answers_calls_with_function_responses() -> anyhow::Result<()> {
    let (body, v) = encode_json(&fixtures::tool_round(), false, true)?;
    insta::assert_snapshot!(body);
    let contents = v["contents"].as_array().cloned().unwrap_or_default();
    // user, model, then one user turn: both results first, then the follow-up.
    assert_eq!(contents.len(), 3);
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(
        contents[1]["parts"][1],
        json!({"functionCall": {"id": "call_a1", "name": "get_weather", "args": {"city": "Boston", "unit": null}}})
    );
    let user = &contents[2]["parts"];
    assert_eq!(
        user[0],
        json!({"functionResponse": {"id": "call_a1", "name": "get_weather", "response": {"output": "{\"temp_c\": 11}"}}})
    );
    assert_eq!(
        user[1]["functionResponse"]["response"],
        json!({"error": "time service unavailable"})
    );
    assert_eq!(user[2], json!({"text": "And tomorrow?"}));
    Ok(())
}

#[test]
fn minted_ids_stay_off_the_wire() -> anyhow::Result<()> {
    let mut req = fixtures::with_tools();
    let m = Arc::make_mut(&mut req.messages);
    m.push(Message::assistant(vec![ContentBlock::tool_call(
        "call_1",
        "get_weather",
        json!({"city": "Oslo"}),
    )]));
    m.push(Message::tool_results(vec![ContentBlock::tool_result(
        "call_1",
        "get_weather",
        "cold",
    )]));
    let (_, v) = encode_json(&req, false, true)?;
    assert_eq!(
        v["contents"][1]["parts"][0],
        json!({"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}})
    );
    assert_eq!(
        v["contents"][2]["parts"][0],
        json!({"functionResponse": {"name": "get_weather", "response": {"output": "cold"}}})
    );
    assert!(super::is_minted("call_12") && !super::is_minted("call_a1"));
    assert!(!super::is_minted("call_") && !super::is_minted("fc_1"));
    Ok(())
}

#[test]
fn structured_output_and_thinking_budget_body() -> anyhow::Result<()> {
    let mut req = fixtures::structured();
    req.reasoning = Reasoning::Tokens(2048);
    req.max_output_tokens = 1000;
    let (body, v) = encode_json(&req, true, true)?;
    insta::assert_snapshot!(body);
    let g = &v["generationConfig"];
    assert_eq!(g["responseMimeType"], "application/json");
    assert_eq!(
        g["responseJsonSchema"]["required"],
        json!(["vendor", "total_cents"])
    );
    assert_eq!(
        g["thinkingConfig"],
        json!({"thinkingBudget": 2048, "includeThoughts": true})
    );
    // Thinking counts toward the output cap.
    assert_eq!(g["maxOutputTokens"], 3048);
    // An effort name is a thinking level; a budget of 0 turns thinking off; a target without
    // thinking gets no thinking configuration at all.
    req.reasoning = Reasoning::Effort("low".into());
    let (_, v) = encode_json(&req, true, true)?;
    assert_eq!(
        v["generationConfig"]["thinkingConfig"],
        json!({"thinkingLevel": "low", "includeThoughts": true})
    );
    assert_eq!(v["generationConfig"]["maxOutputTokens"], 1000);
    req.reasoning = Reasoning::Tokens(0);
    let (_, v) = encode_json(&req, true, true)?;
    assert_eq!(
        v["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 0, "includeThoughts": false})
    );
    req.reasoning = Reasoning::Tokens(2048);
    let (_, v) = encode_json(&req, false, true)?;
    assert!(v["generationConfig"].get("thinkingConfig").is_none(), "{v}");
    assert_eq!(v["generationConfig"]["maxOutputTokens"], 1000);
    Ok(())
}

#[test]
fn text_tool_fallback_puts_tools_and_schema_in_the_system_instruction() -> anyhow::Result<()> {
    let mut req = fixtures::tool_round();
    req.response = fixtures::structured().response;
    let (_, v) = encode_json(&req, false, false)?;
    assert!(v.get("tools").is_none() && v.get("toolConfig").is_none());
    assert!(v["generationConfig"].get("responseJsonSchema").is_none());
    let system = v["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(system.starts_with("You are terse.\n\n") && system.contains("\n<tools>\n["));
    assert!(system.contains("total_cents"), "{system}");
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
    assert!(v.get("systemInstruction").is_none());
    assert_eq!(
        v["contents"][0]["parts"],
        json!([
            {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
            {"fileData": {"mimeType": "application/pdf", "fileUri": "https://files.example.invalid/r.pdf"}},
            {"text": "Summarise."}
        ])
    );
    Ok(())
}

/// A thinking answer as Gemini sends it: a thought summary, a signed text, a signed call and an
/// unsigned one, and a part the runtime does not model.
fn signed_answer() -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [
                {"text": THOUGHT, "thought": true, "thoughtSignature": SIG_THOUGHT},
                {"text": "Checking.", "thoughtSignature": SIG_TEXT},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": SIG_CALL},
                {"functionCall": {"id": "fc_7", "name": "get_time", "args": {"city": "Paris"}}}
            ]},
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 30, "thoughtsTokenCount": 50,
                          "cachedContentTokenCount": 64, "totalTokenCount": 200},
        "modelVersion": "gemini-x-001",
        "responseId": "r1"
    })
}

#[test]
fn decodes_parts_signatures_usage_and_finish_reasons() -> anyhow::Result<()> {
    let r = decode(&whole(), signed_answer().to_string().as_bytes())?;
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.model, "gemini-x-001");
    assert_eq!(
        r.content,
        vec![
            ContentBlock::Thinking {
                thinking: THOUGHT.into(),
                signature: format!("gemini:{SIG_THOUGHT}")
            },
            ContentBlock::RedactedThinking {
                data: format!("gemini:{SIG_TEXT}")
            },
            ContentBlock::text("Checking."),
            ContentBlock::RedactedThinking {
                data: format!("gemini:{SIG_CALL}")
            },
            // No id from the provider: one minted from the conversation's count.
            ContentBlock::tool_call("call_1", "get_weather", json!({"city": "Paris"})),
            ContentBlock::tool_call("fc_7", "get_time", json!({"city": "Paris"})),
        ]
    );
    assert_eq!(
        (
            r.usage.input,
            r.usage.output,
            r.usage.reasoning,
            r.usage.cached
        ),
        (120, 80, 50, 64)
    );
    for (wire, stop) in [
        ("STOP", StopReason::EndTurn),
        ("MAX_TOKENS", StopReason::MaxTokens),
        ("SAFETY", StopReason::Refusal),
        ("RECITATION", StopReason::Refusal),
        (
            "MALFORMED_FUNCTION_CALL",
            StopReason::Other("MALFORMED_FUNCTION_CALL".into()),
        ),
    ] {
        let b =
            json!({"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": wire}]});
        assert_eq!(decode(&whole(), b.to_string().as_bytes())?.stop, stop);
    }
    // A blocked prompt is a refusal, not a failure; nothing at all is an empty answer (asked
    // again once, on the unreadable-answer bound).
    let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}});
    let r = decode(&whole(), blocked.to_string().as_bytes())?;
    assert_eq!((r.stop, r.content.len()), (StopReason::Refusal, 0));
    for empty in [
        json!({}),
        json!({"candidates": [{"content": {"parts": []}}]}),
    ] {
        let r = decode(&whole(), empty.to_string().as_bytes());
        assert!(
            matches!(r, Err(Error::Retry(RetrySignal::UnreadableAnswer { .. }))),
            "{r:?}"
        );
    }
    let cut = json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather", "args": {}}}]}, "finishReason": "MAX_TOKENS"}]});
    assert_eq!(
        decode(&whole(), cut.to_string().as_bytes())?.stop,
        StopReason::MaxTokens
    );
    Ok(())
}

/// The answer of one turn appended to `req`, with results for its calls.
fn next_turn(req: &mut ChatRequest, answer: &ChatResponse) {
    let results: Vec<ContentBlock> = answer
        .tool_calls()
        .iter()
        .map(|c| ContentBlock::tool_result(c.id, c.name, "ok"))
        .collect();
    let m = Arc::make_mut(&mut req.messages);
    m.push(answer.to_message());
    m.push(Message::tool_results(results));
}

#[test]
fn thought_signatures_survive_two_turns_byte_identical() -> anyhow::Result<()> {
    let answer = signed_answer();
    let first = decode(&whole(), answer.to_string().as_bytes())?;
    let mut req = fixtures::with_tools();
    req.reasoning = Reasoning::Tokens(1024);
    next_turn(&mut req, &first);
    let enc = encode(&target(true, true), &req)?;
    let body = enc.body_str().to_owned();
    insta::assert_snapshot!(body);
    let v: Value = serde_json::from_str(&body)?;
    // The model turn goes back part for part as the provider sent it (minus the minted id).
    let sent = &v["contents"][1]["parts"];
    let received = &answer["candidates"][0]["content"]["parts"];
    assert_eq!(sent[0], received[0]);
    assert_eq!(sent[1], received[1]);
    assert_eq!(sent[2], received[2]);
    assert_eq!(sent[3], received[3]);
    assert_eq!(sent.as_array().map(Vec::len), Some(4));
    for s in [THOUGHT, SIG_THOUGHT, SIG_TEXT, SIG_CALL] {
        let literal = serde_json::to_string(s)?;
        assert!(body.contains(&literal), "{literal} not in {body}");
    }
    // The second answer's ids continue the conversation's numbering; its signature, too, goes
    // back on the third request while the first turn's stay where they were.
    let second = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}, "thoughtSignature": "U2Vjb25k+/"}
    ]}, "finishReason": "STOP"}]});
    let plan = encode(&target(true, true), &req)?.plan;
    assert_eq!(plan.next_call_number, 3);
    let second = decode(
        &DecodePlan {
            stream: false,
            ..plan
        },
        second.to_string().as_bytes(),
    )?;
    assert_eq!(second.tool_calls()[0].id, "call_3");
    next_turn(&mut req, &second);
    let third: Value = serde_json::from_slice(&encode(&target(true, true), &req)?.body)?;
    assert_eq!(third["contents"][1]["parts"], *received);
    assert_eq!(
        third["contents"][3]["parts"][0],
        json!({"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}, "thoughtSignature": "U2Vjb25k+/"})
    );
    // The same conversation renders the same bytes (the response cache relies on it).
    assert_eq!(
        encode(&target(true, true), &req)?.body,
        encode(&target(true, true), &req)?.body
    );
    Ok(())
}

#[test]
fn a_lone_signature_goes_back_as_an_empty_text_part() -> anyhow::Result<()> {
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Done."}, {"text": "", "thoughtSignature": SIG_TEXT}
    ]}, "finishReason": "STOP"}]});
    let r = decode(&whole(), answer.to_string().as_bytes())?;
    let mut req = fixtures::plain();
    Arc::make_mut(&mut req.messages).push(r.to_message());
    Arc::make_mut(&mut req.messages).push(Message::user_text("Thanks."));
    let (_, v) = encode_json(&req, true, true)?;
    assert_eq!(
        v["contents"][1]["parts"],
        answer["candidates"][0]["content"]["parts"]
    );
    Ok(())
}

#[test]
fn retry_info_delays_are_read_from_error_bodies() {
    let body = br#"{"error": {"code": 429, "message": "You exceeded your current quota.", "status": "RESOURCE_EXHAUSTED",
      "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
                  {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}]}}"#;
    assert_eq!(super::retry_delay(body), Some(Duration::from_secs(17)));
    let frac = br#"{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.250s"}]}}"#;
    assert_eq!(super::retry_delay(frac), Some(Duration::from_millis(250)));
    for none in [
        &br#"{"error": {"code": 429, "details": []}}"#[..],
        br#"{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "soon"}]}}"#,
        br#"{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "-3s"}]}}"#,
        b"not json",
    ] {
        assert_eq!(super::retry_delay(none), None);
    }
    // The error object's `status` names the failure when there is no `type`.
    let said = crate::llm::errors::ProviderError::from_body(body);
    assert_eq!(said.kind.as_deref(), Some("RESOURCE_EXHAUSTED"));
    assert_eq!(said.code.as_deref(), Some("429"));
}

#[test]
fn quota_failures_state_their_per_minute_figures() {
    // As Gemini answers a refused request: each quota broken, with its figure per minute.
    let body = br#"{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
      "message": "You exceeded your current quota, please check your plan and billing details.",
      "details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
          {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
           "quotaId": "GenerateContentInputTokensPerModelPerMinute-FreeTier",
           "quotaDimensions": {"model": "gemini-2.0-flash", "location": "global"}, "quotaValue": "16000"},
          {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
           "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "quotaValue": "15"},
          {"quotaId": "GenerateRequestsPerMinutePerProjectPerModel", "quotaValue": 10},
          {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "quotaValue": "200"},
          {"quotaId": "GenerateContentOutputTokensPerModelPerMinute", "quotaValue": "4000"}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "28s"}]}}"#;
    let stated = super::quota_limits(body).expect("the quotas state figures");
    assert_eq!(stated.input_tokens.limit, Some(16_000));
    // Two request quotas per minute: the lower binds. The per-day one is no rate.
    assert_eq!(stated.requests.limit, Some(10));
    assert_eq!(stated.output_tokens.limit, Some(4_000));
    assert_eq!(stated.tokens.limit, None);
    assert_eq!(stated.requests.remaining, None);
    let total = br#"{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
      "violations": [{"quotaId": "GenerateContentTokensPerModelPerMinute", "quotaValue": "150000"}]}]}}"#;
    assert_eq!(
        super::quota_limits(total).map(|s| s.tokens.limit),
        Some(Some(150_000))
    );
    // Nothing to pace at: no figure, a figure of 0 (no access), another period, concurrency,
    // no QuotaFailure, not JSON.
    for none in [
        &br#"{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
            {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
             "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]}]}}"#[..],
        br#"{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
            {"quotaId": "GenerateRequestsPerMinutePerProjectPerModel", "quotaValue": "0"},
            {"quotaId": "GenerateRequestsPerDayPerProjectPerModel", "quotaValue": "100"},
            {"quotaId": "GenerateContentConcurrentRequestsPerMinute", "quotaValue": "5"},
            {"quotaId": "GenerateRequestsPerMinutePerProjectPerModel", "quotaValue": "many"}]}]}}"#,
        br#"{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1s"}]}}"#,
        b"<html>busy</html>",
    ] {
        assert_eq!(super::quota_limits(none), None);
    }
}

#[test]
fn an_error_in_a_200_body_is_classified() {
    let body = br#"{"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}}"#;
    assert!(matches!(
        decode(&whole(), body),
        Err(Error::Retry(RetrySignal::Transient { .. }))
    ));
    let body = br#"{"error": {"code": 400, "message": "Invalid JSON payload received.", "status": "INVALID_ARGUMENT"}}"#;
    let e = decode(&whole(), body).unwrap_err();
    assert!(e.to_string().contains("Invalid JSON payload"), "{e}");
}

#[test]
fn a_bad_request_names_the_violated_field() {
    let body = br#"{"error": {"code": 400, "message": "Invalid value.", "status": "INVALID_ARGUMENT",
      "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                   "fieldViolations": [{"field": "generationConfig.maxOutputTokens", "description": "too large"}]}]}}"#;
    let said = crate::llm::errors::ProviderError::from_body(body);
    assert_eq!(
        said.param.as_deref(),
        Some("generationConfig.maxOutputTokens")
    );
    assert_eq!(said.kind.as_deref(), Some("INVALID_ARGUMENT"));
    let plain = br#"{"error": {"code": 400, "message": "x", "status": "INVALID_ARGUMENT"}}"#;
    assert_eq!(
        crate::llm::errors::ProviderError::from_body(plain).param,
        None
    );
}

#[test]
fn thinking_crosses_no_dialect_border() -> anyhow::Result<()> {
    // A Gemini turn (thoughts and signatures) then an Anthropic turn (a signed thinking block and
    // redacted thinking), both with calls, in one conversation served by entries of one grade.
    let gemini_turn = decode(&whole(), signed_answer().to_string().as_bytes())?;
    let mut req = fixtures::with_tools();
    req.reasoning = Reasoning::Tokens(1024);
    next_turn(&mut req, &gemini_turn);
    let m = Arc::make_mut(&mut req.messages);
    m.push(Message::assistant(vec![
        ContentBlock::Thinking {
            thinking: "Anthropic's own.".into(),
            signature: "EqQBanthropic".into(),
        },
        ContentBlock::RedactedThinking {
            data: "EmwKanthropic".into(),
        },
        ContentBlock::tool_call("toolu_1", "get_time", json!({"city": "Rome"})),
    ]));
    m.push(Message::tool_results(vec![ContentBlock::tool_result(
        "toolu_1", "get_time", "noon",
    )]));
    // To Gemini: its own parts go back; Anthropic's blocks do not.
    let (body, v) = encode_json(&req, true, true)?;
    assert!(
        !body.contains("anthropic") && !body.contains("Anthropic's own"),
        "{body}"
    );
    assert_eq!(
        v["contents"][1]["parts"],
        signed_answer()["candidates"][0]["content"]["parts"]
    );
    assert_eq!(
        v["contents"][3]["parts"],
        json!([{"functionCall": {"id": "toolu_1", "name": "get_time", "args": {"city": "Rome"}}}])
    );
    // To Anthropic: Gemini's thoughts and signatures are never sent; Anthropic's blocks are.
    let t = fixtures::target(Dialect::Anthropic).with_thinking(true);
    let body = encode(&t, &req)?.body_str().to_owned();
    for sig in [SIG_THOUGHT, SIG_TEXT] {
        assert!(!body.contains(&serde_json::to_string(sig)?), "{body}");
    }
    assert!(
        !body.contains("gemini:") && !body.contains("call the tool"),
        "{body}"
    );
    assert!(
        body.contains("EqQBanthropic") && body.contains("EmwKanthropic"),
        "{body}"
    );
    Ok(())
}

/// Streamed answers: thoughts, text and calls event by event; streams that end early or carry errors.
mod stream;
