//! Rendering a planned answer as `converse-stream` event frames.
//!
//! `messageStart`; per content block `contentBlockStart` (tool calls only: id and name),
//! `contentBlockDelta`s (`reasoningContent.text` pieces then one `signature`; `text` pieces;
//! `toolUse.input` fragments) and `contentBlockStop`; `messageStop` with the stop reason;
//! `metadata` with the usage. A `stream_error` fault ends the stream early with a
//! `modelStreamErrorException` frame.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::encode::{Envelope, content, stop_reason, usage};
use super::{event, exception};
use crate::logprobs::split_tokens;
use crate::plan::Plan;

/// Tokens per text or reasoning delta.
const TOKENS_PER_DELTA: usize = 4;
/// Characters per tool input fragment.
const JSON_FRAGMENT: usize = 24;

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

/// Every frame of the stream. With `error_after`, the stream stops after that many frames with
/// an exception frame.
pub(crate) fn frames(env: &Envelope<'_>, plan: &Plan, error_after: Option<usize>) -> Vec<Bytes> {
    let mut out = vec![event("messageStart", &json!({"role": "assistant"}))];
    for (index, block) in content(env, plan).into_iter().enumerate() {
        let delta = |d: Value| {
            event(
                "contentBlockDelta",
                &json!({"contentBlockIndex": index, "delta": d}),
            )
        };
        if let Some(r) = block.pointer("/reasoningContent/reasoningText") {
            let text = r["text"].as_str().unwrap_or_default();
            for p in pieces(text) {
                out.push(delta(json!({"reasoningContent": {"text": p}})));
            }
            out.push(delta(
                json!({"reasoningContent": {"signature": r["signature"]}}),
            ));
        } else if let Some(t) = block.get("toolUse") {
            out.push(event(
                "contentBlockStart",
                &json!({"contentBlockIndex": index, "start": {"toolUse": {
                    "toolUseId": t["toolUseId"], "name": t["name"]}}}),
            ));
            for f in fragments(&t["input"].to_string()) {
                out.push(delta(json!({"toolUse": {"input": f}})));
            }
        } else {
            let text = block["text"].as_str().unwrap_or_default();
            for p in pieces(text) {
                out.push(delta(json!({ "text": p })));
            }
        }
        out.push(event(
            "contentBlockStop",
            &json!({ "contentBlockIndex": index }),
        ));
    }
    out.push(event(
        "messageStop",
        &json!({"stopReason": stop_reason(plan.finish)}),
    ));
    out.push(event(
        "metadata",
        &json!({"usage": usage(env, plan.output_tokens), "metrics": {"latencyMs": 1}}),
    ));
    if let Some(n) = error_after {
        out.truncate(n.min(out.len().saturating_sub(2)));
        out.push(exception(
            "modelStreamErrorException",
            "The model stream failed (served by the simulated provider as a fault).",
        ));
    }
    out
}
