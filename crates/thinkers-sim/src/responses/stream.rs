//! Rendering a planned answer as OpenAI Responses server-sent events.
//!
//! Every event is `event: <type>` + `data: {"type": <type>, "sequence_number": n, …}`:
//! `response.created` and `response.in_progress` (the response, no output yet); per output item
//! `response.output_item.added`, its deltas (`response.reasoning_summary_part.added`,
//! `response.reasoning_summary_text.delta`…/`.done`, `response.reasoning_summary_part.done`;
//! `response.content_part.added`, `response.output_text.delta`…/`.done`,
//! `response.content_part.done`; `response.function_call_arguments.delta`…/`.done`) and
//! `response.output_item.done` with the whole item; then `response.completed` (or
//! `response.incomplete` when the budget ran out) with the whole response and its usage. There
//! is no `[DONE]`. A `stream_error` fault stops the stream after `error_after` events with an
//! `error` event.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::encode::{Envelope, items, response, status};
use crate::logprobs::split_tokens;
use crate::plan::{Finish, Plan};

/// Tokens per text delta.
const TOKENS_PER_DELTA: usize = 4;
/// Characters per argument fragment.
const ARGUMENT_FRAGMENT: usize = 24;

/// The events of a stream, numbered as they are added.
struct Events {
    frames: Vec<Bytes>,
}

impl Events {
    fn push(&mut self, mut data: Value) {
        let name = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("error")
            .to_owned();
        data["sequence_number"] = json!(self.frames.len());
        self.frames
            .push(Bytes::from(format!("event: {name}\ndata: {data}\n\n")));
    }
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
        .chunks(ARGUMENT_FRAGMENT)
        .map(|c| c.iter().collect())
        .collect()
}

/// The events of one output item, from `output_item.added` to `output_item.done`.
fn item_events(out: &mut Events, index: usize, item: &Value) {
    let id = item["id"].clone();
    let kind = item["type"].as_str().unwrap_or_default();
    let mut opening = item.clone();
    match kind {
        "reasoning" => {
            opening["summary"] = json!([]);
            if let Some(o) = opening.as_object_mut() {
                o.remove("encrypted_content");
            }
        }
        "message" => {
            opening["content"] = json!([]);
            opening["status"] = json!("in_progress");
        }
        _ => {
            opening["arguments"] = json!("");
            opening["status"] = json!("in_progress");
        }
    }
    out.push(json!({"type": "response.output_item.added", "output_index": index, "item": opening}));
    match kind {
        "reasoning" => {
            let text = item["summary"][0]["text"].as_str().unwrap_or_default();
            let part = json!({"type": "summary_text", "text": text});
            out.push(json!({"type": "response.reasoning_summary_part.added", "item_id": id,
                "output_index": index, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}));
            for p in pieces(text) {
                out.push(
                    json!({"type": "response.reasoning_summary_text.delta", "item_id": id,
                    "output_index": index, "summary_index": 0, "delta": p}),
                );
            }
            out.push(
                json!({"type": "response.reasoning_summary_text.done", "item_id": id,
                "output_index": index, "summary_index": 0, "text": text}),
            );
            out.push(
                json!({"type": "response.reasoning_summary_part.done", "item_id": id,
                "output_index": index, "summary_index": 0, "part": part}),
            );
        }
        "message" => {
            let part = item["content"][0].clone();
            let text = part["text"].as_str().unwrap_or_default();
            out.push(json!({"type": "response.content_part.added", "item_id": id,
                "output_index": index, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}));
            for p in pieces(text) {
                out.push(json!({"type": "response.output_text.delta", "item_id": id,
                    "output_index": index, "content_index": 0, "delta": p, "logprobs": []}));
            }
            out.push(json!({"type": "response.output_text.done", "item_id": id,
                "output_index": index, "content_index": 0, "text": text, "logprobs": []}));
            out.push(json!({"type": "response.content_part.done", "item_id": id,
                "output_index": index, "content_index": 0, "part": part}));
        }
        _ => {
            let arguments = item["arguments"].as_str().unwrap_or_default();
            for f in fragments(arguments) {
                out.push(
                    json!({"type": "response.function_call_arguments.delta", "item_id": id,
                    "output_index": index, "delta": f}),
                );
            }
            out.push(
                json!({"type": "response.function_call_arguments.done", "item_id": id,
                "output_index": index, "name": item["name"], "arguments": arguments}),
            );
        }
    }
    out.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
}

/// Every event of the stream. With `error_after` set, the stream stops after that many events
/// with an `error` event.
pub(crate) fn frames(
    env: &Envelope<'_>,
    plan: &mut Plan,
    error_after: Option<usize>,
) -> Vec<Bytes> {
    let output = items(env, plan);
    let mut out = Events { frames: Vec::new() };
    out.push(json!({"type": "response.created",
        "response": response(env, plan, "in_progress", &[], false)}));
    out.push(json!({"type": "response.in_progress",
        "response": response(env, plan, "in_progress", &[], false)}));
    for (index, item) in output.iter().enumerate() {
        item_events(&mut out, index, item);
    }
    let status = status(plan.finish);
    let terminal = if plan.finish == Finish::Length {
        "response.incomplete"
    } else {
        "response.completed"
    };
    out.push(json!({"type": terminal, "response": response(env, plan, status, &output, true)}));
    if let Some(n) = error_after {
        out.frames.truncate(n);
        out.push(json!({"type": "error", "code": "server_error",
            "message": "The server had an error while processing your request. Sorry about that!",
            "param": null}));
    }
    out.frames
}
