//! Rendering a planned answer as Anthropic server-sent events.
//!
//! `message_start` (empty content, input usage), then per content block `content_block_start`,
//! deltas (`thinking_delta` pieces and one `signature_delta`; `text_delta` pieces;
//! `input_json_delta` fragments starting with an empty one) and `content_block_stop`; a `ping`
//! after the first block opens; `message_delta` with the stop reason and cumulative usage;
//! `message_stop`. A `stream_error` fault ends the stream early with an `error` event.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::encode::{Envelope, content, stop_reason, usage};
use crate::logprobs::split_tokens;
use crate::plan::Plan;

/// Tokens per text or thinking delta.
const TOKENS_PER_DELTA: usize = 4;
/// Characters per `input_json_delta`.
const JSON_FRAGMENT: usize = 24;

/// An `event:` + `data:` frame.
pub(crate) fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

fn pieces(text: &str) -> Vec<String> {
    split_tokens(text)
        .chunks(TOKENS_PER_DELTA)
        .map(<[&str]>::concat)
        .collect()
}

fn fragments(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(JSON_FRAGMENT)
        .map(|c| c.iter().collect())
        .collect()
}

/// Every event of the stream. With `error_after` set, the stream stops after that many events
/// with an `overloaded_error` event.
pub(crate) fn frames(env: &Envelope<'_>, plan: &Plan, error_after: Option<usize>) -> Vec<Bytes> {
    let mut out = Vec::new();
    out.push(event(
        "message_start",
        &json!({
            "type": "message_start",
            "message": {
                "id": env.id,
                "type": "message",
                "role": "assistant",
                "model": env.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": usage(env, 1)
            }
        }),
    ));
    for (index, block) in content(env, plan).into_iter().enumerate() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("text");
        let (start, deltas): (Value, Vec<Value>) = match kind {
            "thinking" => {
                let text = block["thinking"].as_str().unwrap_or_default();
                let mut deltas: Vec<Value> = pieces(text)
                    .into_iter()
                    .map(|p| json!({"type": "thinking_delta", "thinking": p}))
                    .collect();
                deltas.push(json!({"type": "signature_delta", "signature": block["signature"]}));
                (
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                    deltas,
                )
            }
            "tool_use" => {
                let input = block["input"].to_string();
                let mut deltas = vec![json!({"type": "input_json_delta", "partial_json": ""})];
                deltas.extend(
                    fragments(&input)
                        .into_iter()
                        .map(|f| json!({"type": "input_json_delta", "partial_json": f})),
                );
                (
                    json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                    deltas,
                )
            }
            _ => {
                let text = block["text"].as_str().unwrap_or_default();
                let deltas = pieces(text)
                    .into_iter()
                    .map(|p| json!({"type": "text_delta", "text": p}))
                    .collect();
                (json!({"type": "text", "text": ""}), deltas)
            }
        };
        out.push(event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        if index == 0 {
            out.push(event("ping", &json!({"type": "ping"})));
        }
        for delta in deltas {
            out.push(event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        out.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
    }
    out.push(event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(plan.finish), "stop_sequence": null},
            "usage": {"output_tokens": plan.output_tokens}
        }),
    ));
    out.push(event("message_stop", &json!({"type": "message_stop"})));
    if let Some(n) = error_after {
        out.truncate(n.min(out.len().saturating_sub(2)));
        out.push(event(
            "error",
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ));
    }
    out
}
