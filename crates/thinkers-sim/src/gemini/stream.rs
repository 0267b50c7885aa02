//! Rendering a planned answer as Gemini server-sent events (`alt=sse`).
//!
//! Every event is a whole `GenerateContentResponse` (`data: {…}` and a blank line, no event
//! names, no `[DONE]`): the thought summary when shown, the text in pieces, then a closing event
//! with an empty text part carrying the signature (when it thought), the finish reason and the
//! usage. Function calls come whole, in one event that also closes the answer. A `stream_error`
//! fault ends the stream early with an `error` event.

use axum::body::Bytes;
use serde_json::{Value, json};

use super::encode::{
    Envelope, chunk, finish_reason, signature, thought_part, usage, visible_parts,
};
use crate::logprobs::split_tokens;
use crate::plan::{Body, Plan};

/// Tokens per text event.
const TOKENS_PER_EVENT: usize = 4;

/// A `data:` frame, with the CRLF line ends the API writes.
pub(crate) fn event(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\r\n\r\n"))
}

/// Every event of the stream. With `error_after` set, the stream stops after that many events
/// with an `UNAVAILABLE` error event.
pub(crate) fn frames(env: &Envelope<'_>, plan: &Plan, error_after: Option<usize>) -> Vec<Bytes> {
    let mut out = Vec::new();
    if let Some(thought) = thought_part(env, plan) {
        out.push(event(&chunk(env, &[thought], None, None)));
    }
    let signature = signature(env, plan);
    let finish = finish_reason(plan.finish);
    match &plan.body {
        Body::Text(text) => {
            for piece in split_tokens(text).chunks(TOKENS_PER_EVENT) {
                out.push(event(&chunk(
                    env,
                    &[json!({"text": piece.concat()})],
                    None,
                    None,
                )));
            }
            let mut last = json!({"text": ""});
            if let Some(sig) = &signature {
                last["thoughtSignature"] = json!(sig);
            }
            out.push(event(&chunk(
                env,
                &[last],
                Some(finish),
                Some(usage(env, plan)),
            )));
        }
        Body::ToolCalls(_) => out.push(event(&chunk(
            env,
            &visible_parts(plan, signature.as_deref()),
            Some(finish),
            Some(usage(env, plan)),
        ))),
    }
    if let Some(n) = error_after {
        out.truncate(n.min(out.len().saturating_sub(1)));
        out.push(event(&json!({"error": {
            "code": 503,
            "message": "The model is overloaded. Please try again later.",
            "status": "UNAVAILABLE"
        }})));
    }
    out
}
