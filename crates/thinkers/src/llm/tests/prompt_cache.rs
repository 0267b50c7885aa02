//! Prompt caching on each dialect: the breakpoints Anthropic and Bedrock are sent, OpenAI's
//! `prompt_cache_key`, their absence with the catalog switch off, the cap of four, and the cache
//! counts every dialect's answers carry (whole and streamed).

use std::sync::Arc;

use serde_json::{Value, json};

use super::fixtures;
use crate::llm::message::{ContentBlock, Message};
use crate::llm::{
    CacheTtl, ChatRequest, ChatResponse, DecodePlan, Dialect, PromptCache, StreamDecoder, ToolSpec,
    Usage, WireTarget, decode, encode,
};

/// A request whose every part is long enough to cache: a long system content, two tools with
/// long descriptions, and a conversation of five turns (a tool round, then a follow-up).
fn long_conversation() -> ChatRequest {
    let long = |what: &str| format!("{what} ").repeat(200);
    let mut r = ChatRequest::new(
        long("You are a careful assistant."),
        vec![
            Message::user_text(long("Read this report.")),
            Message::assistant(vec![
                ContentBlock::text("Looking it up."),
                ContentBlock::tool_call("call_1", "lookup", json!({"q": "report"})),
            ]),
            Message::tool_results(vec![ContentBlock::tool_result(
                "call_1",
                "lookup",
                long("Row of the report."),
            )]),
            Message::assistant(vec![ContentBlock::text("Done reading.")]),
            Message::user_text("Summarise it."),
        ],
    );
    r.tools = vec![
        ToolSpec {
            description: long("Looks things up.").into(),
            name: "lookup".into(),
            ..fixtures::weather_tool()
        },
        ToolSpec {
            description: long("Tells the time.").into(),
            ..fixtures::time_tool()
        },
    ];
    r
}

fn body(target: &WireTarget, req: &ChatRequest) -> anyhow::Result<Value> {
    Ok(serde_json::from_slice(&encode(target, req)?.body)?)
}

/// Every `cache_control` (Anthropic) or `cachePoint` (Bedrock) in a body, by JSON pointer.
fn markers(v: &Value, key: &str, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let here = format!("{at}/{k}");
                if k == key {
                    out.push(here.clone());
                }
                markers(child, key, &here, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                markers(child, key, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn all(v: &Value, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    markers(v, key, "", &mut out);
    out
}

#[test]
fn anthropic_marks_tools_system_and_the_last_two_user_turns() -> anyhow::Result<()> {
    let target = fixtures::target(Dialect::Anthropic);
    let v = body(&target, &long_conversation())?;
    // Turns: user, assistant, user (tool result), assistant, user: the previous user turn is 2.
    assert_eq!(
        all(&v, "cache_control"),
        [
            "/messages/2/content/0/cache_control",
            "/messages/4/content/0/cache_control",
            "/system/0/cache_control",
            "/tools/1/cache_control",
        ]
    );
    assert_eq!(v["tools"][1]["cache_control"], json!({"type": "ephemeral"}));
    // The system content becomes one text block carrying the breakpoint.
    assert_eq!(v["system"][0]["type"], "text");
    assert!(
        v["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("You are")
    );
    assert_eq!(v["messages"][4]["content"][0]["text"], "Summarise it.");
    assert!(v["tools"][0].get("cache_control").is_none());

    // The hour TTL is written; five minutes (the default) is not.
    let hour = target
        .clone()
        .with_prompt_cache(PromptCache::On(CacheTtl::OneHour));
    let v = body(&hour, &long_conversation())?;
    assert_eq!(
        v["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    assert_eq!(all(&v, "cache_control").len(), 4);

    // Switched off: no marker, and the system content stays a plain string.
    let off = target.with_prompt_cache(PromptCache::Off);
    let v = body(&off, &long_conversation())?;
    assert!(all(&v, "cache_control").is_empty(), "{v}");
    assert!(v["system"].is_string());
    Ok(())
}

#[test]
fn anthropic_never_sends_more_than_four_breakpoints_nor_marks_a_short_prefix() -> anyhow::Result<()>
{
    let target = fixtures::target(Dialect::Anthropic);
    // A longer conversation still gets four: tools, system, the previous and the last user turn.
    let mut req = long_conversation();
    let messages = Arc::make_mut(&mut req.messages);
    for i in 0..6 {
        messages.push(Message::assistant(vec![ContentBlock::text(format!(
            "a{i}"
        ))]));
        messages.push(Message::user_text(format!("question {i} ").repeat(100)));
    }
    let v = body(&target, &req)?;
    let found = all(&v, "cache_control");
    assert_eq!(found.len(), 4, "{found:?}");
    let last = v["messages"].as_array().unwrap().len() - 1;
    assert!(found.contains(&format!("/messages/{last}/content/0/cache_control")));
    assert!(found.contains(&format!("/messages/{}/content/0/cache_control", last - 2)));

    // A prefix shorter than the minimum (1,024 tokens, so at most that many bytes) is not marked.
    let v = body(&target, &fixtures::tool_round())?;
    assert!(all(&v, "cache_control").is_empty(), "{v}");
    Ok(())
}

#[test]
fn anthropic_never_marks_a_thinking_block() -> anyhow::Result<()> {
    let target = fixtures::target(Dialect::Anthropic).with_thinking(true);
    let mut req = long_conversation();
    // An assistant prefill holding only a signed thinking block, then text: the text is marked.
    Arc::make_mut(&mut req.messages).push(Message::assistant(vec![
        ContentBlock::Thinking {
            thinking: "hmm ".repeat(400),
            signature: "sig".into(),
        },
        ContentBlock::text("So"),
    ]));
    let v = body(&target, &req)?;
    let last = v["messages"].as_array().unwrap().len() - 1;
    assert_eq!(v["messages"][last]["content"][0]["type"], "thinking");
    assert!(
        v["messages"][last]["content"][0]
            .get("cache_control")
            .is_none()
    );
    assert_eq!(
        v["messages"][last]["content"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
    Ok(())
}

fn bedrock(model: &str) -> WireTarget {
    WireTarget::new(
        Dialect::BedrockConverse,
        "https://bedrock-runtime.us-east-1.amazonaws.com",
        model,
    )
    .with_key(crate::llm::ApiKey::new(fixtures::CANARY_KEY))
}

#[test]
fn bedrock_claude_gets_cache_points_after_system_tools_and_the_user_turns() -> anyhow::Result<()> {
    let claude = bedrock("us.anthropic.claude-sonnet-4-5-20250929-v1:0");
    let v = body(&claude, &long_conversation())?;
    assert_eq!(
        all(&v, "cachePoint"),
        [
            "/messages/2/content/1/cachePoint",
            "/messages/4/content/1/cachePoint",
            "/system/1/cachePoint",
            "/toolConfig/tools/2/cachePoint",
        ]
    );
    assert_eq!(v["system"][1], json!({"cachePoint": {"type": "default"}}));
    assert_eq!(
        v["toolConfig"]["tools"][2],
        json!({"cachePoint": {"type": "default"}})
    );
    assert_eq!(
        v["messages"][4]["content"][1],
        json!({"cachePoint": {"type": "default"}})
    );

    // Nova: none among the tools.
    let nova = bedrock("amazon.nova-pro-v1:0");
    let found = all(&body(&nova, &long_conversation())?, "cachePoint");
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(!found.iter().any(|p| p.starts_with("/toolConfig")));

    // A model Bedrock does not cache, and the switch off: none.
    let llama = bedrock("meta.llama3-70b-instruct-v1:0");
    assert!(all(&body(&llama, &long_conversation())?, "cachePoint").is_empty());
    let off = claude.with_prompt_cache(PromptCache::Off);
    assert!(all(&body(&off, &long_conversation())?, "cachePoint").is_empty());
    Ok(())
}

/// `req` with a system prompt long enough for OpenAI to cache it (over 1,024 tokens).
fn cacheable(mut req: ChatRequest) -> ChatRequest {
    req.system.push_str(&" Answer with care.".repeat(300));
    req
}

#[test]
fn openai_gets_one_prompt_cache_key_per_shared_prefix() -> anyhow::Result<()> {
    for dialect in [Dialect::OpenAi, Dialect::OpenAiResponses] {
        let target = fixtures::target(dialect);
        let first = body(&target, &cacheable(fixtures::with_tools()))?;
        let key = first["prompt_cache_key"].as_str().unwrap().to_owned();
        assert!(key.starts_with("thinkers-") && key.len() == 25, "{key}");
        // Later turns of the same conversation keep the key.
        let later = body(&target, &cacheable(fixtures::tool_round()))?;
        assert_eq!(later["prompt_cache_key"], json!(key), "{dialect:?}");
        // Another conversation of the same agent (same system content and tools) shares it: its
        // runs reuse one cached prefix. Another agent has another.
        let mut same_agent = cacheable(fixtures::with_tools());
        same_agent.messages = vec![Message::user_text("A different question?")].into();
        assert_eq!(body(&target, &same_agent)?["prompt_cache_key"], json!(key));
        let toolless = body(&target, &cacheable(fixtures::plain()))?;
        assert!(toolless["prompt_cache_key"].is_string());
        assert_ne!(toolless["prompt_cache_key"], json!(key));
        let other = cacheable(ChatRequest::new(
            "You are verbose.",
            vec![Message::user_text("Hello?")],
        ));
        let other = body(&target, &other)?;
        assert!(other["prompt_cache_key"].is_string());
        assert_ne!(other["prompt_cache_key"], json!(key));
        // A request too short to be cached carries no derived key (it would be bytes for
        // nothing); a key set on the request is sent as it is, whatever the length.
        assert!(
            body(&target, &fixtures::with_tools())?
                .get("prompt_cache_key")
                .is_none(),
            "{dialect:?}"
        );
        // Nor does one whose body is long only in its JSON: forty one-word turns make a body
        // over 1,024 bytes whose text is far below 1,024 tokens.
        let mut chatty = fixtures::plain();
        chatty.messages = (0..40)
            .map(|i| {
                if i % 2 == 0 {
                    Message::user_text("ok")
                } else {
                    Message::assistant_text("ok")
                }
            })
            .collect::<Vec<_>>()
            .into();
        let encoded = encode(&target, &chatty)?;
        assert!(encoded.body.len() > 1_024, "{}", encoded.body.len());
        assert!(
            body(&target, &chatty)?.get("prompt_cache_key").is_none(),
            "{dialect:?}"
        );
        let mut pinned = fixtures::plain();
        pinned.cache_key = Some("run-42".into());
        assert_eq!(body(&target, &pinned)?["prompt_cache_key"], "run-42");
        // Switched off: no key.
        let off = target.with_prompt_cache(PromptCache::Off);
        assert!(
            body(&off, &cacheable(fixtures::plain()))?
                .get("prompt_cache_key")
                .is_none()
        );
    }
    // A compatible server gets none.
    let compat = fixtures::target(Dialect::OpenAiCompatible);
    assert!(
        body(&compat, &fixtures::plain())?
            .get("prompt_cache_key")
            .is_none()
    );
    // Gemini has nothing to send.
    let gemini = fixtures::target(Dialect::Gemini);
    let v = body(&gemini, &long_conversation())?.to_string();
    assert!(!v.contains("cache"), "{v}");
    Ok(())
}

fn whole(dialect: Dialect, answer: &Value) -> ChatResponse {
    let plan = DecodePlan {
        dialect,
        text_tools: false,
        next_call_number: 1,
        stream: false,
    };
    decode(&plan, answer.to_string().as_bytes()).unwrap()
}

fn streamed(dialect: Dialect, events: &[Value]) -> ChatResponse {
    let mut d = StreamDecoder::new(fixtures::plan(dialect, false));
    for e in events {
        let data = e.as_str().map_or_else(|| e.to_string(), str::to_owned);
        d.push(&data, &mut |_| {}).unwrap();
    }
    d.finish(&mut |_| {}).unwrap()
}

/// 1,000 input tokens of which 600 were read from the cache and 300 written to it.
const EXPECTED: Usage = Usage {
    input: 1_000,
    output: 20,
    reasoning: 0,
    cached: 600,
    cache_creation: 300,
    reported: true,
};

#[test]
fn anthropic_cache_counts_are_added_to_the_input() {
    let usage = json!({"input_tokens": 100, "output_tokens": 20,
        "cache_read_input_tokens": 600, "cache_creation_input_tokens": 300});
    let r = whole(
        Dialect::Anthropic,
        &json!({"type": "message", "model": "m", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "hi"}], "usage": usage}),
    );
    assert_eq!(r.usage, EXPECTED);
    let r = streamed(
        Dialect::Anthropic,
        &[
            json!({"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 100,
                "cache_read_input_tokens": 600, "cache_creation_input_tokens": 300, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 20}}),
            json!({"type": "message_stop"}),
        ],
    );
    assert_eq!(r.usage, EXPECTED);
}

#[test]
fn bedrock_cache_counts_are_added_to_the_input() {
    let usage = json!({"inputTokens": 100, "outputTokens": 20, "totalTokens": 1_020,
        "cacheReadInputTokens": 600, "cacheWriteInputTokens": 300});
    let r = whole(
        Dialect::BedrockConverse,
        &json!({"output": {"message": {"role": "assistant", "content": [{"text": "hi"}]}},
            "stopReason": "end_turn", "usage": usage}),
    );
    assert_eq!(r.usage, EXPECTED);
    let r = streamed(
        Dialect::BedrockConverse,
        &[
            json!({"messageStart": {"role": "assistant"}}),
            json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "hi"}}}),
            json!({"contentBlockStop": {"contentBlockIndex": 0}}),
            json!({"messageStop": {"stopReason": "end_turn"}}),
            json!({"metadata": {"usage": usage}}),
        ],
    );
    assert_eq!(r.usage, EXPECTED);
}

#[test]
fn openai_cached_tokens_are_read_as_part_of_the_prompt() {
    let usage = json!({"prompt_tokens": 1_000, "completion_tokens": 20, "total_tokens": 1_020,
        "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 300}});
    let r = whole(
        Dialect::OpenAi,
        &json!({"model": "m", "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "hi"}}], "usage": usage}),
    );
    assert_eq!(r.usage, EXPECTED);
    let r = streamed(
        Dialect::OpenAi,
        &[
            json!({"model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "hi"}}]}),
            json!({"model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"model": "m", "choices": [], "usage": usage}),
            json!("[DONE]"),
        ],
    );
    assert_eq!(r.usage, EXPECTED);
}

#[test]
fn responses_cached_tokens_are_read_as_part_of_the_input() {
    let usage = json!({"input_tokens": 1_000, "output_tokens": 20, "total_tokens": 1_020,
        "input_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 300},
        "output_tokens_details": {"reasoning_tokens": 0}});
    let response = json!({"id": "r", "model": "m", "status": "completed", "output": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}],
        "usage": usage});
    assert_eq!(whole(Dialect::OpenAiResponses, &response).usage, EXPECTED);
    let r = streamed(
        Dialect::OpenAiResponses,
        &[
            json!({"type": "response.created", "response": {"model": "m"}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "hi"}),
            json!({"type": "response.completed", "response": response}),
        ],
    );
    assert_eq!(r.usage, EXPECTED);
}

#[test]
fn gemini_cached_content_is_read_as_part_of_the_prompt() {
    let usage = json!({"promptTokenCount": 1_000, "candidatesTokenCount": 20,
        "totalTokenCount": 1_020, "cachedContentTokenCount": 600});
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]},
        "finishReason": "STOP"}], "usageMetadata": usage, "modelVersion": "m"});
    let expected = Usage {
        cache_creation: 0,
        ..EXPECTED
    };
    assert_eq!(whole(Dialect::Gemini, &answer).usage, expected);
    assert_eq!(streamed(Dialect::Gemini, &[answer]).usage, expected);
}
