//! Read a whole OpenAI Responses answer (a `response` object).
//!
//! Output items are read in order: `reasoning` (kept whole, see [`super`]), `message` (its
//! `output_text` parts are the text; a `refusal` part is a refusal), `function_call` (a tool call
//! under its `call_id`). Unknown items and fields are ignored. `status` says how it ended:
//! `incomplete` with `max_output_tokens` is a truncation, with `content_filter` a refusal;
//! `failed` is the error it carries. The wire types here are shared with [`super::stream`].

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::llm::common::normalise_arguments;
use crate::llm::encoded::DecodePlan;
use crate::llm::errors::{ProviderError, in_stream};
use crate::llm::message::ContentBlock;
use crate::llm::response::{ChatResponse, StopReason, Usage, settle_stop};
use crate::{Error, Result, RetrySignal};

#[derive(Debug, Default, Clone, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    cache_write_tokens: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// Cached tokens are part of `input_tokens`, reasoning tokens part of `output_tokens`.
    pub(super) fn to_usage(&self) -> Usage {
        let input = self.input_tokens_details.as_ref();
        Usage {
            input: self.input_tokens.unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
            reasoning: self
                .output_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            cached: input.and_then(|d| d.cached_tokens).unwrap_or(0),
            cache_creation: input.and_then(|d| d.cache_write_tokens).unwrap_or(0),
            reported: self.input_tokens.is_some() && self.output_tokens.is_some(),
        }
    }
}

#[derive(Debug, Default, Clone, Deserialize)]
pub(super) struct Incomplete {
    #[serde(default)]
    reason: Option<String>,
}

/// The `response` object (whole, or inside a stream's terminal event).
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireResponse {
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) status: Option<String>,
    #[serde(default)]
    pub(super) output: Vec<Box<RawValue>>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) incomplete_details: Option<Incomplete>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct SummaryPart {
    #[serde(default)]
    text: String,
}

#[derive(Debug, Deserialize)]
struct ContentPart {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

/// One output item as the provider sends it.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireItem {
    Message {
        #[serde(default)]
        content: Vec<ContentPart>,
    },
    FunctionCall {
        #[serde(default)]
        call_id: Option<String>,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        arguments: Option<Value>,
    },
    Reasoning {
        #[serde(default)]
        summary: Vec<SummaryPart>,
    },
    #[serde(other)]
    Unknown,
}

/// What an answer's items add up to.
#[derive(Debug, Default)]
pub(super) struct Collected {
    pub(super) content: Vec<ContentBlock>,
    pub(super) refused: bool,
    calls: usize,
}

impl Collected {
    /// Add one output item, given as the provider's raw JSON (kept whole for a reasoning item).
    pub(super) fn push(&mut self, raw: &RawValue, next_call_number: usize) {
        // An item of a known type with an unexpected shape is skipped rather than fatal.
        let Ok(item) = serde_json::from_str::<WireItem>(raw.get()) else {
            return;
        };
        match item {
            WireItem::Reasoning { summary } => {
                let thinking = summary
                    .into_iter()
                    .map(|p| p.text)
                    .collect::<Vec<_>>()
                    .join("\n\n");
                self.content.push(ContentBlock::Thinking {
                    thinking,
                    signature: raw.get().to_owned(),
                });
            }
            WireItem::Message { content } => {
                for part in content {
                    match (part.kind.as_str(), part.text, part.refusal) {
                        ("refusal", _, Some(r)) | (_, None, Some(r)) => {
                            self.refused = true;
                            self.content.push(ContentBlock::Text { text: r });
                        }
                        (_, Some(text), _) if !text.is_empty() => {
                            self.content.push(ContentBlock::Text { text });
                        }
                        _ => {}
                    }
                }
            }
            WireItem::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                let n = next_call_number + self.calls;
                self.calls += 1;
                self.content.push(ContentBlock::ToolCall {
                    id: call_id
                        .filter(|id| !id.is_empty())
                        .unwrap_or_else(|| format!("call_{n}")),
                    name: name.unwrap_or_default(),
                    arguments: normalise_arguments(arguments),
                });
            }
            WireItem::Unknown => {}
        }
    }
}

/// The stop reason a response's `status` and `incomplete_details` give.
pub(super) fn stop_reason(status: Option<&str>, incomplete: Option<&Incomplete>) -> StopReason {
    match status {
        None | Some("completed") => StopReason::EndTurn,
        Some("incomplete") => match incomplete.and_then(|i| i.reason.as_deref()) {
            Some("max_output_tokens") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            Some(other) => StopReason::Other(other.to_owned()),
            None => StopReason::Other("incomplete".to_owned()),
        },
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// The error a `failed` response (or a response-level `error`) reports.
pub(super) fn failure(plan: &DecodePlan, delivered: bool, error: Option<&Value>) -> Error {
    let err = match error {
        Some(e @ Value::Object(_)) => ProviderError::from_error_object(e),
        _ => ProviderError {
            message: "the response failed without saying why".to_owned(),
            ..ProviderError::default()
        },
    };
    in_stream(plan.dialect, delivered, &err)
}

impl WireResponse {
    /// The answer this response holds, its items read from `output` unless `collected` (a
    /// stream's finished items) is given.
    pub(super) fn into_answer(
        self,
        plan: &DecodePlan,
        collected: Option<Collected>,
    ) -> Result<ChatResponse> {
        if self.status.as_deref() == Some("failed")
            || self.error.as_ref().is_some_and(|e| !e.is_null())
        {
            return Err(failure(plan, false, self.error.as_ref()));
        }
        let collected = match collected {
            Some(c) if !c.content.is_empty() || self.output.is_empty() => c,
            _ => {
                let mut c = Collected::default();
                for raw in &self.output {
                    c.push(raw, plan.next_call_number);
                }
                c
            }
        };
        let mut stop = stop_reason(self.status.as_deref(), self.incomplete_details.as_ref());
        if collected.refused && stop == StopReason::EndTurn {
            stop = StopReason::Refusal;
        }
        let stop = settle_stop(stop, &collected.content);
        Ok(ChatResponse {
            content: collected.content,
            stop,
            usage: self
                .usage
                .as_ref()
                .map(WireUsage::to_usage)
                .unwrap_or_default(),
            model: self.model.unwrap_or_default(),
            logprobs: None,
        })
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
    if wire.status.is_none() && wire.output.is_empty() && wire.error.is_none() {
        return Err(Error::Retry(RetrySignal::UnreadableAnswer {
            service: service.to_owned(),
            detail: "the answer had no status and no output".to_owned(),
        }));
    }
    wire.into_answer(plan, None)
}
