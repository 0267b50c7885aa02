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
//!   blocks, in the order of the calls they answer.
//!
//! The runtime mints the call ids (`call_<n>`, numbered after the calls the conversation already
//! holds, so they stay unique within it): a model on this protocol never writes one, so the id a
//! result carries is always the runtime's. Decoding is lenient where it costs nothing: a reply
//! whose only code fence holds the tool-call object is accepted, and the prose around it is kept
//! as text. History is rendered back in the same protocol, so the model sees its own earlier calls
//! as it wrote them, with one exception: **nothing the model made up is written back**. A call
//! naming a tool the request does not offer whose result is an error (a name the model invented,
//! or a tool the scope withheld, refused) is rendered as an empty call object, `{}`, with neither
//! its name nor its arguments, and its result carries no `name`, only the runtime's id; the model
//! pairs it with its call by position. The caller cannot tell this path from native tools: the
//! answer has the same shape.
//!
//! When streaming, answer text is held back while it could still be a tool-call object (it starts
//! with `{` or a fence); once the whole reply is known, either the calls or the held text are
//! delivered.

use std::borrow::Cow;
use std::collections::HashSet;

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
        Cow::Owned(to_text_protocol(&req.messages, &req.tools))
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

/// One call as the model wrote it; both fields absent for a call whose tool is not written back
/// (see the module docs).
#[derive(Serialize)]
struct CallOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a Value>,
}

#[derive(Serialize)]
struct CallsOut<'a> {
    tool_calls: Vec<CallOut<'a>>,
}

/// Which names of a history are written back: those of the tools the request offers, and those
/// of calls that did not fail. A call naming a tool not offered whose result is an error, and
/// that result, keep their name to themselves: the name is the model's, not the runtime's.
struct Offered<'a> {
    names: HashSet<&'a str>,
}

impl<'a> Offered<'a> {
    fn new(tools: &'a [ToolSpec]) -> Self {
        Self {
            names: tools.iter().map(|t| t.name.as_ref()).collect(),
        }
    }

    /// Whether the request offers a tool of this name.
    fn offers(&self, name: &str) -> bool {
        self.names.contains(name)
    }
}

/// The ids of the calls answered with an error in the turns that follow an assistant message, up
/// to the model's next one.
fn failed_calls(following: &[Message]) -> HashSet<&str> {
    following
        .iter()
        .take_while(|m| m.role != Role::Assistant)
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolResult {
                call_id,
                is_error: true,
                ..
            } => Some(call_id.as_str()),
            _ => None,
        })
        .collect()
}

/// Rewrite a conversation into the protocol: tool calls become the JSON the model would have
/// written, tool results become `<tool_result>` text. Other blocks pass through.
/// Consecutive turns made only of tool results become one turn, as the protocol describes.
/// `offered` is the request's palette: a failed call to a tool not on it is written back without
/// its name or arguments, and its result without its name (the module docs).
pub(crate) fn to_text_protocol(messages: &[Message], offered: &[ToolSpec]) -> Vec<Message> {
    let offered = Offered::new(offered);
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut last_was_results = false;
    for (i, m) in messages.iter().enumerate() {
        let only_results = m.role == Role::User
            && !m.content.is_empty()
            && m.content
                .iter()
                .all(|b| matches!(b, ContentBlock::ToolResult { .. }));
        let rewritten = rewrite(m, &messages[i + 1..], &offered);
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

fn rewrite(m: &Message, following: &[Message], offered: &Offered<'_>) -> Message {
    let mut out = Vec::with_capacity(m.content.len());
    match m.role {
        Role::Assistant => {
            // Looked up only when a call names a tool the request does not offer.
            let mut failed: Option<HashSet<&str>> = None;
            let calls: Vec<CallOut<'_>> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    } => {
                        let withheld = !offered.offers(name)
                            && failed
                                .get_or_insert_with(|| failed_calls(following))
                                .contains(id.as_str());
                        Some(if withheld {
                            CallOut {
                                name: None,
                                arguments: None,
                            }
                        } else {
                            CallOut {
                                name: Some(name),
                                arguments: Some(arguments),
                            }
                        })
                    }
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
                    let withheld = *is_error && !offered.offers(name);
                    let name = (!withheld).then_some(name.as_str());
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

/// One `<tool_result>` block; without a `name` attribute when `name` is `None`.
fn render_result(call_id: &str, name: Option<&str>, content: &str, is_error: bool) -> String {
    let attr = |s: &str| s.replace('&', "&amp;").replace('"', "&quot;");
    let prefix = if is_error { "ERROR: " } else { "" };
    let name = name.map_or_else(String::new, |n| format!(" name=\"{}\"", attr(n)));
    format!(
        "<tool_result{name} id=\"{}\">{prefix}{content}</tool_result>",
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
#[path = "text_tools_tests.rs"]
mod tests;
