//! The Amazon Bedrock Converse dialect (`bedrock-converse`).
//!
//! `POST {base}/model/{modelId}/converse`, or `/converse-stream` for a stream, with the model id
//! percent-encoded into the path (an inference-profile ARN holds `:` and `/`). Split by
//! direction: [`encode`] renders the body, [`decode`] reads a whole answer and an error,
//! [`stream`] reads the AWS event-stream frames of `converse-stream`, [`sign`] signs a request
//! with AWS Signature Version 4 when it is sent.
//!
//! Reasoning blocks (`reasoningContent`: `reasoningText` with its signature, or
//! `redactedContent`) are kept as the conversation's thinking blocks and travel back
//! byte-identical and in their order, ahead of the turn's tool calls, as Anthropic models on
//! Bedrock require across tool turns.

pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod sign;
pub(crate) mod stream;

#[cfg(test)]
mod tests;

pub use sign::AwsSigning;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::llm::encoded::EncodedRequest;
use crate::llm::response::StopReason;
use crate::{Error, Result};

/// What a path label keeps unencoded: RFC 3986's unreserved characters.
const LABEL: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The endpoint of `model` under `base`: `…/converse`, or `…/converse-stream`.
pub(crate) fn endpoint(base: &str, model: &str, stream: bool) -> String {
    let op = if stream {
        "converse-stream"
    } else {
        "converse"
    };
    format!("{base}/model/{}/{op}", utf8_percent_encode(model, LABEL))
}

/// The model id of a Converse endpoint, decoded (for a 404's message).
pub(crate) fn model_of_url(url: &str) -> Option<String> {
    let rest = url.split("/model/").nth(1)?;
    let label = rest.split('/').next()?;
    percent_encoding::percent_decode_str(label)
        .decode_utf8()
        .ok()
        .map(|m| m.into_owned())
}

/// Map a `stopReason` onto the stop reason (before tool calls are taken into account).
pub(crate) fn stop_reason(reason: Option<&str>) -> StopReason {
    match reason {
        None | Some("end_turn") => StopReason::EndTurn,
        Some("max_tokens" | "model_context_window_exceeded") => StopReason::MaxTokens,
        Some("tool_use") => StopReason::ToolUse,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("guardrail_intervened" | "content_filtered") => StopReason::Refusal,
        // `malformed_model_output`, `malformed_tool_use` and whatever comes next.
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// Sign `enc` with `signing` over the headers already in `map` and the exact body, and add the
/// signature headers (marked sensitive, so reqwest never shows them).
pub(crate) fn sign_headers(
    signing: &AwsSigning,
    enc: &EncodedRequest,
    map: &mut HeaderMap,
) -> Result<()> {
    let plain: Vec<(&str, &str)> = map
        .iter()
        .filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?)))
        .collect();
    let signed = signing.sign(&enc.url, &plain, &enc.body, std::time::SystemTime::now())?;
    for (name, value) in signed {
        let bad = || {
            Error::system(
                "bedrock signing",
                format!("the signature header `{name}` cannot be sent"),
            )
        };
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        let mut value = HeaderValue::from_str(&value).map_err(|_| bad())?;
        value.set_sensitive(true);
        map.insert(name, value);
    }
    Ok(())
}
