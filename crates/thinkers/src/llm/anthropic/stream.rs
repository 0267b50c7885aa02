//! Read an Anthropic Messages answer streamed as server-sent events.
//!
//! Events: `message_start` (model and input usage), then per block `content_block_start`,
//! `content_block_delta` (`text_delta`, `thinking_delta`, `signature_delta`, `input_json_delta`)
//! and `content_block_stop`, then `message_delta` (stop reason and cumulative usage) and
//! `message_stop`. `ping` and unknown events are ignored. Tool input arrives as JSON fragments,
//! concatenated per block and parsed at the block's end (empty means `{}`; JSON that does not
//! parse is kept as the raw string so the caller can correct the model). An `error` event can
//! arrive inside a 200 stream; it ends the stream with that error. An unreadable event is
//! transient before any content, final after.
//!
//! A stream that ends without `message_stop` or a stop reason is an error: transient while no
//! content was delivered, final after. A complete answer with no content and no stop reason is an
//! empty answer (asked again at most once, `llm::errors::empty_answer`), as in [`super::decode`].

use serde::Deserialize;
use serde_json::Value;

use super::decode::{WireBlock, WireUsage, input_value, to_block};
use crate::Result;
use crate::llm::encoded::DecodePlan;
use crate::llm::errors::{ProviderError, in_stream};
use crate::llm::message::ContentBlock;
use crate::llm::response::{ChatResponse, StreamDelta, settle_stop};

#[derive(Debug, Deserialize)]
struct StartMessage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text {
        #[serde(default)]
        text: String,
    },
    #[serde(rename = "thinking_delta")]
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    #[serde(rename = "signature_delta")]
    Signature {
        #[serde(default)]
        signature: String,
    },
    #[serde(rename = "input_json_delta")]
    InputJson {
        #[serde(default)]
        partial_json: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        #[serde(default)]
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug)]
enum Partial {
    Done(ContentBlock),
    ToolUse {
        id: String,
        name: String,
        json: String,
        start_input: Value,
    },
    Skipped,
}

/// The state of one streamed Anthropic answer.
#[derive(Debug)]
pub(crate) struct AnthropicStream {
    plan: DecodePlan,
    model: String,
    usage: WireUsage,
    blocks: Vec<(usize, Partial)>,
    calls: usize,
    stop_reason: Option<String>,
    done: bool,
    events: usize,
    delivered: bool,
}

impl AnthropicStream {
    /// A decoder for one answer.
    pub(crate) fn new(plan: DecodePlan) -> Self {
        Self {
            plan,
            model: String::new(),
            usage: WireUsage::default(),
            blocks: Vec::new(),
            calls: 0,
            stop_reason: None,
            done: false,
            events: 0,
            delivered: false,
        }
    }

    /// Whether a text, thinking or tool-call delta was handed out (after which a failure must
    /// not be replayed: the caller may already have acted on it).
    pub(crate) fn delivered_content(&self) -> bool {
        self.delivered
    }

    /// Whether `message_stop` arrived.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    fn block_mut(&mut self, index: usize) -> Option<&mut Partial> {
        self.blocks
            .iter_mut()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, p)| p)
    }

    /// The position among the answer's tool calls of the tool-use block at `index`.
    fn call_position(&self, index: usize) -> usize {
        self.blocks
            .iter()
            .take_while(|(i, _)| *i != index)
            .filter(|(_, p)| {
                matches!(
                    p,
                    Partial::ToolUse { .. } | Partial::Done(ContentBlock::ToolCall { .. })
                )
            })
            .count()
    }

    /// Take one event. `data` is the event's JSON; its `type` names the event.
    pub(crate) fn push(&mut self, data: &str, on_delta: &mut dyn FnMut(StreamDelta)) -> Result<()> {
        if data.trim().is_empty() {
            return Ok(());
        }
        let event: Event = serde_json::from_str(data).map_err(|e| {
            crate::llm::errors::malformed_event(self.plan.dialect, self.delivered, &e.to_string())
        })?;
        match event {
            Event::Ping | Event::Unknown => return Ok(()),
            Event::Error { error } => {
                let err = match &error {
                    Value::Object(_) => ProviderError::from_error_object(&error),
                    other => ProviderError::from_message(&other.to_string()),
                };
                return Err(in_stream(self.plan.dialect, self.delivered, &err));
            }
            _ => {}
        }
        self.events += 1;
        match event {
            Event::MessageStart { message } => {
                self.model = message.model.unwrap_or_default();
                if let Some(u) = message.usage {
                    self.usage.merge(u);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.start_block(index, content_block, on_delta),
            Event::ContentBlockDelta { index, delta } => self.delta(index, delta, on_delta),
            Event::ContentBlockStop { index } => self.stop_block(index),
            Event::MessageDelta { delta, usage } => {
                if delta.stop_reason.is_some() {
                    self.stop_reason = delta.stop_reason;
                }
                if let Some(u) = usage {
                    self.usage.merge(u);
                }
            }
            Event::MessageStop => self.done = true,
            Event::Ping | Event::Unknown | Event::Error { .. } => {}
        }
        Ok(())
    }

    fn start_block(&mut self, index: usize, raw: Value, on_delta: &mut dyn FnMut(StreamDelta)) {
        let partial = match serde_json::from_value::<WireBlock>(raw) {
            Ok(WireBlock::ToolUse { id, name, input }) => {
                let position = self.calls;
                self.calls += 1;
                let id = if id.is_empty() {
                    format!("call_{}", self.plan.next_call_number + position)
                } else {
                    id
                };
                self.delivered = true;
                on_delta(StreamDelta::ToolCallStart {
                    index: position,
                    id: id.clone(),
                    name: name.clone(),
                });
                Partial::ToolUse {
                    id,
                    name,
                    json: String::new(),
                    start_input: input,
                }
            }
            Ok(b) => {
                if let WireBlock::Text { text } = &b
                    && !text.is_empty()
                {
                    self.delivered = true;
                    on_delta(StreamDelta::Text(text.clone()));
                }
                to_block(b, String::new).map_or(Partial::Skipped, Partial::Done)
            }
            Err(_) => Partial::Skipped,
        };
        self.blocks.push((index, partial));
    }

    fn delta(&mut self, index: usize, delta: Delta, on_delta: &mut dyn FnMut(StreamDelta)) {
        let position = self.call_position(index);
        let Some(block) = self.block_mut(index) else {
            return;
        };
        let delivered = match (block, delta) {
            (Partial::Done(ContentBlock::Text { text }), Delta::Text { text: t }) => {
                text.push_str(&t);
                on_delta(StreamDelta::Text(t));
                true
            }
            (
                Partial::Done(ContentBlock::Thinking { thinking, .. }),
                Delta::Thinking { thinking: t },
            ) => {
                thinking.push_str(&t);
                on_delta(StreamDelta::Thinking(t));
                true
            }
            (
                Partial::Done(ContentBlock::Thinking { signature, .. }),
                Delta::Signature { signature: s },
            ) => {
                signature.push_str(&s);
                false
            }
            (Partial::ToolUse { json, .. }, Delta::InputJson { partial_json })
                if !partial_json.is_empty() =>
            {
                json.push_str(&partial_json);
                on_delta(StreamDelta::ToolCallArguments {
                    index: position,
                    fragment: partial_json,
                });
                true
            }
            _ => false,
        };
        self.delivered |= delivered;
    }

    fn stop_block(&mut self, index: usize) {
        let Some(block) = self.block_mut(index) else {
            return;
        };
        if let Partial::ToolUse {
            id,
            name,
            json,
            start_input,
        } = block
        {
            let arguments = if json.trim().is_empty() {
                input_value(std::mem::take(start_input))
            } else {
                serde_json::from_str::<Value>(json)
                    .unwrap_or_else(|_| Value::String(std::mem::take(json)))
            };
            *block = Partial::Done(ContentBlock::ToolCall {
                id: std::mem::take(id),
                name: std::mem::take(name),
                arguments,
            });
        }
    }

    /// Build the answer once the stream has ended.
    pub(crate) fn finish(mut self) -> Result<ChatResponse> {
        // `message_stop`, or a `message_delta` naming the stop reason (the only place one is
        // set), completes the answer.
        if !self.done && self.stop_reason.is_none() {
            return Err(crate::llm::common::ended_early(
                self.plan.dialect,
                self.delivered,
            ));
        }
        let indices: Vec<usize> = self.blocks.iter().map(|(i, _)| *i).collect();
        for i in indices {
            self.stop_block(i);
        }
        let content: Vec<ContentBlock> = self
            .blocks
            .into_iter()
            .filter_map(|(_, p)| match p {
                Partial::Done(b) => Some(b),
                _ => None,
            })
            .collect();
        if content.is_empty() && self.stop_reason.is_none() {
            return Err(super::decode::empty_answer(self.plan.dialect));
        }
        let stop = settle_stop(super::stop_reason(self.stop_reason.as_deref()), &content);
        Ok(ChatResponse {
            content,
            stop,
            usage: self.usage.to_usage(),
            model: self.model,
            logprobs: None,
        })
    }
}
