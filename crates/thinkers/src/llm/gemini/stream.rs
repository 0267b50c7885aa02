//! Read a Gemini answer streamed as server-sent events (`streamGenerateContent?alt=sse`).
//!
//! Each event's data is a whole `GenerateContentResponse` holding the next parts of the first
//! candidate: text and thought fragments (concatenated into one block while they run on), and
//! function calls, which arrive whole (handed out as a start and one argument fragment). The
//! last event carries the `finishReason` and the usage; the stream then simply ends (there is no
//! `[DONE]`). A signature arriving on a text fragment (often on a closing empty one) belongs to
//! the text it closes, so it is kept right before that text's block, as a whole answer keeps it.
//!
//! A stream that ends without a finish reason is an error: transient while no content was
//! delivered, final after; one that closed after candidates holding nothing is an empty answer
//! (asked again at most once, `llm::errors::empty_answer`). An `error` object in an event ends
//! the stream with that error; an unreadable event is transient before content, final after.

use serde_json::Value;

use super::decode::{Piece, WireResponse, WireUsage, carry, error_in_body};
use crate::Result;
use crate::llm::encoded::DecodePlan;
use crate::llm::message::ContentBlock;
use crate::llm::response::{ChatResponse, StopReason, StreamDelta, settle_stop};

/// Which block the last fragment went to, so the next fragment of the same kind joins it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    /// The text block at this index of `content`.
    Text(usize),
    /// The thinking block at this index of `content`.
    Thought(usize),
}

/// The state of one streamed Gemini answer.
#[derive(Debug)]
pub(crate) struct GeminiStream {
    plan: DecodePlan,
    model: String,
    usage: Option<WireUsage>,
    content: Vec<ContentBlock>,
    open: Open,
    calls: usize,
    finish_reason: Option<String>,
    blocked: bool,
    delivered: bool,
    /// Whether an event held a candidate (an answer, however empty).
    answered: bool,
}

impl GeminiStream {
    /// A decoder for one answer.
    pub(crate) fn new(plan: DecodePlan) -> Self {
        Self {
            plan,
            model: String::new(),
            usage: None,
            content: Vec::new(),
            open: Open::None,
            calls: 0,
            finish_reason: None,
            blocked: false,
            delivered: false,
            answered: false,
        }
    }

    /// Whether a text, thinking or tool-call delta was handed out.
    pub(crate) fn delivered_content(&self) -> bool {
        self.delivered
    }

    /// Whether the answer is complete: its finish reason and its usage arrived (they come in the
    /// last event), or the prompt was blocked.
    pub(crate) fn is_done(&self) -> bool {
        self.blocked || (self.finish_reason.is_some() && self.usage.is_some())
    }

    /// Take one event's data.
    pub(crate) fn push(&mut self, data: &str, on_delta: &mut dyn FnMut(StreamDelta)) -> Result<()> {
        if data.trim().is_empty() {
            return Ok(());
        }
        let chunk: WireResponse = serde_json::from_str(data).map_err(|e| {
            crate::llm::errors::malformed_event(self.plan.dialect, self.delivered, &e.to_string())
        })?;
        if let Some(error) = &chunk.error {
            return Err(error_in_body(self.plan.dialect, self.delivered, error));
        }
        if let Some(m) = chunk.model_version {
            self.model = m;
        }
        if let Some(u) = chunk.usage_metadata {
            self.usage = Some(u);
        }
        if chunk.candidates.is_empty()
            && chunk.prompt_feedback.and_then(|f| f.block_reason).is_some()
        {
            self.blocked = true;
        }
        let Some(candidate) = chunk.candidates.into_iter().next() else {
            return Ok(());
        };
        self.answered = true;
        for raw in candidate.content.map(|c| c.parts).unwrap_or_default() {
            self.part(raw, on_delta);
        }
        if candidate.finish_reason.is_some() {
            self.finish_reason = candidate.finish_reason;
        }
        Ok(())
    }

    fn part(&mut self, raw: Value, on_delta: &mut dyn FnMut(StreamDelta)) {
        match Piece::of(raw) {
            Piece::Thought { text, signature } => self.thought(text, &signature, on_delta),
            Piece::Text { text, signature } => self.text(text, signature, on_delta),
            Piece::Call {
                id,
                name,
                arguments,
                signature,
            } => {
                self.open = Open::None;
                carry(&mut self.content, signature);
                let position = self.calls;
                self.calls += 1;
                let id =
                    id.unwrap_or_else(|| format!("call_{}", self.plan.next_call_number + position));
                self.delivered = true;
                on_delta(StreamDelta::ToolCallStart {
                    index: position,
                    id: id.clone(),
                    name: name.clone(),
                });
                on_delta(StreamDelta::ToolCallArguments {
                    index: position,
                    fragment: arguments.to_string(),
                });
                self.content.push(ContentBlock::ToolCall {
                    id,
                    name,
                    arguments,
                });
            }
            Piece::Other { signature } => {
                self.open = Open::None;
                carry(&mut self.content, signature);
            }
        }
    }

    fn thought(&mut self, text: String, signature: &str, on_delta: &mut dyn FnMut(StreamDelta)) {
        if !text.is_empty() {
            self.delivered = true;
            on_delta(StreamDelta::Thinking(text.clone()));
        }
        if let Open::Thought(i) = self.open
            && let Some(ContentBlock::Thinking {
                thinking,
                signature: s,
            }) = self.content.get_mut(i)
        {
            thinking.push_str(&text);
            if !signature.is_empty() {
                *s = super::tagged(signature);
                // A signed thought closes its run.
                self.open = Open::None;
            }
            return;
        }
        self.content.push(ContentBlock::Thinking {
            thinking: text,
            signature: super::tagged(signature),
        });
        self.open = if signature.is_empty() {
            Open::Thought(self.content.len() - 1)
        } else {
            Open::None
        };
    }

    fn text(
        &mut self,
        text: String,
        signature: Option<String>,
        on_delta: &mut dyn FnMut(StreamDelta),
    ) {
        if !text.is_empty() {
            self.delivered = true;
            on_delta(StreamDelta::Text(text.clone()));
        }
        match self.open {
            Open::Text(i) => {
                if let Some(ContentBlock::Text { text: t }) = self.content.get_mut(i) {
                    t.push_str(&text);
                }
                if let Some(signature) = signature {
                    // The signature belongs to the text it closes: before that text's block.
                    let data = super::tagged(&signature);
                    self.content
                        .insert(i, ContentBlock::RedactedThinking { data });
                    self.open = Open::None;
                }
            }
            _ => {
                carry(&mut self.content, signature.clone());
                if text.is_empty() {
                    self.open = Open::None;
                } else {
                    self.content.push(ContentBlock::Text { text });
                    self.open = if signature.is_some() {
                        Open::None
                    } else {
                        Open::Text(self.content.len() - 1)
                    };
                }
            }
        }
    }

    /// Build the answer once the stream has ended.
    pub(crate) fn finish(self) -> Result<ChatResponse> {
        let usage = self.usage.unwrap_or_default().to_usage();
        if self.blocked && self.content.is_empty() {
            return Ok(ChatResponse {
                content: Vec::new(),
                stop: StopReason::Refusal,
                usage,
                model: self.model,
                logprobs: None,
            });
        }
        if self.finish_reason.is_none() && self.answered && self.content.is_empty() {
            // The stream closed cleanly after a candidate with nothing in it: an empty answer,
            // not one cut short (Gemini has no opening events, so a cut stream holds none).
            return Err(super::decode::empty_answer(self.plan.dialect));
        }
        if self.finish_reason.is_none() {
            return Err(crate::llm::common::ended_early(
                self.plan.dialect,
                self.delivered,
            ));
        }
        let stop = settle_stop(
            super::stop_reason(self.finish_reason.as_deref()),
            &self.content,
        );
        Ok(ChatResponse {
            content: self.content,
            stop,
            usage,
            model: self.model,
            logprobs: None,
        })
    }
}
