//! Helpers several dialects use and no dialect owns: how a stream that ended early fails, the
//! effort level of a reasoning budget, tool-call arguments as a JSON value, the smallest
//! thinking budget of Claude models (served by Anthropic and Bedrock), and how a Responses
//! reasoning item is told from an Anthropic signature (both carried in a thinking block).

use serde_json::Value;

use crate::Error;
use crate::llm::errors;
use crate::llm::target::Dialect;

/// The smallest thinking budget Claude models accept (Anthropic and Bedrock).
pub(crate) const MIN_THINKING_BUDGET: u32 = 1024;

/// The error of a stream that ended before its terminal event: transient while nothing was
/// delivered (sending the request again is safe), final after.
pub(crate) fn ended_early(dialect: Dialect, delivered: bool) -> Error {
    if delivered {
        errors::transport(
            dialect,
            true,
            "the stream ended before the answer was complete",
        )
    } else {
        errors::transport(dialect, false, "the stream ended before any answer arrived")
    }
}

/// The effort level sent for a reasoning budget in tokens (OpenAI has no token budget).
pub(crate) fn effort_for_tokens(tokens: u32) -> &'static str {
    match tokens {
        0..=2048 => "low",
        2049..=8192 => "medium",
        _ => "high",
    }
}

/// Normalise tool-call arguments: an object is kept, a string is parsed (empty means `{}`), and a
/// string that does not parse is kept as the raw string so the caller can correct the model.
pub(crate) fn normalise_arguments(raw: Option<Value>) -> Value {
    match raw {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(serde_json::Map::new()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::String(s),
        },
        Some(other) => other,
    }
}

/// The `type` a carried reasoning item's JSON opens with (the provider writes `type` first).
const ITEM_OPENING: &str = "{\"type\":\"reasoning\"";

/// Whether a thinking block's signature is a Responses reasoning item (and not, say, an
/// Anthropic signature): the item's JSON, which only the Responses dialect may send back.
pub(crate) fn reasoning_item(signature: &str) -> bool {
    let s = signature.trim_start();
    s.starts_with('{')
        && (s.starts_with(ITEM_OPENING)
            || serde_json::from_str::<serde_json::Value>(s).is_ok_and(|v| {
                v.get("type").and_then(serde_json::Value::as_str) == Some("reasoning")
            }))
}
