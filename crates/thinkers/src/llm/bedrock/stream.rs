//! Read a Converse answer streamed as AWS event-stream frames (`converse-stream`).
//!
//! Two layers. [`FrameReader`] cuts the binary body into messages with the maintained decoder
//! of `aws-smithy-eventstream` (each frame's prelude and message CRCs are checked there) and
//! renders each as the JSON of the `ConverseStreamOutput` union member it carries:
//! `{"<:event-type>": payload}` for an event, `{"<:exception-type>": payload}` for an exception,
//! and `{"error": {"code", "message"}}` for a protocol error. [`BedrockStream`] reads those
//! values the way the other dialects' stream decoders read server-sent events' data, so the
//! client feeds both through one loop.
//!
//! Events: `messageStart`, then per block an optional `contentBlockStart` (a tool call's id and
//! name), `contentBlockDelta`s (`text`, `toolUse.input` fragments, `reasoningContent` `text`,
//! `signature` or `redactedContent`) and `contentBlockStop`, then `messageStop` (the stop
//! reason) and `metadata` (usage). An exception ends the stream with its error: throttling is
//! throttling and a server error transient while no content was delivered; after content it is
//! final. A stream that ends without `messageStop` is an error: transient while no content was
//! delivered, final after; one whose closing `metadata` followed no content is an empty answer
//! (asked again at most once, `llm::errors::empty_answer`). An unreadable event is transient
//! before content, final after.

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::BytesMut;
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::Value;

use super::decode::{WireUsage, input_value};
use crate::llm::encoded::DecodePlan;
use crate::llm::errors::{ProviderError, in_stream};
use crate::llm::message::ContentBlock;
use crate::llm::redact::chain;
use crate::llm::response::{ChatResponse, StreamDelta, Usage, settle_stop};
use crate::{Error, Result};

/// The media type of an event stream.
pub(crate) const CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// Cuts an event-stream body into messages, each rendered as its union member's JSON.
#[derive(Debug, Default)]
pub(crate) struct FrameReader {
    decoder: MessageFrameDecoder,
    buffer: BytesMut,
}

impl FrameReader {
    /// Take the next bytes of the body; returns the messages they completed, in order, or what
    /// was wrong with a frame (a bad length or checksum, a payload that is not JSON).
    pub(crate) fn push(&mut self, chunk: &[u8]) -> std::result::Result<Vec<String>, String> {
        self.buffer.extend_from_slice(chunk);
        let mut out = Vec::new();
        loop {
            match self.decoder.decode_frame(&mut self.buffer) {
                Ok(DecodedFrame::Complete(message)) => out.push(render(&message)?),
                Ok(DecodedFrame::Incomplete) => return Ok(out),
                Err(e) => return Err(format!("an event-stream frame was unreadable: {e}")),
            }
        }
    }
}

/// The messages of an event-stream body, each rendered as its union member's JSON, or what
/// broke: the connection or a frame.
pub(crate) fn events(
    body: impl Stream<Item = reqwest::Result<bytes::Bytes>>,
) -> impl Stream<Item = std::result::Result<String, String>> {
    let mut reader = FrameReader::default();
    body.flat_map(move |chunk| {
        let items: Vec<std::result::Result<String, String>> = match chunk {
            Ok(bytes) => match reader.push(&bytes) {
                Ok(messages) => messages.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            },
            Err(e) => vec![Err(chain(&e.without_url()))],
        };
        futures::stream::iter(items)
    })
}

fn header<'a>(message: &'a Message, name: &str) -> Option<&'a str> {
    message
        .headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str()),
            _ => None,
        })
}

/// One message as `{"<member>": payload}`.
fn render(message: &Message) -> std::result::Result<String, String> {
    let payload = || -> std::result::Result<Value, String> {
        if message.payload().is_empty() {
            return Ok(Value::Object(serde_json::Map::new()));
        }
        serde_json::from_slice(message.payload())
            .map_err(|e| format!("an event's payload was not JSON: {e}"))
    };
    let (member, value) = match header(message, ":message-type") {
        Some("exception") => (
            header(message, ":exception-type").unwrap_or("exception"),
            payload()?,
        ),
        Some("error") => (
            "error",
            serde_json::json!({
                "code": header(message, ":error-code"),
                "message": header(message, ":error-message"),
            }),
        ),
        _ => (
            header(message, ":event-type").unwrap_or("unknown"),
            payload()?,
        ),
    };
    let mut union = serde_json::Map::with_capacity(1);
    union.insert(member.to_owned(), value);
    Ok(Value::Object(union).to_string())
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStart {
    #[serde(default)]
    tool_use: Option<ToolUseStart>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseStart {
    #[serde(default)]
    tool_use_id: String,
    #[serde(default)]
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Delta {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_use: Option<ToolUseDelta>,
    #[serde(default)]
    reasoning_content: Option<ReasoningDelta>,
}

#[derive(Debug, Deserialize)]
struct ToolUseDelta {
    #[serde(default)]
    input: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReasoningDelta {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    redacted_content: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
enum Event {
    MessageStart {},
    ContentBlockStart {
        #[serde(default)]
        start: BlockStart,
        content_block_index: usize,
    },
    ContentBlockDelta {
        #[serde(default)]
        delta: Delta,
        content_block_index: usize,
    },
    ContentBlockStop {},
    MessageStop {
        #[serde(default)]
        stop_reason: Option<String>,
    },
    Metadata {
        #[serde(default)]
        usage: Option<WireUsage>,
    },
}

/// A block being assembled.
#[derive(Debug)]
enum Partial {
    Text(String),
    Reasoning {
        text: String,
        signature: String,
    },
    Redacted(String),
    Tool {
        id: String,
        name: String,
        json: String,
        position: usize,
    },
}

/// The state of one streamed Converse answer.
#[derive(Debug)]
pub(crate) struct BedrockStream {
    plan: DecodePlan,
    /// The `metadata` event's usage; `None` until one arrives.
    usage: Option<WireUsage>,
    /// By content block index, in order of first appearance.
    blocks: Vec<(usize, Partial)>,
    calls: usize,
    stop_reason: Option<String>,
    metadata: bool,
    delivered: bool,
}

impl BedrockStream {
    /// A decoder for one answer.
    pub(crate) fn new(plan: DecodePlan) -> Self {
        Self {
            plan,
            usage: None,
            blocks: Vec::new(),
            calls: 0,
            stop_reason: None,
            metadata: false,
            delivered: false,
        }
    }

    /// Whether a text, reasoning or tool-call increment was handed out.
    pub(crate) fn delivered_content(&self) -> bool {
        self.delivered
    }

    /// Whether the closing `metadata` event (after `messageStop`) arrived.
    pub(crate) fn is_done(&self) -> bool {
        self.metadata && self.stop_reason.is_some()
    }

    fn block_mut(&mut self, index: usize) -> Option<&mut Partial> {
        self.blocks
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, p)| p)
    }

    /// Take one message, as [`FrameReader`] rendered it.
    pub(crate) fn push(&mut self, data: &str, on_delta: &mut dyn FnMut(StreamDelta)) -> Result<()> {
        let value: Value = serde_json::from_str(data).map_err(|e| {
            crate::llm::errors::malformed_event(self.plan.dialect, self.delivered, &e.to_string())
        })?;
        let Some((member, _)) = value.as_object().and_then(|o| o.iter().next()) else {
            return Ok(());
        };
        if member.ends_with("Exception") || member == "error" {
            return Err(self.exception(member, &value[member.as_str()]));
        }
        let Ok(event) = serde_json::from_value::<Event>(value) else {
            // An event this decoder does not model, or one of an unexpected shape.
            return Ok(());
        };
        match event {
            Event::MessageStart {} | Event::ContentBlockStop {} => {}
            Event::ContentBlockStart {
                start,
                content_block_index,
            } => {
                if let Some(t) = start.tool_use {
                    self.start_tool(content_block_index, t, on_delta);
                }
            }
            Event::ContentBlockDelta {
                delta,
                content_block_index,
            } => self.delta(content_block_index, delta, on_delta),
            Event::MessageStop { stop_reason } => {
                self.stop_reason = Some(stop_reason.unwrap_or_else(|| "end_turn".to_owned()));
            }
            Event::Metadata { usage } => {
                if let Some(u) = usage {
                    self.usage = Some(u);
                }
                self.metadata = true;
            }
        }
        Ok(())
    }

    fn exception(&self, member: &str, payload: &Value) -> Error {
        let message = payload
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| payload.to_string());
        // `throttlingException` → `ThrottlingException`, as the HTTP header names it.
        let mut kind = member.to_owned();
        if let Some(first) = kind.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        let err = ProviderError::from_error_object(&serde_json::json!({
            "type": kind,
            "message": message,
        }));
        in_stream(self.plan.dialect, self.delivered, &err)
    }

    fn start_tool(&mut self, index: usize, t: ToolUseStart, on_delta: &mut dyn FnMut(StreamDelta)) {
        let position = self.calls;
        self.calls += 1;
        let id = if t.tool_use_id.is_empty() {
            format!("call_{}", self.plan.next_call_number + position)
        } else {
            t.tool_use_id
        };
        self.delivered = true;
        on_delta(StreamDelta::ToolCallStart {
            index: position,
            id: id.clone(),
            name: t.name.clone(),
        });
        self.blocks.push((
            index,
            Partial::Tool {
                id,
                name: t.name,
                json: String::new(),
                position,
            },
        ));
    }

    fn delta(&mut self, index: usize, delta: Delta, on_delta: &mut dyn FnMut(StreamDelta)) {
        if self.block_mut(index).is_none() {
            let fresh = match &delta.reasoning_content {
                Some(r) if r.redacted_content.is_some() => Partial::Redacted(String::new()),
                Some(_) => Partial::Reasoning {
                    text: String::new(),
                    signature: String::new(),
                },
                None if delta.text.is_some() => Partial::Text(String::new()),
                // A tool input fragment for a block that never started: nothing to attach it to.
                None => return,
            };
            self.blocks.push((index, fresh));
        }
        let Some(block) = self.block_mut(index) else {
            return;
        };
        let delivered = match (block, delta) {
            (Partial::Text(text), Delta { text: Some(t), .. }) => {
                text.push_str(&t);
                on_delta(StreamDelta::Text(t));
                true
            }
            (
                Partial::Tool { json, position, .. },
                Delta {
                    tool_use: Some(u), ..
                },
            ) if !u.input.is_empty() => {
                json.push_str(&u.input);
                on_delta(StreamDelta::ToolCallArguments {
                    index: *position,
                    fragment: u.input,
                });
                true
            }
            (
                Partial::Reasoning { text, signature },
                Delta {
                    reasoning_content: Some(r),
                    ..
                },
            ) => {
                if let Some(s) = r.signature {
                    signature.push_str(&s);
                }
                match r.text {
                    Some(t) if !t.is_empty() => {
                        text.push_str(&t);
                        on_delta(StreamDelta::Thinking(t));
                        true
                    }
                    _ => false,
                }
            }
            (
                Partial::Redacted(data),
                Delta {
                    reasoning_content: Some(r),
                    ..
                },
            ) => {
                if let Some(d) = r.redacted_content {
                    data.push_str(&d);
                }
                false
            }
            _ => false,
        };
        self.delivered |= delivered;
    }

    /// Build the answer once the stream has ended.
    pub(crate) fn finish(self) -> Result<ChatResponse> {
        if self.stop_reason.is_none() && self.metadata && self.blocks.is_empty() {
            // The closing `metadata` came after no content and no `messageStop`: an empty
            // answer, not one cut short.
            return Err(super::decode::empty_answer(self.plan.dialect));
        }
        if self.stop_reason.is_none() {
            return Err(crate::llm::common::ended_early(
                self.plan.dialect,
                self.delivered,
            ));
        }
        let content: Vec<ContentBlock> = self
            .blocks
            .into_iter()
            .map(|(_, p)| match p {
                Partial::Text(text) => ContentBlock::Text { text },
                Partial::Reasoning { text, signature } => ContentBlock::Thinking {
                    thinking: text,
                    signature,
                },
                Partial::Redacted(data) => ContentBlock::RedactedThinking { data },
                Partial::Tool { id, name, json, .. } => ContentBlock::ToolCall {
                    id,
                    name,
                    arguments: if json.trim().is_empty() {
                        input_value(Value::Null)
                    } else {
                        serde_json::from_str::<Value>(&json).unwrap_or(Value::String(json))
                    },
                },
            })
            .collect();
        let stop = settle_stop(super::stop_reason(self.stop_reason.as_deref()), &content);
        Ok(ChatResponse {
            content,
            stop,
            usage: self
                .usage
                .as_ref()
                .map_or_else(Usage::default, WireUsage::to_usage),
            model: String::new(),
            logprobs: None,
        })
    }
}
