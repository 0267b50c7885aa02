//! The text-based tool protocol, for models without native tool calling.
//!
//! The protocol is shared with the simulated provider (see the catalog format notes):
//!
//! * the system content lists the tools as a JSON array of `{"name","description","parameters"}`
//!   between a line `<tools>` and a line `</tools>`;
//! * a requested answer shape the dialect cannot carry natively goes between `<response_schema>`
//!   and `</response_schema>` lines;
//! * the model calls tools by replying with only `{"tool_calls":[{"name":…,"arguments":{…}}]}`
//!   (a Markdown code fence around it is tolerated); anything else is the final answer;
//! * tool results go back in a user turn as `<tool_result name="NAME" id="ID">TEXT</tool_result>`
//!   blocks.
//!
//! The runtime mints the call ids (`call_<n>`, numbered after the calls the conversation already
//! holds, so they stay unique within it). Decoding is lenient where it costs nothing: a reply
//! whose only code fence holds the tool-call object is accepted, and the prose around it is kept
//! as text. History is rendered back in the same protocol, so the model sees its own earlier calls
//! as it wrote them. The caller cannot tell this path from native tools: the answer has the same
//! shape.
//!
//! When streaming, answer text is held back while it could still be a tool-call object (it starts
//! with `{` or a fence); once the whole reply is known, either the calls or the held text are
//! delivered.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::llm::message::{ContentBlock, Message, Role};
use crate::llm::request::{ChatRequest, ResponseSchema, ToolChoice, ToolSpec};
use crate::llm::response::StreamDelta;

/// The system content and history a dialect encodes. With the text protocol (`text_tools`) the
/// tools go into the system content and the history is rewritten into the protocol's plain turns;
/// with `schema_in_prompt` the answer schema goes into the system content. Otherwise both are the
/// request's own, borrowed.
pub(crate) fn prompt_parts(
    req: &ChatRequest,
    text_tools: bool,
    schema_in_prompt: bool,
) -> (Cow<'_, str>, Cow<'_, [Message]>) {
    let system = if text_tools || schema_in_prompt {
        let tools = if text_tools { &req.tools[..] } else { &[] };
        let schema = req.response.as_ref().filter(|_| schema_in_prompt);
        Cow::Owned(render_system(&req.system, tools, &req.tool_choice, schema))
    } else {
        Cow::Borrowed(req.system.as_str())
    };
    let history = if text_tools {
        Cow::Owned(to_text_protocol(&req.messages))
    } else {
        Cow::Borrowed(&req.messages[..])
    };
    (system, history)
}

/// Render the system content with the tool list and, when asked, the answer schema.
pub(crate) fn render_system(
    system: &str,
    tools: &[ToolSpec],
    choice: &ToolChoice,
    schema: Option<&ResponseSchema>,
) -> String {
    let mut out = String::with_capacity(system.len() + 512);
    out.push_str(system);
    let offer_tools = !tools.is_empty() && *choice != ToolChoice::None;
    if offer_tools {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(
            "You have tools. They are described as JSON between the <tools> and </tools> lines \
             below. To use tools, reply with nothing but one JSON object of the form \
             {\"tool_calls\": [{\"name\": \"TOOL_NAME\", \"arguments\": {ARGUMENTS}}]}, where the \
             arguments match the tool's parameters schema; several calls may share one reply. \
             Their results will come back as <tool_result name=\"...\" id=\"...\"> blocks. A reply \
             that is not such an object is taken as your final answer.\n",
        );
        match choice {
            ToolChoice::Required => out.push_str("Call at least one tool in your next reply.\n"),
            ToolChoice::Tool(name) => {
                out.push_str(&format!("Call the tool `{name}` in your next reply.\n"));
            }
            ToolChoice::Auto | ToolChoice::None => {}
        }
        out.push_str("<tools>\n[");
        for (i, tool) in tools.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('\n');
            out.push_str(&serde_json::to_string(tool).unwrap_or_default());
        }
        out.push_str("\n]\n</tools>");
    }
    if let Some(schema) = schema {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(
            "Your final answer must be one JSON value, and nothing else, valid against the JSON \
             Schema between the <response_schema> and </response_schema> lines below.\n\
             <response_schema>\n",
        );
        out.push_str(&serde_json::to_string(&schema.schema).unwrap_or_default());
        out.push_str("\n</response_schema>");
    }
    out
}

#[derive(Serialize)]
struct CallOut<'a> {
    name: &'a str,
    arguments: &'a Value,
}

#[derive(Serialize)]
struct CallsOut<'a> {
    tool_calls: Vec<CallOut<'a>>,
}

/// Rewrite a conversation into the protocol: tool calls become the JSON the model would have
/// written, tool results become `<tool_result>` text. Other blocks pass through.
/// Consecutive turns made only of tool results become one turn, as the protocol describes.
pub(crate) fn to_text_protocol(messages: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut last_was_results = false;
    for m in messages {
        let only_results = m.role == Role::User
            && !m.content.is_empty()
            && m.content
                .iter()
                .all(|b| matches!(b, ContentBlock::ToolResult { .. }));
        let rewritten = rewrite(m);
        match out.last_mut() {
            Some(prev) if only_results && last_was_results => {
                if let (
                    Some(ContentBlock::Text { text }),
                    Some(ContentBlock::Text { text: more }),
                ) = (prev.content.last_mut(), rewritten.content.first())
                {
                    text.push('\n');
                    text.push_str(more);
                }
            }
            _ => out.push(rewritten),
        }
        last_was_results = only_results;
    }
    out
}

fn rewrite(m: &Message) -> Message {
    let mut out = Vec::with_capacity(m.content.len());
    match m.role {
        Role::Assistant => {
            let calls: Vec<CallOut<'_>> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolCall {
                        name, arguments, ..
                    } => Some(CallOut { name, arguments }),
                    _ => None,
                })
                .collect();
            out.extend(
                m.content
                    .iter()
                    .filter(|b| !matches!(b, ContentBlock::ToolCall { .. }))
                    .cloned(),
            );
            if !calls.is_empty() {
                let json =
                    serde_json::to_string(&CallsOut { tool_calls: calls }).unwrap_or_default();
                match out.last_mut() {
                    // The model's prose and its call object, one line apart, as one reply text.
                    Some(ContentBlock::Text { text }) => {
                        text.push('\n');
                        text.push_str(&json);
                    }
                    _ => out.push(ContentBlock::Text { text: json }),
                }
            }
        }
        Role::User => {
            let mut results = String::new();
            for b in &m.content {
                if let ContentBlock::ToolResult {
                    call_id,
                    name,
                    content,
                    is_error,
                } = b
                {
                    if !results.is_empty() {
                        results.push('\n');
                    }
                    results.push_str(&render_result(call_id, name, content, *is_error));
                }
            }
            if !results.is_empty() {
                out.push(ContentBlock::Text { text: results });
            }
            out.extend(
                m.content
                    .iter()
                    .filter(|b| !matches!(b, ContentBlock::ToolResult { .. }))
                    .cloned(),
            );
        }
    }
    Message::new(m.role, out)
}

fn render_result(call_id: &str, name: &str, content: &str, is_error: bool) -> String {
    let attr = |s: &str| s.replace('&', "&amp;").replace('"', "&quot;");
    let prefix = if is_error { "ERROR: " } else { "" };
    format!(
        "<tool_result name=\"{}\" id=\"{}\">{prefix}{content}</tool_result>",
        attr(name),
        attr(call_id)
    )
}

/// Parse a reply into tool calls (and any prose around a fenced call), or `None` when the reply
/// is a final answer. Ids are minted from `next_call_number` on.
pub(crate) fn parse_reply(text: &str, next_call_number: usize) -> Option<Vec<ContentBlock>> {
    let trimmed = text.trim();
    if let Some(calls) = parse_payload(strip_fence(trimmed).unwrap_or(trimmed), next_call_number) {
        return Some(calls);
    }
    // Lenient path: prose around exactly one fenced block holding the call object.
    let open = trimmed.find("```")?;
    let after_open = &trimmed[open + 3..];
    let body_start = after_open.find('\n')? + 1;
    let body_and_rest = &after_open[body_start..];
    let close = body_and_rest.find("```")?;
    let rest = &body_and_rest[close + 3..];
    if rest.contains("```") {
        return None;
    }
    let calls = parse_payload(body_and_rest[..close].trim(), next_call_number)?;
    let mut out = Vec::with_capacity(calls.len() + 2);
    let before = trimmed[..open].trim();
    if !before.is_empty() {
        out.push(ContentBlock::text(before));
    }
    out.extend(calls);
    let after = rest.trim();
    if !after.is_empty() {
        out.push(ContentBlock::text(after));
    }
    Some(out)
}

fn strip_fence(s: &str) -> Option<&str> {
    let inner = s.strip_prefix("```")?.strip_suffix("```")?;
    let nl = inner.find('\n')?;
    // The info string (`json`) must be one word on the opening line.
    if inner[..nl].trim().contains(char::is_whitespace) {
        return None;
    }
    Some(inner[nl + 1..].trim())
}

fn parse_payload(s: &str, next_call_number: usize) -> Option<Vec<ContentBlock>> {
    if !s.starts_with('{') {
        return None;
    }
    let v: Value = serde_json::from_str(s).ok()?;
    let calls = v.get("tool_calls")?.as_array()?;
    if calls.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(calls.len());
    for (i, call) in calls.iter().enumerate() {
        let name = call.get("name")?.as_str()?;
        let arguments = match call.get("arguments") {
            None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
            Some(Value::String(raw)) => match serde_json::from_str::<Value>(raw) {
                Ok(parsed @ Value::Object(_)) => parsed,
                _ => Value::String(raw.clone()),
            },
            Some(other) => other.clone(),
        };
        out.push(ContentBlock::ToolCall {
            id: format!("call_{}", next_call_number + i),
            name: name.to_owned(),
            arguments,
        });
    }
    Some(out)
}

/// Replace the text of a decoded answer with the tool calls it holds, if it holds any.
pub(crate) fn apply_to_content(content: &mut Vec<ContentBlock>, next_call_number: usize) {
    let text: String = content.iter().filter_map(ContentBlock::as_text).collect();
    let Some(parsed) = parse_reply(&text, next_call_number) else {
        return;
    };
    content.retain(|b| !matches!(b, ContentBlock::Text { .. }));
    content.extend(parsed);
}

/// Holds back streamed text that may turn out to be a tool-call object.
#[derive(Debug, Default)]
pub(crate) struct TextGate {
    held: String,
    streaming: bool,
}

impl TextGate {
    /// Pass a text fragment on, or hold it.
    pub(crate) fn text(&mut self, fragment: &str, on_delta: &mut dyn FnMut(StreamDelta)) {
        if self.streaming {
            on_delta(StreamDelta::Text(fragment.to_owned()));
            return;
        }
        self.held.push_str(fragment);
        let start = self.held.trim_start();
        if start.is_empty() || start.starts_with('{') || start.starts_with('`') {
            return;
        }
        self.streaming = true;
        on_delta(StreamDelta::Text(std::mem::take(&mut self.held)));
    }

    /// Deliver what the final content says: the calls, or the held text.
    pub(crate) fn finish(
        &mut self,
        content: &[ContentBlock],
        on_delta: &mut dyn FnMut(StreamDelta),
    ) {
        let calls: Vec<_> = content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolCall {
                    id,
                    name,
                    arguments,
                } => Some((id, name, arguments)),
                _ => None,
            })
            .collect();
        if calls.is_empty() {
            if !self.held.is_empty() {
                on_delta(StreamDelta::Text(std::mem::take(&mut self.held)));
            }
            return;
        }
        for (index, (id, name, arguments)) in calls.into_iter().enumerate() {
            on_delta(StreamDelta::ToolCallStart {
                index,
                id: id.clone(),
                name: name.clone(),
            });
            on_delta(StreamDelta::ToolCallArguments {
                index,
                fragment: serde_json::to_string(arguments).unwrap_or_default(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool() -> ToolSpec {
        ToolSpec {
            name: "get_weather".into(),
            description: "Current weather for a city".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}).into(),
        }
    }

    #[test]
    fn the_tool_list_sits_between_marker_lines_as_a_json_array() -> anyhow::Result<()> {
        let s = render_system("Be terse.", &[tool()], &ToolChoice::Auto, None);
        let start = s
            .find("\n<tools>\n")
            .ok_or_else(|| anyhow::anyhow!("no <tools>"))?
            + 9;
        let end = s
            .find("\n</tools>")
            .ok_or_else(|| anyhow::anyhow!("no </tools>"))?;
        let list: Vec<Value> = serde_json::from_str(&s[start..end])?;
        assert_eq!(list[0]["name"], "get_weather");
        assert_eq!(list[0]["parameters"]["required"], json!(["city"]));
        assert!(s.starts_with("Be terse.\n\n"));
        Ok(())
    }

    #[test]
    fn the_schema_sits_between_marker_lines() -> anyhow::Result<()> {
        let schema = ResponseSchema {
            name: "answer".into(),
            schema: json!({"type": "object"}).into(),
        };
        let s = render_system("", &[], &ToolChoice::Auto, Some(&schema));
        let inner = s
            .split("<response_schema>\n")
            .nth(1)
            .and_then(|r| r.split("\n</response_schema>").next())
            .ok_or_else(|| anyhow::anyhow!("no block"))?;
        assert_eq!(
            serde_json::from_str::<Value>(inner)?,
            json!({"type": "object"})
        );
        assert!(!s.contains("<tools>"));
        Ok(())
    }

    #[test]
    fn replies_parse_bare_fenced_and_inside_prose() {
        let bare = r#"{"tool_calls":[{"name":"a","arguments":{"x":1}},{"name":"b","arguments":"{\"y\":2}"}]}"#;
        let calls = parse_reply(bare, 3).unwrap_or_default();
        assert_eq!(
            calls,
            vec![
                ContentBlock::tool_call("call_3", "a", json!({"x": 1})),
                ContentBlock::tool_call("call_4", "b", json!({"y": 2})),
            ]
        );
        let fenced = format!("```json\n{bare}\n```");
        assert_eq!(parse_reply(&fenced, 3).map(|c| c.len()), Some(2));
        let prose = format!("Let me look.\n```json\n{bare}\n```\n");
        let blocks = parse_reply(&prose, 1).unwrap_or_default();
        assert_eq!(blocks[0], ContentBlock::text("Let me look."));
        assert_eq!(blocks.len(), 3);
    }

    #[test]
    fn final_answers_are_not_tool_calls() {
        assert!(parse_reply("The weather is fine.", 1).is_none());
        assert!(parse_reply(r#"{"answer": 42}"#, 1).is_none());
        assert!(parse_reply(r#"{"tool_calls": []}"#, 1).is_none());
        assert!(parse_reply(r#"{"tool_calls": [{"arguments": {}}]}"#, 1).is_none());
    }

    #[test]
    fn history_renders_back_in_the_protocol() {
        let msgs = vec![
            Message::assistant(vec![ContentBlock::tool_call(
                "call_1",
                "get_weather",
                json!({"city": "Paris"}),
            )]),
            Message::tool_results(vec![ContentBlock::tool_result(
                "call_1",
                "get_weather",
                "11C",
            )]),
            Message::tool_results(vec![ContentBlock::tool_error(
                "call_2",
                "get_weather",
                "no \"city\"",
            )]),
        ];
        let out = to_text_protocol(&msgs);
        assert_eq!(
            out[0].text(),
            r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}"#
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[1].text(),
            "<tool_result name=\"get_weather\" id=\"call_1\">11C</tool_result>\n\
             <tool_result name=\"get_weather\" id=\"call_2\">ERROR: no \"city\"</tool_result>"
        );
    }

    #[test]
    fn the_gate_holds_possible_calls_and_streams_prose() {
        let mut seen = Vec::new();
        let mut g = TextGate::default();
        g.text("  {\"tool_", &mut |d| seen.push(d));
        g.text("calls\": []}", &mut |d| seen.push(d));
        assert!(seen.is_empty());
        g.finish(
            &[ContentBlock::tool_call("call_1", "a", json!({}))],
            &mut |d| seen.push(d),
        );
        assert_eq!(seen.len(), 2);

        let mut seen = Vec::new();
        let mut g = TextGate::default();
        g.text(" ", &mut |d| seen.push(d));
        g.text("Hello", &mut |d| seen.push(d));
        g.text(" world", &mut |d| seen.push(d));
        g.finish(&[ContentBlock::text(" Hello world")], &mut |d| seen.push(d));
        assert_eq!(
            seen,
            vec![
                StreamDelta::Text(" Hello".into()),
                StreamDelta::Text(" world".into())
            ]
        );
    }
}
