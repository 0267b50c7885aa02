//! The dialect switch: encode a request and decode its answer for whichever wire format a target
//! speaks, applying the text-based tool protocol on top when the target has no native tools.

use crate::Result;
use crate::llm::encoded::{DecodePlan, EncodedRequest};
use crate::llm::request::ChatRequest;
use crate::llm::response::{ChatResponse, StreamDelta};
use crate::llm::target::{Dialect, WireTarget};
use crate::llm::text_tools::{self, TextGate};
use crate::llm::{anthropic, openai};

/// Render a request to the exact bytes that will be sent (streamed when `req.stream`).
pub fn encode(target: &WireTarget, req: &ChatRequest) -> Result<EncodedRequest> {
    encode_with(target, req, req.stream)
}

pub(crate) fn encode_with(
    target: &WireTarget,
    req: &ChatRequest,
    stream: bool,
) -> Result<EncodedRequest> {
    match target.dialect {
        Dialect::OpenAi | Dialect::OpenAiCompatible => openai::encode::encode(target, req, stream),
        Dialect::Anthropic => anthropic::encode::encode(target, req, stream),
    }
}

/// Decode a whole (non-streamed) answer body.
pub fn decode(plan: &DecodePlan, body: &[u8]) -> Result<ChatResponse> {
    let mut response = match plan.dialect {
        Dialect::OpenAi | Dialect::OpenAiCompatible => openai::decode::decode(plan, body)?,
        Dialect::Anthropic => anthropic::decode::decode(plan, body)?,
    };
    if plan.text_tools {
        apply_text_tools(plan, &mut response);
    }
    Ok(response)
}

fn apply_text_tools(plan: &DecodePlan, response: &mut ChatResponse) {
    text_tools::apply_to_content(&mut response.content, plan.next_call_number);
    response.stop = crate::llm::response::settle_stop(response.stop.clone(), &response.content);
}

#[derive(Debug)]
enum Inner {
    OpenAi(openai::stream::OpenAiStream),
    Anthropic(anthropic::stream::AnthropicStream),
}

/// Decodes a streamed answer event by event, handing increments to a callback.
///
/// Feed it each server-sent event's data with [`StreamDecoder::push`] and call
/// [`StreamDecoder::finish`] when the stream ends. With text-protocol tools, answer text that may
/// be a tool-call object is held back until the answer is complete (see `llm::text_tools`).
#[derive(Debug)]
pub struct StreamDecoder {
    plan: DecodePlan,
    inner: Inner,
    gate: Option<TextGate>,
}

impl StreamDecoder {
    /// A decoder for the answer to a request encoded with this plan.
    pub fn new(plan: DecodePlan) -> Self {
        let inner = match plan.dialect {
            Dialect::OpenAi | Dialect::OpenAiCompatible => {
                Inner::OpenAi(openai::stream::OpenAiStream::new(plan))
            }
            Dialect::Anthropic => Inner::Anthropic(anthropic::stream::AnthropicStream::new(plan)),
        };
        Self {
            plan,
            inner,
            gate: plan.text_tools.then(TextGate::default),
        }
    }

    /// Whether any response event has arrived. After one, a failure is final: the request must
    /// not be replayed, since the model may already have acted.
    pub fn seen_event(&self) -> bool {
        match &self.inner {
            Inner::OpenAi(s) => s.seen_event(),
            Inner::Anthropic(s) => s.seen_event(),
        }
    }

    /// Whether content was handed on (placeholder until the stream decoders track it).
    pub fn delivered_content(&self) -> bool {
        self.seen_event()
    }

    /// Whether the stream said it is complete.
    pub fn is_done(&self) -> bool {
        match &self.inner {
            Inner::OpenAi(s) => s.is_done(),
            Inner::Anthropic(s) => s.is_done(),
        }
    }

    /// Take one event's data.
    pub fn push(&mut self, data: &str, on_delta: &mut dyn FnMut(StreamDelta)) -> Result<()> {
        let gate = &mut self.gate;
        let mut route = |d: StreamDelta| match (gate.as_mut(), d) {
            (Some(g), StreamDelta::Text(t)) => g.text(&t, on_delta),
            (_, d) => on_delta(d),
        };
        match &mut self.inner {
            Inner::OpenAi(s) => s.push(data, &mut route),
            Inner::Anthropic(s) => s.push(data, &mut route),
        }
    }

    /// Build the answer once the stream has ended.
    pub fn finish(self, on_delta: &mut dyn FnMut(StreamDelta)) -> Result<ChatResponse> {
        let mut response = match self.inner {
            Inner::OpenAi(s) => s.finish()?,
            Inner::Anthropic(s) => s.finish()?,
        };
        if let Some(mut gate) = self.gate {
            apply_text_tools(&self.plan, &mut response);
            gate.finish(&response.content, on_delta);
        }
        Ok(response)
    }
}
