//! The Google Gemini API dialect (`generateContent` and `streamGenerateContent?alt=sse`).
//!
//! Split by direction: [`encode`] renders a request body, [`decode`] reads a whole answer,
//! [`stream`] reads a server-sent-event stream.
//!
//! **Thought signatures.** Gemini may put an opaque `thoughtSignature` on any part of an answer
//! (a thought summary, a text, a function call) and requires it back, unchanged and on the same
//! part, on the next turn (for function calls of thinking models it refuses the turn without it).
//! The provider-agnostic conversation has no field for a signature on a text or a tool call, so
//! the dialect carries them in the blocks it already keeps verbatim:
//!
//! * a thought part (`thought: true`) is a [`ContentBlock::Thinking`] whose `signature` is the
//!   part's `thoughtSignature` (nothing after the tag when it had none);
//! * a signature on any other part is a [`ContentBlock::RedactedThinking`] whose `data` is the
//!   signature, placed right before the block of the part it belongs to. The encoder puts it back
//!   on that next part; with no part after it (a stream's closing empty text part that carried
//!   only the signature) it is sent as an empty text part with the signature.
//!
//! Both are kept tagged with [`SIGNATURE_TAG`] (`gemini:` before the provider's string, which is
//! base64 and never holds a colon), so the blocks say whose they are: the Gemini encoder sends
//! back only tagged blocks, without the tag, and the Anthropic encoder never sends a tagged block
//! (a conversation can move between entries of one grade that speak different dialects, and a
//! provider refuses another's signatures). The signature strings themselves are never touched,
//! so they travel byte-identical across turns.
//!
//! **Call ids.** Gemini function calls may carry an `id`; when one does not, the decoders mint
//! `call_<n>` numbered from the conversation (deterministic, so the same conversation renders the
//! same body for the response cache). Minted ids are never sent back on the wire: Gemini pairs a
//! `functionResponse` with its call by name and order when no id is given.
//!
//! [`ContentBlock::Thinking`]: crate::llm::message::ContentBlock::Thinking
//! [`ContentBlock::RedactedThinking`]: crate::llm::message::ContentBlock::RedactedThinking

pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod stream;

#[cfg(test)]
mod tests;

use std::time::Duration;

use serde_json::Value;

use crate::dispatch::RateObservation;
use crate::llm::response::StopReason;

/// What the blocks that carry Gemini thoughts and signatures start with (see the module docs).
pub(crate) const SIGNATURE_TAG: &str = "gemini:";

/// A signature as the conversation keeps it: tagged.
pub(crate) fn tagged(signature: &str) -> String {
    format!("{SIGNATURE_TAG}{signature}")
}

/// The provider's signature in a kept one; `None` for a block another dialect made.
pub(crate) fn untagged(kept: &str) -> Option<&str> {
    kept.strip_prefix(SIGNATURE_TAG)
}

/// Whether a kept signature (or redacted-thinking data) is Gemini's.
pub(crate) fn is_gemini(kept: &str) -> bool {
    kept.starts_with(SIGNATURE_TAG)
}

/// The header carrying the API key (never the `key` query parameter: URLs end up in logs).
pub(crate) const KEY_HEADER: &str = "x-goog-api-key";

/// Map a `finishReason` onto the stop reason (before tool calls are taken into account).
pub(crate) fn stop_reason(reason: Option<&str>) -> StopReason {
    match reason {
        None | Some("STOP") => StopReason::EndTurn,
        Some("MAX_TOKENS") => StopReason::MaxTokens,
        Some(
            "SAFETY"
            | "RECITATION"
            | "BLOCKLIST"
            | "PROHIBITED_CONTENT"
            | "SPII"
            | "IMAGE_SAFETY"
            | "IMAGE_PROHIBITED_CONTENT"
            | "IMAGE_RECITATION",
        ) => StopReason::Refusal,
        // `MALFORMED_FUNCTION_CALL`, `LANGUAGE`, `OTHER`, `FINISH_REASON_UNSPECIFIED` and
        // whatever comes next.
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// Whether `id` is one the runtime minted (`call_<n>`), not one the provider gave.
pub(crate) fn is_minted(id: &str) -> bool {
    id.strip_prefix("call_")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The wait a `google.rpc` error body asks for in its `RetryInfo` detail
/// (`{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
/// "retryDelay": "17s"}]}}`), which Gemini sends on a 429 instead of a `Retry-After` header.
pub(crate) fn retry_delay(body: &[u8]) -> Option<Duration> {
    let v: Value = serde_json::from_slice(body).ok()?;
    retry_delay_of(v.get("error")?)
}

/// [`retry_delay`] of an error object (the value of `error`).
pub(crate) fn retry_delay_of(error: &Value) -> Option<Duration> {
    error
        .get("details")?
        .as_array()?
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|d| d.get("retryDelay").and_then(Value::as_str))
        .and_then(proto_duration)
}

/// The per-minute limits a `google.rpc.QuotaFailure` detail of an error body states: Gemini
/// names each quota a refused request broke (`violations[].quotaId`, such as
/// `GenerateRequestsPerMinutePerProjectPerModel-FreeTier` or
/// `GenerateContentInputTokensPerModelPerMinute`) with its figure (`quotaValue`, a per-minute
/// count, given as a string). Requests, input tokens, output tokens and tokens together go on
/// their own axes; a quota of another period (per day), of concurrency, with no figure or a figure
/// of 0 (no access at all, which no pacing cures) states nothing. Where two quotas name one axis
/// (a tier's and the project's), the lower binds.
pub(crate) fn quota_limits(body: &[u8]) -> Option<RateObservation> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let mut obs = RateObservation::default();
    let details = v.get("error")?.get("details")?.as_array()?;
    let violations = details
        .iter()
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with("google.rpc.QuotaFailure"))
        })
        .filter_map(|d| d.get("violations")?.as_array())
        .flatten();
    for violation in violations {
        let Some(id) = violation.get("quotaId").and_then(Value::as_str) else {
            continue;
        };
        let figure = match violation.get("quotaValue") {
            Some(Value::String(s)) => s.trim().parse::<u64>().ok(),
            Some(Value::Number(n)) => n.as_u64(),
            _ => None,
        };
        let (Some(figure), true) = (figure.filter(|f| *f > 0), id.contains("PerMinute")) else {
            continue;
        };
        let axis = if id.contains("InputToken") {
            &mut obs.input_tokens
        } else if id.contains("OutputToken") {
            &mut obs.output_tokens
        } else if id.contains("Token") {
            &mut obs.tokens
        } else if id.contains("Request") && !id.contains("Concurrent") {
            &mut obs.requests
        } else {
            continue;
        };
        axis.limit = Some(axis.limit.map_or(figure, |l| l.min(figure)));
    }
    (obs != RateObservation::default()).then_some(obs)
}

/// The field a `google.rpc.BadRequest` detail of an error object names
/// (`details[].fieldViolations[].field`), for an invalid request's parameter.
pub(crate) fn violated_field(error: &Value) -> Option<String> {
    error
        .get("details")?
        .as_array()?
        .iter()
        .filter_map(|d| d.get("fieldViolations")?.as_array())
        .flatten()
        .find_map(|v| v.get("field")?.as_str().map(str::to_owned))
}

/// A protobuf `Duration` in its JSON form: seconds with up to nine decimals and an `s`
/// (`"17s"`, `"0.250s"`).
fn proto_duration(s: &str) -> Option<Duration> {
    let secs: f64 = s.trim().strip_suffix('s')?.parse().ok()?;
    Duration::try_from_secs_f64(secs).ok()
}
