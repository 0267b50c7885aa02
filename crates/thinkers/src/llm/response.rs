//! What a model answered, after any dialect decoded it.
//!
//! The shape is the same whichever dialect ran and whether tools were native or text-based.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::message::{ContentBlock, Message, Role};

/// Why the model stopped.
///
/// A turn that carries tool calls is [`StopReason::ToolUse`] whatever the provider's own reason
/// said (local servers report `stop`), except when the provider says the output budget ran out:
/// then it stays [`StopReason::MaxTokens`], because a cut-off call cannot be trusted and the caller
/// should escalate the budget. Unknown reasons become [`StopReason::Other`], never an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A natural end of the answer.
    EndTurn,
    /// The model called tools.
    ToolUse,
    /// The output budget ran out. Not an error at this layer: the caller decides on escalation.
    MaxTokens,
    /// The model or a provider filter refused.
    Refusal,
    /// A stop sequence matched.
    StopSequence,
    /// Anything else the provider said (for example Anthropic `pause_turn`).
    Other(String),
}

impl StopReason {
    /// The normalised name of the stop, as recorded.
    pub fn name(&self) -> &str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::MaxTokens => "max_tokens",
            Self::Refusal => "refusal",
            Self::StopSequence => "stop_sequence",
            Self::Other(s) => s,
        }
    }
}

/// Token usage of one call, the same in every dialect.
///
/// `input` is the whole input and `cached` and `cache_creation` are parts of it, whatever the
/// provider's own convention: Anthropic's `input_tokens` leaves cache reads and writes out (the
/// decoder adds `cache_read_input_tokens` and `cache_creation_input_tokens` back), as does
/// Bedrock's `inputTokens` (`cacheReadInputTokens`, `cacheWriteInputTokens` added back); OpenAI's
/// `prompt_tokens`/`input_tokens` and Gemini's `promptTokenCount` already include their cached
/// tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// All input tokens, those read from and written to the prompt cache included.
    pub input: u64,
    /// Output tokens, reasoning included.
    pub output: u64,
    /// The reasoning part of `output`.
    pub reasoning: u64,
    /// The part of `input` read from the provider's prompt cache (cache reads: Anthropic
    /// `cache_read_input_tokens`, OpenAI `cached_tokens`, Bedrock `cacheReadInputTokens`, Gemini
    /// `cachedContentTokenCount`).
    #[serde(default)]
    pub cached: u64,
    /// The part of `input` written to the provider's prompt cache (cache writes: Anthropic
    /// `cache_creation_input_tokens`, Bedrock `cacheWriteInputTokens`, OpenAI
    /// `cache_write_tokens` where reported; Gemini reports none).
    #[serde(default)]
    pub cache_creation: u64,
    /// Whether the provider reported its counts (its answer carried a usage object with the
    /// input and output counts). Without them the figures above are 0, and the call's cost is
    /// unknown, not free: the record says so, and the seat keeps its whole reservation.
    #[serde(default)]
    pub reported: bool,
}

impl Usage {
    /// What the call used of its seat as the provider counts it toward its limits: the output,
    /// and the input less the cache reads when the provider leaves them out of its input limits
    /// (`cache_reads_count` false, as Anthropic does).
    pub(crate) fn seat_use(&self, cache_reads_count: bool) -> crate::job::SeatUse {
        let reads = if cache_reads_count {
            0
        } else {
            self.cached.min(self.input)
        };
        crate::job::SeatUse {
            input: self.input - reads,
            output: self.output,
        }
    }
}

/// The log-probability of one output token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// The token.
    pub token: String,
    /// Its log-probability.
    pub logprob: f64,
    /// The most likely alternatives with theirs.
    pub top: Vec<(String, f64)>,
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// What the model said, in order: thinking, text, tool calls.
    pub content: Vec<ContentBlock>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Tokens used.
    pub usage: Usage,
    /// The model that answered, as the provider named it.
    pub model: String,
    /// Token log-probabilities, when requested and provided.
    pub logprobs: Option<Vec<TokenLogprob>>,
}

/// A borrowed view of one tool call of an answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolCallView<'a> {
    /// The call id.
    pub id: &'a str,
    /// The tool name.
    pub name: &'a str,
    /// The arguments.
    pub arguments: &'a Value,
}

impl ChatResponse {
    /// The text blocks joined, without separators.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect()
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> Vec<ToolCallView<'_>> {
        ToolCallView::all(&self.content)
    }

    /// Whether the model called any tool.
    pub(crate) fn has_tool_calls(&self) -> bool {
        self.content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolCall { .. }))
    }

    /// The answer as an assistant turn, to append to the conversation.
    pub fn to_message(&self) -> Message {
        Message::new(Role::Assistant, self.content.clone())
    }

    /// The answer as an assistant turn, without copying its content.
    pub(crate) fn into_message(self) -> Message {
        Message::new(Role::Assistant, self.content)
    }
}

impl<'a> ToolCallView<'a> {
    /// The tool calls among `content`, in order.
    pub(crate) fn all(content: &'a [ContentBlock]) -> Vec<Self> {
        content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall {
                    id,
                    name,
                    arguments,
                } => Some(ToolCallView {
                    id,
                    name,
                    arguments,
                }),
                _ => None,
            })
            .collect()
    }
}

/// One increment of a streamed answer, handed to the caller as it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamDelta {
    /// More answer text.
    Text(String),
    /// More reasoning text.
    Thinking(String),
    /// A tool call begins.
    ToolCallStart {
        /// The call's position in the answer's tool calls.
        index: usize,
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments (fragments concatenate to the whole).
    ToolCallArguments {
        /// The call's position in the answer's tool calls.
        index: usize,
        /// The fragment.
        fragment: String,
    },
}

/// The stop reason once the content is known: a tool turn is decided by content.
pub(crate) fn settle_stop(stop: StopReason, content: &[ContentBlock]) -> StopReason {
    let has_calls = content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall { .. }));
    match stop {
        StopReason::MaxTokens => StopReason::MaxTokens,
        _ if has_calls => StopReason::ToolUse,
        // A provider that said tool_calls but sent none: nothing to run, so it is an end.
        StopReason::ToolUse => StopReason::EndTurn,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cache_reads_leave_the_seat_only_where_the_provider_does_not_count_them() {
        let usage = Usage {
            input: 2_000,
            output: 40,
            cached: 1_500,
            ..Usage::default()
        };
        let counted = usage.seat_use(true);
        assert_eq!((counted.input, counted.output), (2_000, 40));
        let anthropic = usage.seat_use(false);
        assert_eq!((anthropic.input, anthropic.output), (500, 40));
    }

    #[test]
    fn tool_turn_is_decided_by_content() {
        let calls = vec![ContentBlock::tool_call("a", "t", json!({}))];
        assert_eq!(
            settle_stop(StopReason::EndTurn, &calls),
            StopReason::ToolUse
        );
        assert_eq!(
            settle_stop(StopReason::Other("x".into()), &calls),
            StopReason::ToolUse
        );
        assert_eq!(
            settle_stop(StopReason::MaxTokens, &calls),
            StopReason::MaxTokens
        );
        assert_eq!(settle_stop(StopReason::ToolUse, &[]), StopReason::EndTurn);
    }

    #[test]
    fn helpers_collect_text_and_calls() {
        let r = ChatResponse {
            content: vec![
                ContentBlock::text("a"),
                ContentBlock::tool_call("c1", "t", json!({"x": 1})),
                ContentBlock::text("b"),
            ],
            stop: StopReason::ToolUse,
            usage: Usage::default(),
            model: "m".into(),
            logprobs: None,
        };
        assert_eq!(r.text(), "ab");
        let calls = r.tool_calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "c1");
        assert_eq!(calls[0].arguments["x"], 1);
    }
}
