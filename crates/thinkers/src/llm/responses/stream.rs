//! Read an OpenAI Responses answer streamed as typed server-sent events.
//!
//! Each event's data carries its `type`: `response.created` / `response.in_progress` (the model),
//! `response.output_item.added` (a `function_call` item opens a tool call),
//! `response.output_text.delta`, `response.refusal.delta`,
//! `response.reasoning_summary_text.delta`, `response.function_call_arguments.delta` (by
//! `output_index`), `response.output_item.done` (the finished item, kept whole: a reasoning item
//! is carried back byte for byte), then one terminal event: `response.completed` or
//! `response.incomplete` (status, usage) or `response.failed` (its error). An `error` event ends
//! the stream with its error. Other events (content parts, `.done` events of deltas, web search
//! progress, whatever comes next) are ignored. There is no `[DONE]`.
//!
//! A stream that ends without a terminal event is an error: transient while no content was
//! delivered, final after.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::decode::{Collected, WireResponse, failure};
use crate::Result;
use crate::llm::common::ended_early;
use crate::llm::encoded::DecodePlan;
use crate::llm::errors::{ProviderError, in_stream};
use crate::llm::response::{ChatResponse, StreamDelta};

#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", default)]
    kind: Cow<'a>,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default, borrow)]
    item: Option<&'a RawValue>,
    #[serde(default)]
    response: Option<WireResponse>,
}

type Cow<'a> = std::borrow::Cow<'a, str>;

#[derive(Debug, Deserialize)]
struct ItemHead {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

/// The state of one streamed Responses answer.
#[derive(Debug)]
pub(crate) struct ResponsesStream {
    plan: DecodePlan,
    model: String,
    /// Tool calls opened so far: output index → position among the answer's calls.
    calls: BTreeMap<usize, usize>,
    /// Finished items by output index, as the provider sent them.
    items: BTreeMap<usize, Box<RawValue>>,
    terminal: Option<WireResponse>,
    delivered: bool,
}

impl ResponsesStream {
    /// A decoder for one answer.
    pub(crate) fn new(plan: DecodePlan) -> Self {
        Self {
            plan,
            model: String::new(),
            calls: BTreeMap::new(),
            items: BTreeMap::new(),
            terminal: None,
            delivered: false,
        }
    }

    /// Whether a text, reasoning or tool-call delta was handed out.
    pub(crate) fn delivered_content(&self) -> bool {
        self.delivered
    }

    /// Whether the terminal event arrived.
    pub(crate) fn is_done(&self) -> bool {
        self.terminal.is_some()
    }

    /// Take one event's data.
    pub(crate) fn push(&mut self, data: &str, on_delta: &mut dyn FnMut(StreamDelta)) -> Result<()> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let event: Event<'_> = serde_json::from_str(data).map_err(|e| {
            crate::llm::errors::malformed_event(
                self.plan.dialect,
                self.delivered,
                &format!("not the shape the protocol defines: {e}"),
            )
        })?;
        match event.kind.as_ref() {
            "response.created" | "response.in_progress" => {
                if let Some(m) = event.response.and_then(|r| r.model) {
                    self.model = m;
                }
            }
            "response.output_text.delta" => {
                if let Some(t) = event.delta.filter(|t| !t.is_empty()) {
                    self.delivered = true;
                    on_delta(StreamDelta::Text(t));
                }
            }
            "response.reasoning_summary_text.delta" => {
                if let Some(t) = event.delta.filter(|t| !t.is_empty()) {
                    self.delivered = true;
                    on_delta(StreamDelta::Thinking(t));
                }
            }
            "response.refusal.delta" => self.delivered = true,
            "response.output_item.added" => {
                let (Some(index), Some(item)) = (event.output_index, event.item) else {
                    return Ok(());
                };
                let Ok(head) = serde_json::from_str::<ItemHead>(item.get()) else {
                    return Ok(());
                };
                if head.kind == "function_call" {
                    let position = self.calls.len();
                    self.calls.insert(index, position);
                    self.delivered = true;
                    on_delta(StreamDelta::ToolCallStart {
                        index: position,
                        id: head.call_id.unwrap_or_else(|| {
                            format!("call_{}", self.plan.next_call_number + position)
                        }),
                        name: head.name.unwrap_or_default(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                let position = event.output_index.and_then(|i| self.calls.get(&i));
                if let (Some(&index), Some(fragment)) = (position, event.delta) {
                    self.delivered = true;
                    on_delta(StreamDelta::ToolCallArguments { index, fragment });
                }
            }
            "response.output_item.done" => {
                if let (Some(index), Some(item)) = (event.output_index, event.item) {
                    self.items.insert(index, item.to_owned());
                }
            }
            "response.completed" | "response.incomplete" => {
                let mut response = event.response.unwrap_or_default();
                if response.status.is_none() {
                    response.status = Some(
                        event
                            .kind
                            .strip_prefix("response.")
                            .unwrap_or("completed")
                            .to_owned(),
                    );
                }
                self.terminal = Some(response);
            }
            "response.failed" => {
                let error = event.response.and_then(|r| r.error);
                return Err(failure(&self.plan, self.delivered, error.as_ref()));
            }
            "error" => {
                let whole: Value = serde_json::from_str(data).unwrap_or_default();
                // The event carries `code`, `message` and `param` itself (older servers nest
                // them under `error`).
                let inner = whole
                    .get("error")
                    .filter(|e| e.is_object())
                    .unwrap_or(&whole);
                let mut err = ProviderError::from_error_object(inner);
                if err.kind.as_deref() == Some("error") {
                    err.kind = None;
                }
                return Err(in_stream(self.plan.dialect, self.delivered, &err));
            }
            _ => {}
        }
        Ok(())
    }

    /// Build the answer once the stream has ended.
    pub(crate) fn finish(self) -> Result<ChatResponse> {
        let Some(mut response) = self.terminal else {
            return Err(ended_early(self.plan.dialect, self.delivered));
        };
        if response.model.as_deref().is_none_or(str::is_empty) && !self.model.is_empty() {
            response.model = Some(self.model);
        }
        let collected = (!self.items.is_empty()).then(|| {
            let mut c = Collected::default();
            for raw in self.items.values() {
                c.push(raw, self.plan.next_call_number);
            }
            c
        });
        response.into_answer(&self.plan, collected)
    }
}
