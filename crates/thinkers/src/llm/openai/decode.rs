//! Read a whole OpenAI Chat Completions answer.
//!
//! Every field is optional on the way in (local servers leave many out) and unknown fields are
//! ignored. The wire types here are shared with [`super::stream`].

use serde::Deserialize;
use serde_json::Value;

use crate::llm::common::normalise_arguments;
use crate::llm::encoded::DecodePlan;
use crate::llm::message::ContentBlock;
use crate::llm::response::{ChatResponse, StopReason, TokenLogprob, Usage, settle_stop};
use crate::{Error, Result};

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    cache_write_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    pub(super) fn to_usage(&self) -> Usage {
        let p = self.prompt_tokens_details.as_ref();
        Usage {
            input: self.prompt_tokens.unwrap_or(0),
            output: self.completion_tokens.unwrap_or(0),
            reasoning: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            cached: p.and_then(|d| d.cached_tokens).unwrap_or(0),
            cache_creation: p.and_then(|d| d.cache_write_tokens).unwrap_or(0),
            reported: self.prompt_tokens.is_some() && self.completion_tokens.is_some(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireLogprobs {
    #[serde(default)]
    pub(super) content: Option<Vec<WireTokenLogprob>>,
}

#[derive(Debug, Deserialize)]
pub(super) struct WireTokenLogprob {
    #[serde(default)]
    token: String,
    #[serde(default)]
    logprob: f64,
    #[serde(default)]
    top_logprobs: Vec<WireTop>,
}

#[derive(Debug, Deserialize)]
struct WireTop {
    #[serde(default)]
    token: String,
    #[serde(default)]
    logprob: f64,
}

impl WireTokenLogprob {
    pub(super) fn to_logprob(&self) -> TokenLogprob {
        TokenLogprob {
            token: self.token.clone(),
            logprob: self.logprob,
            top: self
                .top_logprobs
                .iter()
                .map(|t| (t.token.clone(), t.logprob))
                .collect(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireFunction {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(super) struct WireToolCall {
    #[serde(default)]
    pub(super) index: Option<usize>,
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) function: Option<WireFunction>,
}

#[derive(Debug, Default, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
    /// vLLM and llama.cpp carry reasoning here; Ollama uses `reasoning`.
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    logprobs: Option<WireLogprobs>,
}

#[derive(Debug, Deserialize)]
struct WireCompletion {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
    /// `"error"` on the bare error object older vLLM builds answer with.
    #[serde(default)]
    object: Option<String>,
    #[serde(default)]
    message: Option<Value>,
}

/// A text content that is a string or (some servers) an array of text parts.
fn content_text(v: Option<Value>) -> String {
    match v {
        Some(Value::String(s)) => s,
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// The message of an `{"error": …}` object, for errors reported inside a 200 answer.
pub(super) fn error_message(e: &Value) -> String {
    e.get("message")
        .and_then(Value::as_str)
        .map_or_else(|| e.to_string(), str::to_owned)
}

/// Decode a whole answer body.
pub(crate) fn decode(plan: &DecodePlan, body: &[u8]) -> Result<ChatResponse> {
    let service = plan.dialect.as_str();
    let wire: WireCompletion = serde_json::from_slice(body).map_err(|e| {
        Error::Retry(crate::RetrySignal::UnreadableAnswer {
            service: service.to_owned(),
            detail: format!("the answer was not the shape the protocol defines: {e}"),
        })
    })?;
    if let Some(e) = &wire.error {
        return Err(Error::external(service, "response", error_message(e)));
    }
    if wire.object.as_deref() == Some("error") {
        let message = match &wire.message {
            Some(Value::String(m)) => m.clone(),
            Some(other) => other.to_string(),
            None => "the answer was an error object".to_owned(),
        };
        return Err(Error::external(service, "response", message));
    }
    let Some(choice) = wire.choices.into_iter().next() else {
        return Err(Error::Retry(crate::RetrySignal::UnreadableAnswer {
            service: service.to_owned(),
            detail: "the answer had no choices".to_owned(),
        }));
    };
    let msg = choice.message.unwrap_or_default();
    let mut content = Vec::new();
    if let Some(r) = msg
        .reasoning_content
        .or(msg.reasoning)
        .filter(|r| !r.is_empty())
    {
        content.push(ContentBlock::Thinking {
            thinking: r,
            signature: String::new(),
        });
    }
    let mut stop = super::stop_reason(choice.finish_reason.as_deref());
    let text = content_text(msg.content);
    if !text.is_empty() {
        content.push(ContentBlock::Text { text });
    }
    if let Some(refusal) = msg.refusal.filter(|r| !r.is_empty()) {
        content.push(ContentBlock::Text { text: refusal });
        stop = StopReason::Refusal;
    }
    for (i, call) in msg.tool_calls.unwrap_or_default().into_iter().enumerate() {
        let f = call.function.unwrap_or_default();
        content.push(ContentBlock::ToolCall {
            id: call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{}", plan.next_call_number + i)),
            name: f.name.unwrap_or_default(),
            arguments: normalise_arguments(f.arguments),
        });
    }
    let stop = settle_stop(stop, &content);
    Ok(ChatResponse {
        content,
        stop,
        usage: wire
            .usage
            .as_ref()
            .map(WireUsage::to_usage)
            .unwrap_or_default(),
        model: wire.model.unwrap_or_default(),
        logprobs: choice
            .logprobs
            .and_then(|l| l.content)
            .map(|c| c.iter().map(WireTokenLogprob::to_logprob).collect()),
    })
}
