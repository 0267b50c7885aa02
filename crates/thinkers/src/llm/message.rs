//! Provider-agnostic messages.
//!
//! A [`Message`] is one turn of a conversation: a [`Role`] and an ordered list of
//! [`ContentBlock`]s. System content is not a message; it travels separately (see
//! `llm::ChatRequest::system`). Every type round-trips through serde, so a conversation can be
//! stored and resumed without losing a byte of a provider's opaque data (thinking signatures,
//! redacted thinking).

use serde::{Deserialize, Serialize};

/// Who speaks a turn. System content is carried outside the message list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The caller: a person, a thinker's objective, or tool results going back to the model.
    User,
    /// The model.
    Assistant,
}

/// Where the bytes of an image or a file come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaSource {
    /// A URL the provider fetches itself.
    Url(String),
    /// The content, base64-encoded (without a `data:` prefix).
    Base64(String),
}

/// One piece of a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model asks for a tool to be run.
    ToolCall {
        /// The call's id: the provider's, or one the runtime minted. Its result must answer it.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments as the model sent them: normally an object; a string when the model's
        /// JSON did not parse (so the caller can answer the call with a correction).
        arguments: serde_json::Value,
    },
    /// The result of a tool call, going back to the model.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// The tool's name (some formats need it).
        name: String,
        /// The result as text.
        content: String,
        /// Whether the tool failed; the content then says why.
        is_error: bool,
    },
    /// A native reasoning block. Kept verbatim: providers require it back unchanged.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The provider's opaque signature over it (empty when the provider gave none).
        signature: String,
    },
    /// A reasoning block the provider encrypted. Kept verbatim.
    RedactedThinking {
        /// The opaque data.
        data: String,
    },
    /// An image.
    Image {
        /// The media type, for example `image/png`.
        media_type: String,
        /// Where the image comes from.
        source: MediaSource,
    },
    /// A file, for example a PDF.
    File {
        /// The media type, for example `application/pdf`.
        media_type: String,
        /// The file's name, when known.
        name: Option<String>,
        /// Where the file comes from.
        source: MediaSource,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// A tool-call block.
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Self::ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    /// The bytes of the block's own text (its strings, and its arguments as compact JSON) before
    /// any escaping; `None` for media, whose size on the wire is the provider's business.
    pub(crate) fn text_bytes(&self) -> Option<usize> {
        Some(match self {
            Self::Text { text } => text.len(),
            Self::ToolCall {
                id,
                name,
                arguments,
            } => id.len() + name.len() + crate::llm::strict::json_len(arguments),
            Self::ToolResult {
                call_id,
                name,
                content,
                ..
            } => call_id.len() + name.len() + content.len(),
            Self::Thinking {
                thinking,
                signature,
            } => thinking.len() + signature.len(),
            Self::RedactedThinking { data } => data.len(),
            Self::Image { .. } | Self::File { .. } => return None,
        })
    }

    /// A successful tool result.
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self::ToolResult {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error: false,
        }
    }

    /// A failed tool result; `content` says what went wrong.
    pub fn tool_error(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self::ToolResult {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error: true,
        }
    }

    /// The text, if this is a text block.
    pub(crate) fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said, in order.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A turn with the given blocks.
    pub fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Self { role, content }
    }

    /// A user turn of plain text.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![ContentBlock::text(text)])
    }

    /// An assistant turn of plain text.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![ContentBlock::text(text)])
    }

    /// An assistant turn with the given blocks (text, thinking, tool calls).
    pub fn assistant(content: Vec<ContentBlock>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A user turn carrying tool results (and possibly more blocks).
    pub fn tool_results(results: Vec<ContentBlock>) -> Self {
        Self::new(Role::User, results)
    }

    /// The text blocks joined, without separators.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect()
    }

    /// The tool calls of this turn, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ContentBlock> {
        self.content
            .iter()
            .filter(|b| matches!(b, ContentBlock::ToolCall { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_block_round_trips_through_serde() -> anyhow::Result<()> {
        let msgs = vec![
            Message::user_text("hi"),
            Message::assistant(vec![
                ContentBlock::Thinking {
                    thinking: "hmm".into(),
                    signature: "EqQB+/=".into(),
                },
                ContentBlock::RedactedThinking {
                    data: "EmwK\u{0}x".into(),
                },
                ContentBlock::tool_call("call_1", "get_weather", json!({"city": "Paris"})),
            ]),
            Message::tool_results(vec![
                ContentBlock::tool_result("call_1", "get_weather", "11C"),
                ContentBlock::tool_error("call_2", "other", "boom"),
            ]),
            Message::new(
                Role::User,
                vec![
                    ContentBlock::Image {
                        media_type: "image/png".into(),
                        source: MediaSource::Base64("iVBO".into()),
                    },
                    ContentBlock::File {
                        media_type: "application/pdf".into(),
                        name: Some("a.pdf".into()),
                        source: MediaSource::Url("https://x.invalid/a.pdf".into()),
                    },
                ],
            ),
        ];
        let text = serde_json::to_string(&msgs)?;
        let back: Vec<Message> = serde_json::from_str(&text)?;
        assert_eq!(back, msgs);
        let v = serde_json::to_value(&msgs[1].content[2])?;
        assert_eq!(v["type"], "tool_call");
        Ok(())
    }

    #[test]
    fn helpers_read_text_and_calls() {
        let m = Message::assistant(vec![
            ContentBlock::text("a"),
            ContentBlock::tool_call("1", "t", json!({})),
            ContentBlock::text("b"),
        ]);
        assert_eq!(m.text(), "ab");
        assert_eq!(m.tool_calls().count(), 1);
    }
}
