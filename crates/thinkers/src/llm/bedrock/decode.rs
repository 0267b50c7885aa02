//! Read a whole Converse answer, and what Bedrock says when it refuses a request.
//!
//! Unknown block members (citations, guard content and whatever comes next) are skipped;
//! unknown stop reasons become `StopReason::Other`. An answer with no content and no stop reason
//! is a provider failure (an empty answer, asked again at most once), not an empty success. The usage's `inputTokens` is the
//! uncached part; the total adds the cache reads and writes, as for Anthropic. The wire types
//! here are shared with [`super::stream`].

use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::Value;

use crate::llm::encoded::DecodePlan;
use crate::llm::errors::ProviderError;
use crate::llm::message::ContentBlock;
use crate::llm::response::{ChatResponse, Usage, settle_stop};
use crate::{Error, Result, RetrySignal};

/// `usage` of an answer or of a stream's `metadata` event.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_write_input_tokens: u64,
}

impl WireUsage {
    pub(super) fn to_usage(&self) -> Usage {
        Usage {
            input: self
                .input_tokens
                .saturating_add(self.cache_read_input_tokens)
                .saturating_add(self.cache_write_input_tokens),
            output: self.output_tokens,
            reasoning: 0,
            cached: self.cache_read_input_tokens,
            cache_creation: self.cache_write_input_tokens,
            reported: true,
        }
    }
}

/// One content block as Converse sends it: a union, one member set.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireBlock {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_use: Option<WireToolUse>,
    #[serde(default)]
    reasoning_content: Option<WireReasoning>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireToolUse {
    #[serde(default)]
    tool_use_id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    input: Value,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireReasoning {
    #[serde(default)]
    reasoning_text: Option<WireReasoningText>,
    /// A blob: base64 text in JSON.
    #[serde(default)]
    redacted_content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireReasoningText {
    #[serde(default)]
    text: String,
    #[serde(default)]
    signature: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Vec<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct WireOutput {
    #[serde(default)]
    message: Option<WireMessage>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse {
    #[serde(default)]
    output: Option<WireOutput>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// The tool input as the caller sees it: an object (an absent one is empty).
pub(super) fn input_value(v: Value) -> Value {
    match v {
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other,
    }
}

fn to_block(raw: Value, minted: impl FnOnce() -> String) -> Option<ContentBlock> {
    // A block of an unexpected shape is skipped rather than fatal.
    let b: WireBlock = serde_json::from_value(raw).ok()?;
    if let Some(text) = b.text {
        return Some(ContentBlock::Text { text });
    }
    if let Some(t) = b.tool_use {
        return Some(ContentBlock::ToolCall {
            id: if t.tool_use_id.is_empty() {
                minted()
            } else {
                t.tool_use_id
            },
            name: t.name,
            arguments: input_value(t.input),
        });
    }
    let r = b.reasoning_content?;
    if let Some(t) = r.reasoning_text {
        return Some(ContentBlock::Thinking {
            thinking: t.text,
            signature: t.signature.unwrap_or_default(),
        });
    }
    r.redacted_content
        .map(|data| ContentBlock::RedactedThinking { data })
}

/// The error of an answer with no content and no stop reason: the provider failed to produce
/// one (see `llm::errors::empty_answer`: asked again at most once).
pub(super) fn empty_answer(dialect: crate::llm::target::Dialect) -> Error {
    crate::llm::errors::empty_answer(dialect, "no content and no stop reason")
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
    let raw = wire
        .output
        .and_then(|o| o.message)
        .map(|m| m.content)
        .unwrap_or_default();
    let mut content = Vec::with_capacity(raw.len());
    let mut calls = 0;
    for b in raw {
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
        // Converse does not name the model in its answer; the endpoint did.
        model: String::new(),
        logprobs: None,
    })
}

/// What Bedrock said when it refused a request: the exception's name from the
/// `x-amzn-ErrorType` header (`ThrottlingException:http://…`), else the body's `__type` or
/// `code`, and the body's `message` (`Message` in some services).
pub(crate) fn provider_error(headers: &HeaderMap, body: &[u8]) -> ProviderError {
    #[derive(Deserialize, Default)]
    struct Said {
        #[serde(default, rename = "__type")]
        kind: Option<String>,
        #[serde(default)]
        code: Option<String>,
        #[serde(default, alias = "Message")]
        message: Option<String>,
    }
    let from_header = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .map(exception_name);
    let said: Said = serde_json::from_slice(body).unwrap_or_default();
    let kind = from_header.or_else(|| said.kind.or(said.code).as_deref().map(exception_name));
    let message = said
        .message
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    ProviderError::from_error_object(&serde_json::json!({"type": kind, "message": message}))
}

/// `ThrottlingException:http://internal…` or `com.amazon…#ThrottlingException` →
/// `ThrottlingException`.
fn exception_name(raw: &str) -> String {
    let name = raw.split(':').next().unwrap_or(raw);
    name.rsplit('#').next().unwrap_or(name).trim().to_owned()
}
