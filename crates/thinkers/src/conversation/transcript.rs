//! The transcript: a whole conversation as readable text.
//!
//! What a thinker's `transcript()` returns and what a summariser reads. The objective comes
//! first, then every message in order under its speaker, every block on its own lines: text as
//! it is, thinking marked as such, tool calls with their id, name and arguments, tool results
//! with the id of the call they answer, and media by kind and source (never the bytes).

use std::fmt::Write as _;

use super::data::Conversation;
use super::message::{ContentBlock, MediaSource, Message, Role};

/// The whole conversation: the objective, then every message.
pub(crate) fn render(conversation: &Conversation) -> String {
    let mut out = String::new();
    let objective = conversation.objective().render();
    if !objective.is_empty() {
        out.push_str("=== objective ===\n");
        out.push_str(&objective);
        out.push_str("\n\n");
    }
    out.push_str(&messages(conversation.messages()));
    out
}

/// Messages only, in order, as readable text.
pub(crate) fn messages(messages: &[Message]) -> String {
    let mut out = String::new();
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        push_message(&mut out, m);
    }
    out
}

fn push_message(out: &mut String, message: &Message) {
    out.push_str(match message.role {
        Role::User => "=== user ===\n",
        Role::Assistant => "=== assistant ===\n",
    });
    for block in &message.content {
        push_block(out, block);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
}

fn push_block(out: &mut String, block: &ContentBlock) {
    // Writing to a String cannot fail.
    let _ = match block {
        ContentBlock::Text { text } => {
            out.push_str(text);
            Ok(())
        }
        ContentBlock::Thinking { thinking, .. } => {
            write!(out, "[thinking]\n{thinking}\n[/thinking]")
        }
        ContentBlock::RedactedThinking { data } => {
            write!(out, "[redacted thinking, {} bytes]", data.len())
        }
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
        } => write!(out, "[tool call {name} id={id}] {arguments}"),
        ContentBlock::ToolResult {
            call_id,
            name,
            content,
            is_error,
        } => {
            let what = if *is_error {
                "tool error"
            } else {
                "tool result"
            };
            write!(out, "[{what} {name} for id={call_id}]\n{content}")
        }
        ContentBlock::Image { media_type, source } => {
            write!(out, "[image {media_type}, {}]", source_text(source))
        }
        ContentBlock::File {
            media_type,
            name,
            source,
        } => {
            let name = name.as_deref().unwrap_or("unnamed");
            write!(out, "[file {name} {media_type}, {}]", source_text(source))
        }
    };
}

fn source_text(source: &MediaSource) -> String {
    match source {
        MediaSource::Url(url) => format!("at {url}"),
        MediaSource::Base64(data) => format!("{} bytes inline", data.len() / 4 * 3),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::conversation::{Objective, Stamps};
    use crate::model::{Depth, Grade, OutputSize};

    #[test]
    fn every_block_kind_is_shown_in_order() {
        let mut c = Conversation::new(
            Stamps::new(Grade::Small, Depth::Quick, OutputSize::Compact),
            false,
        );
        c.objective_mut()
            .put(Objective::TASK, "Report the weather.");
        c.push(Message::user_text("Weather in Paris?"));
        c.push(Message::assistant(vec![
            ContentBlock::Thinking {
                thinking: "Use the tool.".into(),
                signature: "sig".into(),
            },
            ContentBlock::RedactedThinking {
                data: "abcd".into(),
            },
            ContentBlock::tool_call("c1", "weather", json!({"city": "Paris"})),
        ]));
        c.push(Message::tool_results(vec![
            ContentBlock::tool_result("c1", "weather", "11C"),
            ContentBlock::tool_error("c2", "other", "boom"),
            ContentBlock::Image {
                media_type: "image/png".into(),
                source: MediaSource::Base64("AAAA".into()),
            },
            ContentBlock::File {
                media_type: "application/pdf".into(),
                name: Some("a.pdf".into()),
                source: MediaSource::Url("https://x.invalid/a.pdf".into()),
            },
        ]));
        c.push(Message::assistant_text("It is 11C."));
        let t = c.transcript();
        let expected = "=== objective ===\nReport the weather.\n\n\
=== user ===\nWeather in Paris?\n\n\
=== assistant ===\n[thinking]\nUse the tool.\n[/thinking]\n[redacted thinking, 4 bytes]\n\
[tool call weather id=c1] {\"city\":\"Paris\"}\n\n\
=== user ===\n[tool result weather for id=c1]\n11C\n[tool error other for id=c2]\nboom\n\
[image image/png, 3 bytes inline]\n[file a.pdf application/pdf, at https://x.invalid/a.pdf]\n\n\
=== assistant ===\nIt is 11C.\n";
        assert_eq!(t, expected);
    }
}
