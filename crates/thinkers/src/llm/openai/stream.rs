//! Read an OpenAI Chat Completions answer streamed as server-sent events.
//!
//! Each event is one `data:` chunk; the stream ends with `data: [DONE]`. Text and reasoning
//! deltas are concatenated; tool-call deltas are accumulated by `index`. Local servers deviate, so
//! a delta without an index that names a new id (or a name) starts a new call, one without either
//! continues the last call, and a delta at an index already holding a complete call under a
//! different id starts a new call (Ollama proxies put every parallel call at index 0). With
//! `include_usage`, the last chunk before `[DONE]` has no choices and carries the usage. A chunk
//! holding `{"error": …}` (what vLLM and llama.cpp send when generation fails mid-stream), or one
//! that is itself an error object (`"object": "error"`, older vLLM), ends the stream with that
//! error, classified by `llm::errors::in_stream`.
//!
//! A stream that ends without `[DONE]` or a finish reason is an error: transient (the request
//! may be sent again) while no content was delivered, final after.

use serde::Deserialize;
use serde_json::Value;

use super::decode::{WireFunction, WireLogprobs, WireToolCall, WireUsage};
use crate::llm::common::{ended_early, normalise_arguments};
use crate::llm::encoded::DecodePlan;
use crate::llm::errors::{self, ProviderError, in_stream};
use crate::llm::message::ContentBlock;
use crate::llm::response::{ChatResponse, StopReason, StreamDelta, TokenLogprob, settle_stop};
use crate::{Error, Result};

#[derive(Debug, Default, Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
struct WireChunkChoice {
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    logprobs: Option<WireLogprobs>,
}

#[derive(Debug, Deserialize)]
struct WireChunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<WireChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
    /// `"error"` on the bare error object older vLLM builds send as an event.
    #[serde(default)]
    object: Option<String>,
}

#[derive(Debug)]
struct PartialCall {
    wire_index: Option<usize>,
    id: String,
    name: String,
    arguments: String,
    whole: Option<Value>,
}

/// The state of one streamed OpenAI answer.
#[derive(Debug)]
pub(crate) struct OpenAiStream {
    plan: DecodePlan,
    model: String,
    thinking: String,
    text: String,
    refusal: String,
    calls: Vec<PartialCall>,
    finish: Option<String>,
    usage: Option<WireUsage>,
    logprobs: Option<Vec<TokenLogprob>>,
    done: bool,
    events: usize,
    delivered: bool,
}

impl OpenAiStream {
    /// A decoder for one answer.
    pub(crate) fn new(plan: DecodePlan) -> Self {
        Self {
            plan,
            model: String::new(),
            thinking: String::new(),
            text: String::new(),
            refusal: String::new(),
            calls: Vec::new(),
            finish: None,
            usage: None,
            logprobs: None,
            done: false,
            events: 0,
            delivered: false,
        }
    }

    /// Whether a text, reasoning or tool-call delta was handed out (after which a failure must
    /// not be replayed: the caller may already have acted on it).
    pub(crate) fn delivered_content(&self) -> bool {
        self.delivered
    }

    /// Whether the stream said it is complete.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Take one event's data. Returns an error for an error chunk or an unreadable chunk.
    pub(crate) fn push(&mut self, data: &str, on_delta: &mut dyn FnMut(StreamDelta)) -> Result<()> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: WireChunk = match serde_json::from_str(data) {
            Ok(chunk) => chunk,
            Err(e) => return Err(self.unreadable(data, &e)),
        };
        if let Some(e) = &chunk.error {
            return Err(self.error_event(e));
        }
        if chunk.object.as_deref() == Some("error") {
            let whole = serde_json::from_str::<Value>(data).unwrap_or_default();
            return Err(self.error_event(&whole));
        }
        self.events += 1;
        if let Some(m) = chunk.model.filter(|m| !m.is_empty()) {
            self.model = m;
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(u);
        }
        let Some(choice) = chunk.choices.into_iter().next() else {
            return Ok(());
        };
        if let Some(f) = choice.finish_reason {
            self.finish = Some(f);
        }
        if let Some(lp) = choice.logprobs.and_then(|l| l.content) {
            self.logprobs
                .get_or_insert_with(Vec::new)
                .extend(lp.iter().map(|t| t.to_logprob()));
        }
        let Some(delta) = choice.delta else {
            return Ok(());
        };
        if let Some(r) = delta
            .reasoning_content
            .or(delta.reasoning)
            .filter(|r| !r.is_empty())
        {
            self.thinking.push_str(&r);
            self.delivered = true;
            on_delta(StreamDelta::Thinking(r));
        }
        if let Some(t) = delta.content.filter(|t| !t.is_empty()) {
            self.text.push_str(&t);
            self.delivered = true;
            on_delta(StreamDelta::Text(t));
        }
        if let Some(r) = delta.refusal {
            self.refusal.push_str(&r);
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.delivered = true;
            self.tool_call_delta(call, on_delta);
        }
        Ok(())
    }

    /// The error an `{"error": …}` event reports.
    fn error_event(&self, e: &Value) -> Error {
        let err = match e {
            Value::Object(_) => ProviderError::from_error_object(e),
            Value::String(m) => ProviderError::from_message(m),
            other => ProviderError::from_message(&other.to_string()),
        };
        in_stream(self.plan.dialect, self.delivered, &err)
    }

    /// An event that is not a chunk: an error object of another shape, or unreadable.
    fn unreadable(&self, data: &str, e: &serde_json::Error) -> Error {
        if let Ok(v) = serde_json::from_str::<Value>(data) {
            if let Some(inner) = v.get("error") {
                return self.error_event(inner);
            }
            if v.get("object").and_then(Value::as_str) == Some("error") {
                return self.error_event(&v);
            }
        }
        errors::malformed_event(
            self.plan.dialect,
            self.delivered,
            &format!("not valid JSON: {e}"),
        )
    }

    fn tool_call_delta(&mut self, call: WireToolCall, on_delta: &mut dyn FnMut(StreamDelta)) {
        let f = call.function.unwrap_or_default();
        let id = call.id.filter(|id| !id.is_empty());
        let existing = match call.index {
            Some(i) => self
                .calls
                .iter()
                .rposition(|c| c.wire_index == Some(i))
                .filter(|&p| {
                    // A different id at an index whose call is already whole: a new call.
                    let c = &self.calls[p];
                    let complete =
                        c.whole.is_some() || serde_json::from_str::<Value>(&c.arguments).is_ok();
                    !(id.as_ref().is_some_and(|id| *id != c.id) && complete)
                }),
            None if id.is_some() || f.name.is_some() => None,
            None => self.calls.len().checked_sub(1),
        };
        let position = match existing {
            Some(p) => p,
            None => {
                let position = self.calls.len();
                let id =
                    id.unwrap_or_else(|| format!("call_{}", self.plan.next_call_number + position));
                let name = f.name.clone().unwrap_or_default();
                on_delta(StreamDelta::ToolCallStart {
                    index: position,
                    id: id.clone(),
                    name: name.clone(),
                });
                self.calls.push(PartialCall {
                    wire_index: call.index,
                    id,
                    name,
                    arguments: String::new(),
                    whole: None,
                });
                position
            }
        };
        let WireFunction { name, arguments } = f;
        let c = &mut self.calls[position];
        if existing.is_some()
            && let Some(n) = name
            && c.name.is_empty()
        {
            c.name = n;
        }
        match arguments {
            Some(Value::String(fragment)) if !fragment.is_empty() => {
                c.arguments.push_str(&fragment);
                on_delta(StreamDelta::ToolCallArguments {
                    index: position,
                    fragment,
                });
            }
            Some(v @ (Value::Object(_) | Value::Array(_))) => {
                on_delta(StreamDelta::ToolCallArguments {
                    index: position,
                    fragment: v.to_string(),
                });
                c.whole = Some(v);
            }
            _ => {}
        }
    }

    /// Build the answer once the stream has ended.
    pub(crate) fn finish(self) -> Result<ChatResponse> {
        if !self.done && self.finish.is_none() {
            return Err(ended_early(self.plan.dialect, self.delivered));
        }
        let mut content = Vec::new();
        if !self.thinking.is_empty() {
            content.push(ContentBlock::Thinking {
                thinking: self.thinking,
                signature: String::new(),
            });
        }
        if !self.text.is_empty() {
            content.push(ContentBlock::Text { text: self.text });
        }
        let mut stop = super::stop_reason(self.finish.as_deref());
        if !self.refusal.is_empty() {
            content.push(ContentBlock::Text { text: self.refusal });
            stop = StopReason::Refusal;
        }
        for c in self.calls {
            content.push(ContentBlock::ToolCall {
                id: c.id,
                name: c.name,
                arguments: match c.whole {
                    Some(v) => v,
                    None => normalise_arguments(Some(Value::String(c.arguments))),
                },
            });
        }
        let stop = settle_stop(stop, &content);
        Ok(ChatResponse {
            content,
            stop,
            usage: self
                .usage
                .as_ref()
                .map(WireUsage::to_usage)
                .unwrap_or_default(),
            model: self.model,
            logprobs: self.logprobs,
        })
    }
}
