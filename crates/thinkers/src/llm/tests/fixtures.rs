//! Requests, targets and helpers shared by the dialect tests.

use futures::StreamExt;
use serde_json::json;

use crate::Result;
use crate::llm::message::{ContentBlock, Message};
use crate::llm::{
    ApiKey, ChatRequest, ChatResponse, DecodePlan, Dialect, Reasoning, ResponseSchema,
    StreamDecoder, StreamDelta, ToolChoice, ToolSpec, WireTarget,
};

/// A key that must never show up anywhere.
pub(crate) const CANARY_KEY: &str = "sk-CANARY-7f3a9c2e5d1b";

pub(crate) fn target(dialect: Dialect) -> WireTarget {
    let base = match dialect {
        Dialect::Anthropic => "https://api.example.invalid/",
        _ => "https://api.example.invalid/v1",
    };
    WireTarget::new(dialect, base, "model-x").with_key(ApiKey::new(CANARY_KEY))
}

pub(crate) fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather for a city".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city"},
                "unit": {"type": "string", "enum": ["c", "f"]}
            },
            "required": ["city"]
        })
        .into(),
    }
}

pub(crate) fn time_tool() -> ToolSpec {
    ToolSpec {
        name: "get_time".into(),
        description: "The local time of a city".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}).into(),
    }
}

pub(crate) fn plain() -> ChatRequest {
    ChatRequest::new(
        "You are terse.",
        vec![Message::user_text("Weather in Boston?")],
    )
}

/// A user turn with text and every kind of media OpenAI takes inline, then an assistant turn
/// of two texts and calls whose arguments did not parse or were absent.
pub(crate) fn media() -> ChatRequest {
    use crate::llm::message::{ContentBlock, MediaSource, Role};
    ChatRequest::new(
        "You are terse.",
        vec![
            Message::new(
                Role::User,
                vec![
                    ContentBlock::text("Compare these."),
                    ContentBlock::Image {
                        media_type: "image/png".into(),
                        source: MediaSource::Url("https://x.invalid/a.png".into()),
                    },
                    ContentBlock::Image {
                        media_type: "image/jpeg".into(),
                        source: MediaSource::Base64("/9j/".into()),
                    },
                    ContentBlock::File {
                        media_type: "application/pdf".into(),
                        name: Some("a.pdf".into()),
                        source: MediaSource::Base64("JVBE".into()),
                    },
                    ContentBlock::File {
                        media_type: "application/pdf".into(),
                        name: None,
                        source: MediaSource::Base64("JVBF".into()),
                    },
                ],
            ),
            Message::assistant(vec![
                ContentBlock::text("Looking "),
                ContentBlock::text("closer."),
                ContentBlock::tool_call("call_1", "zoom", serde_json::json!("{\"x\": 1,")),
                ContentBlock::tool_call("call_2", "zoom", serde_json::Value::Null),
            ]),
        ],
    )
}

pub(crate) fn with_tools() -> ChatRequest {
    let mut r = plain();
    r.tools = vec![weather_tool(), time_tool()];
    r
}

/// A conversation after one tool round: two calls, two results (one failed, in separate user
/// turns), then a user follow-up.
pub(crate) fn tool_round() -> ChatRequest {
    let mut r = with_tools();
    let messages = std::sync::Arc::make_mut(&mut r.messages);
    messages.push(Message::assistant(vec![
        ContentBlock::text("Checking."),
        ContentBlock::tool_call(
            "call_a1",
            "get_weather",
            json!({"city": "Boston", "unit": null}),
        ),
        ContentBlock::tool_call("call_a2", "get_time", json!({"city": "Boston"})),
    ]));
    messages.push(Message::tool_results(vec![ContentBlock::tool_result(
        "call_a1",
        "get_weather",
        "{\"temp_c\": 11}",
    )]));
    messages.push(Message::tool_results(vec![ContentBlock::tool_error(
        "call_a2",
        "get_time",
        "time service unavailable",
    )]));
    messages.push(Message::user_text("And tomorrow?"));
    r
}

/// [`tool_round`] whose assistant turn is only tool calls, with no text.
pub(crate) fn silent_tool_round() -> ChatRequest {
    let mut r = tool_round();
    let messages = std::sync::Arc::make_mut(&mut r.messages);
    for m in messages.iter_mut() {
        if m.role == crate::llm::message::Role::Assistant {
            m.content
                .retain(|b| matches!(b, ContentBlock::ToolCall { .. }));
        }
    }
    r
}

pub(crate) fn structured() -> ChatRequest {
    let mut r = plain();
    r.response = Some(ResponseSchema {
        name: "invoice".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "vendor": {"type": "string"},
                "total_cents": {"type": "integer", "minimum": 0},
                "note": {"type": "string", "maxLength": 200}
            },
            "required": ["vendor", "total_cents"]
        })
        .into(),
    });
    r
}

pub(crate) fn everything() -> ChatRequest {
    let mut r = tool_round();
    r.tool_choice = ToolChoice::Tool("get_weather".into());
    r.reasoning = Reasoning::Effort("low".into());
    r.max_output_tokens = 2048;
    r.logprobs = Some(3);
    r
}

/// Feed an SSE text through the real event parser in small chunks, then the decoder.
pub(crate) async fn decode_sse(
    plan: DecodePlan,
    sse: &str,
) -> (Result<ChatResponse>, Vec<StreamDelta>) {
    let chunks: Vec<std::result::Result<bytes::Bytes, std::io::Error>> = sse
        .as_bytes()
        .chunks(7)
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let mut events = eventsource_stream::Eventsource::eventsource(futures::stream::iter(chunks));
    let mut decoder = StreamDecoder::new(plan);
    let mut deltas = Vec::new();
    while let Some(ev) = events.next().await {
        let Ok(ev) = ev else {
            return (
                Err(crate::Error::system("test", "sse parse failed")),
                deltas,
            );
        };
        if let Err(e) = decoder.push(&ev.data, &mut |d| deltas.push(d)) {
            return (Err(e), deltas);
        }
        if decoder.is_done() {
            break;
        }
    }
    let r = decoder.finish(&mut |d| deltas.push(d));
    (r, deltas)
}

pub(crate) fn plan(dialect: Dialect, text_tools: bool) -> DecodePlan {
    DecodePlan {
        dialect,
        text_tools,
        next_call_number: 1,
        stream: true,
    }
}
