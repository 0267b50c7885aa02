//! The dialect switch: encode a request and decode its answer for whichever wire format a target
//! speaks, applying the text-based tool protocol on top when the target has no native tools.

use crate::Result;
use crate::llm::encoded::{DecodePlan, EncodedRequest};
use crate::llm::request::ChatRequest;
use crate::llm::response::{ChatResponse, StreamDelta};
use crate::llm::target::{Dialect, WireTarget};
use crate::llm::text_tools::{self, TextGate};
use crate::llm::{anthropic, bedrock, gemini, openai, responses};

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
        Dialect::OpenAiResponses => responses::encode::encode(target, req, stream),
        Dialect::Gemini => gemini::encode::encode(target, req, stream),
        Dialect::BedrockConverse => bedrock::encode::encode(target, req, stream),
    }
}

/// Decode a whole (non-streamed) answer body.
pub fn decode(plan: &DecodePlan, body: &[u8]) -> Result<ChatResponse> {
    let mut response = match plan.dialect {
        Dialect::OpenAi | Dialect::OpenAiCompatible => openai::decode::decode(plan, body)?,
        Dialect::Anthropic => anthropic::decode::decode(plan, body)?,
        Dialect::OpenAiResponses => responses::decode::decode(plan, body)?,
        Dialect::Gemini => gemini::decode::decode(plan, body)?,
        Dialect::BedrockConverse => bedrock::decode::decode(plan, body)?,
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
    Responses(responses::stream::ResponsesStream),
    Gemini(gemini::stream::GeminiStream),
    Bedrock(bedrock::stream::BedrockStream),
}

/// Decodes a streamed answer event by event, handing increments to a callback.
///
/// Feed it each server-sent event's data (for Bedrock, each event-stream message as the JSON of
/// its union member) with [`StreamDecoder::push`] and call
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
            Dialect::OpenAiResponses => {
                Inner::Responses(responses::stream::ResponsesStream::new(plan))
            }
            Dialect::Gemini => Inner::Gemini(gemini::stream::GeminiStream::new(plan)),
            Dialect::BedrockConverse => Inner::Bedrock(bedrock::stream::BedrockStream::new(plan)),
        };
        Self {
            plan,
            inner,
            gate: plan.text_tools.then(TextGate::default),
        }
    }

    /// Whether content (a text, thinking or tool-call delta) has been delivered. After that a
    /// failure is final: the request must not be replayed, since the caller may already have
    /// acted on what arrived. Before it (no event yet, or only opening events such as a role
    /// chunk or `message_start`), a failed stream may be sent again like a failed request.
    pub fn delivered_content(&self) -> bool {
        match &self.inner {
            Inner::OpenAi(s) => s.delivered_content(),
            Inner::Anthropic(s) => s.delivered_content(),
            Inner::Responses(s) => s.delivered_content(),
            Inner::Gemini(s) => s.delivered_content(),
            Inner::Bedrock(s) => s.delivered_content(),
        }
    }

    /// Whether the stream said it is complete.
    pub fn is_done(&self) -> bool {
        match &self.inner {
            Inner::OpenAi(s) => s.is_done(),
            Inner::Anthropic(s) => s.is_done(),
            Inner::Responses(s) => s.is_done(),
            Inner::Gemini(s) => s.is_done(),
            Inner::Bedrock(s) => s.is_done(),
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
            Inner::Responses(s) => s.push(data, &mut route),
            Inner::Gemini(s) => s.push(data, &mut route),
            Inner::Bedrock(s) => s.push(data, &mut route),
        }
    }

    /// Build the answer once the stream has ended. A stream that ended before its terminal event
    /// (`[DONE]` or a finish reason; `message_stop` or a stop reason) is an error: a transient
    /// one when no content was delivered (an empty stream included), a final one after.
    pub fn finish(self, on_delta: &mut dyn FnMut(StreamDelta)) -> Result<ChatResponse> {
        let mut response = match self.inner {
            Inner::OpenAi(s) => s.finish()?,
            Inner::Anthropic(s) => s.finish()?,
            Inner::Responses(s) => s.finish()?,
            Inner::Gemini(s) => s.finish()?,
            Inner::Bedrock(s) => s.finish()?,
        };
        if let Some(mut gate) = self.gate {
            apply_text_tools(&self.plan, &mut response);
            gate.finish(&response.content, on_delta);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    //! How streams and answers end: terminal events, content delivered, empty answers, error
    //! events of OpenAI-compatible servers.

    use serde_json::json;

    use super::*;
    use crate::{Error, ErrorKind, RetrySignal};

    fn plan(dialect: Dialect) -> DecodePlan {
        DecodePlan {
            dialect,
            text_tools: false,
            next_call_number: 0,
            stream: true,
        }
    }

    /// Pushes every event (stopping at the first error) and finishes.
    fn run(dialect: Dialect, events: &[serde_json::Value]) -> (Result<ChatResponse>, bool) {
        let mut d = StreamDecoder::new(plan(dialect));
        for e in events {
            let data = match e.as_str() {
                Some(s) => s.to_owned(),
                None => e.to_string(),
            };
            if let Err(err) = d.push(&data, &mut |_| {}) {
                return (Err(err), d.delivered_content());
            }
        }
        let delivered = d.delivered_content();
        (d.finish(&mut |_| {}), delivered)
    }

    fn is_transient(r: &Result<ChatResponse>) -> bool {
        matches!(r, Err(Error::Retry(RetrySignal::Transient { .. })))
    }

    /// An empty answer: asked again on the unreadable-answer bound (at most once by default).
    fn is_empty_answer(r: &Result<ChatResponse>) -> bool {
        matches!(r, Err(Error::Retry(RetrySignal::UnreadableAnswer { detail, .. }))
            if detail.contains("the answer was empty"))
    }

    fn is_final(r: &Result<ChatResponse>) -> bool {
        matches!(r, Err(e) if e.kind() == ErrorKind::ExternalService)
    }

    fn role() -> serde_json::Value {
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    }

    fn text(t: &str) -> serde_json::Value {
        json!({"choices": [{"index": 0, "delta": {"content": t}}]})
    }

    fn message_start() -> serde_json::Value {
        json!({"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3}}})
    }

    fn anthropic_text() -> Vec<serde_json::Value> {
        vec![
            message_start(),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
        ]
    }

    #[test]
    fn a_stream_ending_before_any_content_is_transient() {
        for dialect in [Dialect::OpenAi, Dialect::OpenAiCompatible] {
            for events in [vec![], vec![role()]] {
                let (r, delivered) = run(dialect, &events);
                assert!(!delivered);
                assert!(is_transient(&r), "{dialect:?} {events:?}: {r:?}");
                let msg = r.unwrap_err().to_string();
                assert!(msg.contains("before any answer arrived"), "{msg}");
            }
        }
        let opening = &anthropic_text()[..3];
        for events in [&[][..], &opening[..1], opening] {
            let (r, delivered) = run(Dialect::Anthropic, events);
            assert!(!delivered);
            assert!(is_transient(&r), "{events:?}: {r:?}");
        }
    }

    #[test]
    fn a_stream_ending_after_content_is_final() {
        let (r, delivered) = run(Dialect::OpenAi, &[role(), text("Hel")]);
        assert!(delivered);
        assert!(is_final(&r), "{r:?}");
        assert!(
            r.unwrap_err()
                .to_string()
                .contains("before the answer was complete")
        );
        let (r, delivered) = run(Dialect::Anthropic, &anthropic_text());
        assert!(delivered);
        assert!(is_final(&r), "{r:?}");
        // A tool call's start is content too: the caller may have shown it.
        let tool = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "function": {"name": "lookup", "arguments": ""}}]}}]});
        let (r, delivered) = run(Dialect::OpenAiCompatible, &[role(), tool]);
        assert!(delivered && is_final(&r), "{r:?}");
    }

    #[test]
    fn a_message_delta_without_a_stop_reason_does_not_end_the_stream() {
        let mut events = anthropic_text();
        events.push(json!({"type": "message_delta", "delta": {"stop_reason": null}}));
        assert!(is_final(&run(Dialect::Anthropic, &events).0));
        events.pop();
        events.push(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}));
        let r = run(Dialect::Anthropic, &events).0.unwrap();
        assert_eq!(r.text(), "Hi");
    }

    #[test]
    fn an_error_event_counts_content_not_events() {
        let err = json!({"type": "error", "error": {"type": "api_error", "message": "boom"}});
        let mut events = anthropic_text()[..3].to_vec();
        events.push(err.clone());
        assert!(is_transient(&run(Dialect::Anthropic, &events).0));
        let mut events = anthropic_text();
        events.push(err);
        assert!(is_final(&run(Dialect::Anthropic, &events).0));
    }

    #[test]
    fn openai_compatible_error_events_are_errors_not_parse_failures() {
        let server = json!({"error": {"message": "generation failed", "type": "server_error"}});
        let (r, _) = run(Dialect::OpenAiCompatible, &[role(), server.clone()]);
        assert!(is_transient(&r), "before content, classified: {r:?}");
        let (r, _) = run(Dialect::OpenAiCompatible, &[role(), text("a"), server]);
        let msg = r.unwrap_err().to_string();
        assert!(msg.contains("generation failed"), "{msg}");
        // vLLM's numeric code, and its older bare error object, are read as errors too.
        let vllm = json!({"error": {"object": "error", "message": "bad request: context too long",
            "type": "BadRequestError", "param": null, "code": 400}});
        let msg = run(Dialect::OpenAiCompatible, &[vllm])
            .0
            .unwrap_err()
            .to_string();
        assert!(msg.contains("context too long"), "{msg}");
        let bare = json!({"object": "error", "message": "out of memory", "type": "InternalServerError",
            "code": 500, "choices": "none"});
        let msg = run(Dialect::OpenAiCompatible, &[bare])
            .0
            .unwrap_err()
            .to_string();
        assert!(msg.contains("out of memory"), "{msg}");
        let bare =
            json!({"object": "error", "message": "queue full", "type": "ServiceUnavailableError"});
        let msg = run(Dialect::OpenAiCompatible, &[role(), bare])
            .0
            .unwrap_err()
            .to_string();
        assert!(msg.contains("queue full"), "{msg}");
        let text_error = json!({"error": "model is loading"});
        let msg = run(Dialect::OpenAi, &[text_error])
            .0
            .unwrap_err()
            .to_string();
        assert!(msg.contains("model is loading"), "{msg}");
    }

    #[test]
    fn an_anthropic_answer_without_content_or_stop_reason_is_a_provider_failure() {
        let whole = |body: serde_json::Value| {
            decode(
                &DecodePlan {
                    stream: false,
                    ..plan(Dialect::Anthropic)
                },
                body.to_string().as_bytes(),
            )
        };
        let r = whole(json!({"type": "message", "content": [], "stop_reason": null}));
        assert!(is_empty_answer(&r), "{r:?}");
        assert!(r.unwrap_err().to_string().contains("empty"));
        // Empty content with a stop reason is a legitimate empty answer.
        let r = whole(json!({"type": "message", "content": [], "stop_reason": "end_turn"}));
        let r = r.unwrap();
        assert!(r.content.is_empty());
        assert_eq!(r.stop, crate::llm::StopReason::EndTurn);
        // Streamed: `message_delta` with no stop reason, then `message_stop`.
        let events = [
            message_start(),
            json!({"type": "message_delta", "delta": {"stop_reason": null}, "usage": {"output_tokens": 0}}),
            json!({"type": "message_stop"}),
        ];
        let (r, _) = run(Dialect::Anthropic, &events);
        assert!(is_empty_answer(&r), "{r:?}");
        let events = [
            message_start(),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
            json!({"type": "message_stop"}),
        ];
        assert!(
            run(Dialect::Anthropic, &events)
                .0
                .unwrap()
                .content
                .is_empty()
        );
    }

    /// The first content event of each dialect (Bedrock: the JSON its frame reader renders).
    fn first_content(dialect: Dialect) -> Vec<serde_json::Value> {
        match dialect {
            Dialect::OpenAi | Dialect::OpenAiCompatible => vec![role(), text("Hel")],
            Dialect::Anthropic => anthropic_text(),
            Dialect::OpenAiResponses => vec![
                json!({"type": "response.created", "response": {"model": "m"}}),
                json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hel"}),
            ],
            Dialect::Gemini => {
                vec![json!({"candidates": [{"content": {"parts": [{"text": "Hel"}]}}]})]
            }
            Dialect::BedrockConverse => vec![
                json!({"messageStart": {"role": "assistant"}}),
                json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hel"}}}),
            ],
        }
    }

    const DIALECTS: [Dialect; 6] = [
        Dialect::OpenAi,
        Dialect::OpenAiCompatible,
        Dialect::Anthropic,
        Dialect::OpenAiResponses,
        Dialect::Gemini,
        Dialect::BedrockConverse,
    ];

    #[test]
    fn a_malformed_event_before_content_is_transient_after_it_final() {
        let malformed = json!("{\"choices\": [oops");
        for dialect in DIALECTS {
            let (r, delivered) = run(dialect, std::slice::from_ref(&malformed));
            assert!(!delivered);
            assert!(is_transient(&r), "{dialect:?}: {r:?}");
            // After opening events that carry no content, still before content.
            let mut opening = first_content(dialect);
            opening.pop();
            opening.push(malformed.clone());
            let (r, delivered) = run(dialect, &opening);
            assert!(!delivered);
            assert!(is_transient(&r), "{dialect:?} after opening events: {r:?}");
            let mut started = first_content(dialect);
            started.push(malformed.clone());
            let (r, delivered) = run(dialect, &started);
            assert!(delivered, "{dialect:?}");
            assert!(is_final(&r), "{dialect:?}: {r:?}");
            let msg = r.unwrap_err().to_string();
            assert!(msg.contains("never replayed"), "{dialect:?}: {msg}");
        }
    }

    #[test]
    fn an_empty_streamed_answer_is_asked_again_at_most_once_in_every_dialect() {
        let gemini =
            [json!({"candidates": [{"content": {"parts": [], "role": "model"}, "index": 0}]})];
        assert!(is_empty_answer(&run(Dialect::Gemini, &gemini).0));
        // No event at all is a stream cut short, not an empty answer.
        assert!(is_transient(&run(Dialect::Gemini, &[]).0));
        let bedrock = [
            json!({"messageStart": {"role": "assistant"}}),
            json!({"metadata": {"usage": {"inputTokens": 3, "outputTokens": 0}}}),
        ];
        assert!(is_empty_answer(&run(Dialect::BedrockConverse, &bedrock).0));
        assert!(is_transient(
            &run(Dialect::BedrockConverse, &bedrock[..1]).0
        ));
    }
}
