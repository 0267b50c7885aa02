//! The Anthropic Messages dialect.
//!
//! Split by direction: [`encode`] renders a request body, [`decode`] reads a whole answer,
//! [`stream`] reads a server-sent-event stream. Thinking and redacted-thinking blocks travel back
//! byte-identical and in their original order, ahead of the turn's tool calls, as the provider
//! requires when tools are used across turns.

pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod stream;

#[cfg(test)]
mod tests;

use crate::llm::response::StopReason;

/// The protocol version sent in `anthropic-version`.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// Map a `stop_reason` onto the stop reason (before tool calls are taken into account).
pub(crate) fn stop_reason(reason: Option<&str>) -> StopReason {
    match reason {
        None | Some("end_turn") => StopReason::EndTurn,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("tool_use") => StopReason::ToolUse,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("refusal") => StopReason::Refusal,
        // `pause_turn`, `model_context_window_exceeded` and whatever comes next.
        Some(other) => StopReason::Other(other.to_owned()),
    }
}
