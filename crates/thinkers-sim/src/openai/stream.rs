//! Rendering a planned answer as OpenAI `chat.completion.chunk` server-sent events.
//!
//! Order: a role chunk; content chunks of a few tokens each (with their logprobs when asked);
//! for tool calls, one chunk per call opening it (index, id, type, name, empty arguments) then
//! argument fragments; a chunk with an empty delta and the finish reason; the usage chunk (empty
//! `choices`) when `stream_options.include_usage` is set, every earlier chunk then carrying
//! `"usage": null`; and `data: [DONE]`.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::encode::{Envelope, FINGERPRINT, choice_logprobs, finish_reason, usage};
use crate::logprobs::split_tokens;
use crate::plan::{Body, Plan};

/// Tokens per content chunk.
const TOKENS_PER_CHUNK: usize = 4;
/// Characters per tool-argument fragment.
const ARGUMENT_FRAGMENT: usize = 24;

/// A `data:` frame.
pub(crate) fn frame(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// The final `data: [DONE]` frame.
pub(crate) fn done() -> Bytes {
    Bytes::from_static(b"data: [DONE]\n\n")
}

struct Chunker<'a> {
    env: &'a Envelope<'a>,
    include_usage: bool,
}

impl Chunker<'_> {
    fn chunk(&self, delta: Value, logprobs: Value, finish: Option<&str>) -> Value {
        let mut chunk = json!({
            "id": self.env.id,
            "object": "chat.completion.chunk",
            "created": self.env.created,
            "model": self.env.model,
            "service_tier": "default",
            "system_fingerprint": FINGERPRINT,
            "choices": [{"index": 0, "finish_reason": finish}]
        });
        chunk["choices"][0]["delta"] = delta;
        chunk["choices"][0]["logprobs"] = logprobs;
        if self.include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    }
}

/// Pieces of at most `n` chars.
fn fragments(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// Every frame of the stream, `[DONE]` included.
pub(crate) fn frames(
    env: &Envelope<'_>,
    plan: &mut Plan,
    include_usage: bool,
    logprobs: Option<u8>,
) -> Vec<Bytes> {
    let chunker = Chunker { env, include_usage };
    let mut out = vec![frame(&chunker.chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
        None,
    ))];
    match plan.body.clone() {
        Body::Text(text) => {
            let tokens = split_tokens(&text);
            for group in tokens.chunks(TOKENS_PER_CHUNK) {
                let piece = group.concat();
                let lp = choice_logprobs(plan, logprobs, &piece);
                out.push(frame(&chunker.chunk(json!({"content": piece}), lp, None)));
            }
        }
        Body::ToolCalls(calls) => {
            for (index, call) in calls.iter().enumerate() {
                out.push(frame(&chunker.chunk(
                    json!({"tool_calls": [{
                        "index": index,
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""}
                    }]}),
                    Value::Null,
                    None,
                )));
                for piece in fragments(&call.arguments(), ARGUMENT_FRAGMENT) {
                    out.push(frame(&chunker.chunk(
                        json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                        Value::Null,
                        None,
                    )));
                }
            }
        }
    }
    out.push(frame(&chunker.chunk(
        json!({}),
        Value::Null,
        Some(finish_reason(plan.finish)),
    )));
    if include_usage {
        out.push(frame(&json!({
            "id": env.id,
            "object": "chat.completion.chunk",
            "created": env.created,
            "model": env.model,
            "service_tier": "default",
            "system_fingerprint": FINGERPRINT,
            "choices": [],
            "usage": usage(env, plan)
        })));
    }
    out.push(done());
    out
}
