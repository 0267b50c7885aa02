//! The OpenAI Chat Completions dialect, also used (rendered conservatively) for OpenAI-compatible
//! local servers such as Ollama, vLLM and llama.cpp.
//!
//! Split by direction: [`encode`] renders a request body, [`decode`] reads a whole answer,
//! [`stream`] reads a server-sent-event stream. Decoding is lenient for both targets: unknown
//! fields are ignored, tool-call arguments may be a JSON string or an object, missing call ids
//! are minted, and a turn that carries tool calls is a tool turn whatever `finish_reason` says.

pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod stream;

#[cfg(test)]
mod tests;

use crate::llm::response::StopReason;

/// Map a `finish_reason` onto the stop reason (before tool calls are taken into account).
pub(crate) fn stop_reason(finish: Option<&str>) -> StopReason {
    match finish {
        None | Some("stop") => StopReason::EndTurn,
        Some("length") => StopReason::MaxTokens,
        // `tool` is what older llama.cpp builds send; `function_call` is the deprecated form.
        Some("tool_calls" | "function_call" | "tool") => StopReason::ToolUse,
        Some("content_filter") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}
