//! The dialect-neutral view of one request, which the answer planner works on.
//!
//! Each dialect's request decoder fills an [`Exchange`]; the planner never looks at wire JSON.

use serde_json::Value;

use crate::text_protocol;

/// The wire format a request came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    OpenAi,
    Anthropic,
    /// OpenAI Responses (`POST /v1/responses`): OpenAI's errors and headers, its own items.
    OpenAiResponses,
    Gemini,
    /// Amazon Bedrock Converse.
    Bedrock,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    User,
    Assistant,
    /// An OpenAI `tool` message (Anthropic tool results are parts of user messages).
    Tool,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Text(String),
    ToolCall { name: String, arguments: String },
    ToolResult(String),
    Thinking(String),
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Message {
    pub(crate) role: Role,
    pub(crate) parts: Vec<Part>,
}

impl Message {
    fn text(&self) -> Option<String> {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }

    fn tool_results(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::ToolResult(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        if self.role == Role::User
            && let Some(text) = self.text()
        {
            out.extend(
                text_protocol::tool_results(&text)
                    .into_iter()
                    .map(|r| r.body),
            );
        }
        out
    }

    fn has_tool_calls(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::ToolCall { .. }))
    }
}

/// A tool the request offers (natively or in the system prompt).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolSpec {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) schema: Value,
}

/// How the request constrains tool use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ToolChoice {
    Auto,
    None,
    /// At least one tool must be called (OpenAI `required`, Anthropic `any`).
    Required,
    /// This tool must be called.
    Named(String),
}

/// The answer shape requested.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AnswerFormat {
    Text,
    /// Any JSON object (OpenAI `json_object`).
    JsonObject,
    /// JSON valid for this schema (native structured output or a `<response_schema>` block).
    JsonSchema(Value),
}

/// One request, decoded from either dialect.
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    pub(crate) dialect: Dialect,
    pub(crate) model: String,
    /// The seed of this request's answer generator (see [`crate::seeding::content_seed`]).
    pub(crate) content_seed: u64,
    pub(crate) system: String,
    pub(crate) messages: Vec<Message>,
    /// Tools offered through the native `tools` parameter.
    pub(crate) tools: Vec<ToolSpec>,
    /// Tools described in the system prompt (text-tool protocol).
    pub(crate) text_tools: Vec<ToolSpec>,
    pub(crate) tool_choice: ToolChoice,
    /// Several tool calls in one turn are allowed.
    pub(crate) parallel: bool,
    pub(crate) format: AnswerFormat,
    /// Thinking (Anthropic, Gemini) or reasoning (OpenAI) is requested and supported.
    pub(crate) thinking: bool,
    /// Gemini `includeThoughts`: the answer shows its thought summary as a thought part.
    pub(crate) include_thoughts: bool,
    /// OpenAI `reasoning_effort`, when set.
    pub(crate) reasoning_effort: Option<String>,
    /// The output budget asked for.
    pub(crate) max_output: Option<u64>,
    pub(crate) stream: bool,
    pub(crate) include_usage: bool,
    /// `Some(top_n)` when OpenAI logprobs are requested.
    pub(crate) logprobs: Option<u8>,
    /// OpenAI Responses: reasoning items must carry `encrypted_content` (`include`).
    pub(crate) encrypted_reasoning: bool,
}

impl Exchange {
    /// Tools offered in whichever way the request offers them, native ones first.
    pub(crate) fn offered_tools(&self) -> &[ToolSpec] {
        if self.tools.is_empty() {
            &self.text_tools
        } else {
            &self.tools
        }
    }

    /// True when tool calls must be written as text-protocol JSON.
    pub(crate) fn text_tool_mode(&self) -> bool {
        self.tools.is_empty() && !self.text_tools.is_empty()
    }

    /// Completed tool rounds: assistant turns with native tool calls, plus user messages carrying
    /// text-protocol `<tool_result>` blocks.
    pub(crate) fn completed_rounds(&self) -> u32 {
        let native = self
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant && m.has_tool_calls())
            .count();
        let text = self
            .messages
            .iter()
            .filter(|m| {
                m.role == Role::User
                    && m.text()
                        .is_some_and(|t| !text_protocol::tool_results(&t).is_empty())
            })
            .count();
        (native + text) as u32
    }

    /// The last user text that is not a text-protocol tool result.
    pub(crate) fn last_user_text(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .filter(|m| m.role == Role::User)
            .filter_map(Message::text)
            .find(|t| text_protocol::tool_results(t).is_empty())
    }

    /// The last tool result, native or text-protocol.
    pub(crate) fn last_tool_result(&self) -> Option<String> {
        self.messages
            .iter()
            .rev()
            .find_map(|m| m.tool_results().pop())
    }

    /// The text of the last message that is a user text or a tool result.
    pub(crate) fn last_input(&self) -> Option<String> {
        let last = self
            .messages
            .iter()
            .rev()
            .find(|m| m.role != Role::Assistant)?;
        last.tool_results().pop().or_else(|| last.text())
    }

    /// The words of every user text and tool result, in order of first appearance, split at
    /// whitespace and punctuation other than `@ _ - . : /` (trailing dots and colons trimmed):
    /// what a model could copy into an identifier field.
    pub(crate) fn quotable_words(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut words = Vec::new();
        for message in self.messages.iter().filter(|m| m.role != Role::Assistant) {
            let texts = message
                .text()
                .into_iter()
                .chain(message.parts.iter().filter_map(|p| match p {
                    Part::ToolResult(t) => Some(t.clone()),
                    _ => None,
                }));
            for text in texts {
                for word in text.split(|c: char| {
                    !(c.is_alphanumeric() || matches!(c, '@' | '_' | '-' | '.' | ':' | '/'))
                }) {
                    let word = word.trim_end_matches(['.', ':']);
                    if !word.is_empty() && seen.insert(word.to_owned()) {
                        words.push(word.to_owned());
                    }
                }
            }
        }
        words
    }

    /// Number of messages, for token framing.
    pub(crate) fn message_count(&self) -> usize {
        self.messages.len()
    }
}
