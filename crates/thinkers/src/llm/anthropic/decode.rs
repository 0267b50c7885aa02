//! Read a whole Anthropic Messages answer.
//!
//! Unknown block types (server tools, citations and whatever comes next) are skipped; unknown
//! stop reasons become `StopReason::Other`. An answer with no content and no stop reason is a
//! provider failure (an empty answer, asked again at most once), not an empty success; empty
//! content with a stop reason (say
//! `end_turn`) is a legitimate empty answer. The wire types here are shared with
//! [`super::stream`].

use serde::Deserialize;
use serde_json::Value;

use crate::llm::encoded::DecodePlan;
use crate::llm::errors::ProviderError;
use crate::llm::message::ContentBlock;
use crate::llm::response::{ChatResponse, Usage, settle_stop};
use crate::{Error, Result, RetrySignal};

#[derive(Debug, Default, Clone, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Default, Clone, Deserialize)]
pub(super) struct OutputDetails {
    #[serde(default)]
    thinking_tokens: Option<u64>,
}

impl WireUsage {
    /// Overlay the fields a later report carries (a `message_delta` is cumulative).
    pub(super) fn merge(&mut self, later: Self) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        if later.output_tokens_details.is_some() {
            self.output_tokens_details = later.output_tokens_details;
        }
    }

    /// The provider's `input_tokens` is the uncached part only; the total adds both cache parts
    /// (saturating: the counts are the provider's, and a sum past `u64::MAX` must not panic).
    pub(super) fn to_usage(&self) -> Usage {
        let cached = self.cache_read_input_tokens.unwrap_or(0);
        let cache_creation = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input: self
                .input_tokens
                .unwrap_or(0)
                .saturating_add(cached)
                .saturating_add(cache_creation),
            output: self.output_tokens.unwrap_or(0),
            reasoning: self
                .output_tokens_details
                .as_ref()
                .and_then(|d| d.thinking_tokens)
                .unwrap_or(0),
            cached,
            cache_creation,
            reported: self.input_tokens.is_some() && self.output_tokens.is_some(),
        }
    }
}

/// One content block as the provider sends it.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct WireMessage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

/// The tool input as the caller sees it: an object (an absent one is empty).
pub(super) fn input_value(v: Value) -> Value {
    match v {
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other,
    }
}

/// Convert one provider block; `None` for blocks the runtime does not model.
pub(super) fn to_block(b: WireBlock, minted: impl FnOnce() -> String) -> Option<ContentBlock> {
    Some(match b {
        WireBlock::Text { text } => ContentBlock::Text { text },
        WireBlock::Thinking {
            thinking,
            signature,
        } => ContentBlock::Thinking {
            thinking,
            signature,
        },
        WireBlock::RedactedThinking { data } => ContentBlock::RedactedThinking { data },
        WireBlock::ToolUse { id, name, input } => ContentBlock::ToolCall {
            id: if id.is_empty() { minted() } else { id },
            name,
            arguments: input_value(input),
        },
        WireBlock::Unknown => return None,
    })
}

/// The error of an answer with no content and no stop reason: the provider failed to produce
/// one (see `llm::errors::empty_answer`: asked again at most once).
pub(super) fn empty_answer(dialect: crate::llm::target::Dialect) -> Error {
    crate::llm::errors::empty_answer(dialect, "no content and no stop reason")
}

/// Decode a whole answer body.
pub(crate) fn decode(plan: &DecodePlan, body: &[u8]) -> Result<ChatResponse> {
    let service = plan.dialect.as_str();
    let wire: WireMessage = serde_json::from_slice(body).map_err(|e| {
        Error::Retry(RetrySignal::UnreadableAnswer {
            service: service.to_owned(),
            detail: format!("the answer was not the shape the protocol defines: {e}"),
        })
    })?;
    if wire.kind.as_deref() == Some("error") {
        let err = wire
            .error
            .as_ref()
            .map(ProviderError::from_error_object)
            .unwrap_or_default();
        return Err(crate::llm::errors::in_stream(plan.dialect, false, &err));
    }
    let mut content = Vec::with_capacity(wire.content.len());
    let mut calls = 0;
    for raw in wire.content {
        // A block of a known type with an unexpected shape is skipped rather than fatal.
        let Ok(b) = serde_json::from_value::<WireBlock>(raw) else {
            continue;
        };
        let n = plan.next_call_number + calls;
        if let Some(block) = to_block(b, || format!("call_{n}")) {
            if matches!(block, ContentBlock::ToolCall { .. }) {
                calls += 1;
            }
            content.push(block);
        }
    }
    if content.is_empty() && wire.stop_reason.is_none() {
        return Err(empty_answer(plan.dialect));
    }
    let stop = settle_stop(super::stop_reason(wire.stop_reason.as_deref()), &content);
    Ok(ChatResponse {
        content,
        stop,
        usage: wire
            .usage
            .as_ref()
            .map(WireUsage::to_usage)
            .unwrap_or_default(),
        model: wire.model.unwrap_or_default(),
        logprobs: None,
    })
}
