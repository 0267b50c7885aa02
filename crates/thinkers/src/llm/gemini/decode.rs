//! Read a whole Gemini `GenerateContentResponse`.
//!
//! The first candidate is the answer. Parts the runtime does not model (inline data, executable
//! code…) are skipped, but a signature they carry is kept. Unknown finish reasons become
//! `StopReason::Other`. A prompt the provider blocked (`promptFeedback.blockReason`, no
//! candidate) is a refusal; an answer with no content and no finish reason is a provider failure
//! (an empty answer, asked again at most once). An `error` object in a 200 body is classified like an HTTP failure. The wire
//! types here are shared with [`super::stream`].

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::llm::encoded::DecodePlan;
use crate::llm::errors::ProviderError;
use crate::llm::message::ContentBlock;
use crate::llm::response::{ChatResponse, StopReason, Usage, settle_stop};
use crate::llm::target::Dialect;
use crate::{Error, Result, RetrySignal};

/// `usageMetadata`.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_token_count: Option<u64>,
    #[serde(default)]
    candidates_token_count: Option<u64>,
    #[serde(default)]
    thoughts_token_count: Option<u64>,
    #[serde(default)]
    cached_content_token_count: Option<u64>,
    #[serde(default)]
    tool_use_prompt_token_count: Option<u64>,
}

impl WireUsage {
    /// `promptTokenCount` includes the cached part; `candidatesTokenCount` excludes the thoughts,
    /// which the runtime counts as output (saturating: the counts are the provider's).
    pub(super) fn to_usage(self) -> Usage {
        let reasoning = self.thoughts_token_count.unwrap_or(0);
        Usage {
            input: self
                .prompt_token_count
                .unwrap_or(0)
                .saturating_add(self.tool_use_prompt_token_count.unwrap_or(0)),
            output: self
                .candidates_token_count
                .unwrap_or(0)
                .saturating_add(reasoning),
            reasoning,
            cached: self.cached_content_token_count.unwrap_or(0),
            cache_creation: 0,
            reported: self.prompt_token_count.is_some(),
        }
    }
}

/// One part as the provider sends it (only the fields the runtime reads).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WirePart {
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) thought: Option<bool>,
    #[serde(default)]
    pub(super) thought_signature: Option<String>,
    #[serde(default)]
    pub(super) function_call: Option<WireCall>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireCall {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) args: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireContent {
    #[serde(default)]
    pub(super) parts: Vec<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireCandidate {
    #[serde(default)]
    pub(super) content: Option<WireContent>,
    #[serde(default)]
    pub(super) finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PromptFeedback {
    #[serde(default)]
    pub(super) block_reason: Option<String>,
}

/// A `GenerateContentResponse`, whole or one chunk of a stream.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireResponse {
    #[serde(default)]
    pub(super) candidates: Vec<WireCandidate>,
    #[serde(default)]
    pub(super) prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    pub(super) usage_metadata: Option<WireUsage>,
    #[serde(default)]
    pub(super) model_version: Option<String>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

/// What one part becomes: a thought, a signature for the part's own block, and that block.
pub(super) enum Piece {
    /// A thought summary and its signature (empty when it had none).
    Thought { text: String, signature: String },
    /// Text, with the signature it carried.
    Text {
        text: String,
        signature: Option<String>,
    },
    /// A function call, with the signature it carried.
    Call {
        id: Option<String>,
        name: String,
        arguments: Value,
        signature: Option<String>,
    },
    /// A part the runtime does not model; only its signature is kept.
    Other { signature: Option<String> },
}

impl Piece {
    /// Read one raw part (a part of an unexpected shape is a part without data).
    pub(super) fn of(raw: Value) -> Self {
        let p: WirePart = serde_json::from_value(raw).unwrap_or_default();
        let signature = p.thought_signature.filter(|s| !s.is_empty());
        match (p.function_call, p.text) {
            (Some(call), _) => Self::Call {
                id: call.id.filter(|id| !id.is_empty()),
                name: call.name,
                arguments: match call.args {
                    None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
                    Some(v) => v,
                },
                signature,
            },
            (None, Some(text)) if p.thought == Some(true) => Self::Thought {
                text,
                signature: signature.unwrap_or_default(),
            },
            (None, Some(text)) => Self::Text { text, signature },
            (None, None) => Self::Other { signature },
        }
    }
}

/// The blocks of a whole answer's parts, in order, minting ids for calls that have none.
fn blocks(parts: Vec<Value>, plan: &DecodePlan) -> Vec<ContentBlock> {
    let mut out = Vec::with_capacity(parts.len());
    let mut calls = 0;
    for raw in parts {
        let signature = match Piece::of(raw) {
            Piece::Thought { text, signature } => {
                out.push(ContentBlock::Thinking {
                    thinking: text,
                    signature: super::tagged(&signature),
                });
                continue;
            }
            Piece::Text { text, signature } => {
                carry(&mut out, signature);
                if !text.is_empty() {
                    out.push(ContentBlock::Text { text });
                }
                continue;
            }
            Piece::Call {
                id,
                name,
                arguments,
                signature,
            } => {
                carry(&mut out, signature);
                let n = plan.next_call_number + calls;
                calls += 1;
                out.push(ContentBlock::ToolCall {
                    id: id.unwrap_or_else(|| format!("call_{n}")),
                    name,
                    arguments,
                });
                continue;
            }
            Piece::Other { signature } => signature,
        };
        carry(&mut out, signature);
    }
    out
}

/// A signature for the next block, kept (tagged) as a redacted-thinking block right before it.
pub(super) fn carry(out: &mut Vec<ContentBlock>, signature: Option<String>) {
    if let Some(signature) = signature {
        out.push(ContentBlock::RedactedThinking {
            data: super::tagged(&signature),
        });
    }
}

/// The error of an answer with no content and no finish reason: the provider failed to produce
/// one (see `llm::errors::empty_answer`: asked again at most once).
pub(super) fn empty_answer(dialect: Dialect) -> Error {
    crate::llm::errors::empty_answer(dialect, "no content and no finish reason")
}

/// An `error` object inside a 200 body or a stream, classified like an HTTP failure before any
/// content (a `RESOURCE_EXHAUSTED` one is throttling, with its `RetryInfo` wait), final after.
pub(super) fn error_in_body(dialect: Dialect, delivered: bool, error: &Value) -> Error {
    let said = match error {
        Value::Object(_) => ProviderError::from_error_object(error),
        other => ProviderError::from_message(&other.to_string()),
    };
    if delivered {
        return crate::llm::errors::in_stream(dialect, true, &said);
    }
    let status = error.get("status").and_then(Value::as_str).unwrap_or("");
    let code = error.get("code").and_then(Value::as_u64).unwrap_or(0);
    let wait: Option<Duration> = super::retry_delay_of(error);
    match (status, code) {
        ("RESOURCE_EXHAUSTED", _) | (_, 429) => {
            Error::throttled_because(None, wait, said.describe())
        }
        ("UNAVAILABLE" | "INTERNAL" | "DEADLINE_EXCEEDED", _) | (_, 500..=599) => {
            Error::transient(dialect.as_str(), said.describe(), wait)
        }
        _ => crate::llm::errors::in_stream(dialect, false, &said),
    }
}

/// Decode a whole answer body.
pub(crate) fn decode(plan: &DecodePlan, body: &[u8]) -> Result<ChatResponse> {
    let service = plan.dialect.as_str();
    let wire: WireResponse = serde_json::from_slice(body).map_err(|e| {
        Error::Retry(RetrySignal::UnreadableAnswer {
            service: service.to_owned(),
            detail: format!("the answer was not the shape the protocol defines: {e}"),
        })
    })?;
    if let Some(error) = &wire.error {
        return Err(error_in_body(plan.dialect, false, error));
    }
    let usage = wire.usage_metadata.unwrap_or_default().to_usage();
    let model = wire.model_version.unwrap_or_default();
    let Some(candidate) = wire.candidates.into_iter().next() else {
        let blocked = wire.prompt_feedback.and_then(|f| f.block_reason);
        return match blocked {
            // The prompt was refused: a legitimate (empty) answer, not a failure.
            Some(_) => Ok(ChatResponse {
                content: Vec::new(),
                stop: StopReason::Refusal,
                usage,
                model,
                logprobs: None,
            }),
            None => Err(empty_answer(plan.dialect)),
        };
    };
    let content = blocks(candidate.content.map(|c| c.parts).unwrap_or_default(), plan);
    if content.is_empty() && candidate.finish_reason.is_none() {
        return Err(empty_answer(plan.dialect));
    }
    let stop = settle_stop(
        super::stop_reason(candidate.finish_reason.as_deref()),
        &content,
    );
    Ok(ChatResponse {
        content,
        stop,
        usage,
        model,
        logprobs: None,
    })
}
