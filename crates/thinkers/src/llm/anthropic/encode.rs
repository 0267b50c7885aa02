//! Render a [`ChatRequest`] as an Anthropic Messages body.
//!
//! * Consecutive turns of one role are merged (the provider merges them anyway), so consecutive
//!   tool results travel in one user turn, ahead of any other block of that turn.
//! * An assistant turn sends its thinking and redacted-thinking blocks first, unchanged and in
//!   their order, then the rest. Thinking blocks are sent only to a target with thinking support
//!   and only when they carry a signature (reasoning decoded from other providers has none).
//! * `Reasoning::Tokens(n)` on a thinking target becomes `thinking: {type: enabled,
//!   budget_tokens}` with the budget raised to at least 1,024; thinking counts toward
//!   `max_tokens`, so `max_tokens` is the answer budget plus the thinking budget (which keeps the
//!   budget below `max_tokens`, as required). A forced tool choice cannot be combined with
//!   thinking and falls back to `auto`. When the latest assistant turn called tools without a
//!   signed thinking block (another entry served it), thinking stays off for the request: the
//!   provider refuses thinking after such a turn.
//! * `Reasoning::Effort` becomes `output_config.effort`; a structured answer becomes
//!   `output_config.format` (objects closed by `llm::strict`), unless text-protocol tools are in
//!   play, in which case the schema goes into the system prompt.

use std::borrow::Cow;

use serde_json::{Value, json};

use super::{API_VERSION, MIN_THINKING_BUDGET};
use crate::Result;
use crate::conversation::{ContentBlock, MediaSource, Message, Role};
use crate::llm::encoded::{BodyWriter, DecodePlan, EncodedRequest, Header, capacity_hint};
use crate::llm::request::{ChatRequest, Reasoning, ToolChoice};
use crate::llm::strict::{self, Adaptation};
use crate::llm::target::WireTarget;
use crate::llm::text_tools;

enum Source<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

impl Source<'_> {
    fn write(&self, w: &mut BodyWriter) {
        match self {
            Self::Base64 { media_type, data } => {
                w.raw(r#"{"type":"base64","media_type":"#)
                    .str(media_type)
                    .raw(r#","data":"#)
                    .str(data)
                    .raw("}");
            }
            Self::Url { url } => {
                w.raw(r#"{"type":"url","url":"#).str(url).raw("}");
            }
        }
    }
}

enum Block<'a> {
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    Text {
        text: &'a str,
    },
    Image {
        source: Source<'a>,
    },
    Document {
        source: Source<'a>,
        title: Option<&'a str>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        is_error: bool,
    },
}

impl Block<'_> {
    /// The order inside a turn: tool results lead a user turn, thinking leads an assistant turn.
    fn rank(&self) -> u8 {
        match self {
            Self::Thinking { .. } | Self::RedactedThinking { .. } | Self::ToolResult { .. } => 0,
            _ => 1,
        }
    }

    fn write(&self, w: &mut BodyWriter) -> Result<()> {
        match self {
            Self::Thinking {
                thinking,
                signature,
            } => {
                w.raw(r#"{"type":"thinking","thinking":"#)
                    .str(thinking)
                    .raw(r#","signature":"#)
                    .str(signature);
            }
            Self::RedactedThinking { data } => {
                w.raw(r#"{"type":"redacted_thinking","data":"#).str(data);
            }
            Self::Text { text } => {
                w.raw(r#"{"type":"text","text":"#).str(text);
            }
            Self::Image { source } => {
                w.raw(r#"{"type":"image","source":"#);
                source.write(w);
            }
            Self::Document { source, title } => {
                w.raw(r#"{"type":"document","source":"#);
                source.write(w);
                if let Some(title) = title {
                    w.raw(r#","title":"#).str(title);
                }
            }
            Self::ToolUse { id, name, input } => {
                w.raw(r#"{"type":"tool_use","id":"#)
                    .str(id)
                    .raw(r#","name":"#)
                    .str(name)
                    .raw(r#","input":"#)
                    .json(&**input)?;
            }
            Self::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                w.raw(r#"{"type":"tool_result","tool_use_id":"#)
                    .str(tool_use_id)
                    .raw(r#","content":"#)
                    .str(content);
                if *is_error {
                    w.raw(r#","is_error":true"#);
                }
            }
        }
        w.raw("}");
        Ok(())
    }
}

struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

impl Turn<'_> {
    fn write(&self, w: &mut BodyWriter) -> Result<()> {
        w.raw(r#"{"role":"#).str(self.role).raw(r#","content":["#);
        for (i, b) in self.content.iter().enumerate() {
            if i > 0 {
                w.raw(",");
            }
            b.write(w)?;
        }
        w.raw("]}");
        Ok(())
    }
}

/// Render the request for an Anthropic target.
pub(crate) fn encode(
    target: &WireTarget,
    req: &ChatRequest,
    stream: bool,
) -> Result<EncodedRequest> {
    let text_tools = !target.native_tools;
    let offers_tools = !req.tools.is_empty();
    let tools_in_prompt = text_tools && offers_tools && req.tool_choice != ToolChoice::None;
    let schema_in_prompt = req.response.is_some() && tools_in_prompt;

    let (system, history) = text_tools::prompt_parts(req, text_tools, schema_in_prompt);
    let capacity = capacity_hint(&system, &history, req);
    let history: &[Message] = &history;

    // With thinking on, the provider wants the latest assistant turn that called tools to open
    // with a thinking block. A turn served by another entry (one without thinking) has none, so
    // this request goes without thinking rather than be refused.
    let budget = match req.reasoning {
        Reasoning::Tokens(n) if n > 0 && target.thinking && !unthought_tool_turn(history) => {
            Some(n.max(MIN_THINKING_BUDGET))
        }
        _ => None,
    };

    let mut w = BodyWriter::new(capacity, history.len() + req.tools.len() + 2);
    // The fields in the order the Messages API documents them; every field after `model` starts
    // with its comma.
    w.raw(r#"{"model":"#)
        .str(&target.model)
        .raw(r#","max_tokens":"#)
        .num(u64::from(
            req.max_output_tokens.saturating_add(budget.unwrap_or(0)),
        ));
    if !system.is_empty() {
        w.raw(r#","system":"#);
        let at = w.mark();
        w.str(&system);
        w.close_part(at);
    }
    w.raw(r#","messages":["#);
    for (i, turn) in turns(history, target.thinking).iter().enumerate() {
        if i > 0 {
            w.raw(",");
        }
        let at = w.mark();
        turn.write(&mut w)?;
        w.close_part(at);
    }
    w.raw("]");

    if !text_tools && offers_tools {
        w.raw(r#","tools":["#);
        for (i, t) in req.tools.iter().enumerate() {
            if i > 0 {
                w.raw(",");
            }
            let at = w.mark();
            w.raw(r#"{"name":"#)
                .str(&t.name)
                .raw(r#","description":"#)
                .str(&t.description)
                .raw(r#","input_schema":"#);
            if t.parameters.is_object() {
                w.json(&*strict::rendered(&t.parameters, Adaptation::AsIs))?;
            } else {
                // Keys in the order a `serde_json::Value` object writes them (sorted).
                w.raw(r#"{"properties":{},"type":"object"}"#);
            }
            w.raw("}");
            w.close_part(at);
        }
        w.raw(r#"],"tool_choice":"#);
        match (&req.tool_choice, budget.is_some()) {
            (ToolChoice::None, _) => w.raw(r#"{"type":"none"}"#),
            (ToolChoice::Auto, _) | (_, true) => w.raw(r#"{"type":"auto"}"#),
            (ToolChoice::Required, false) => w.raw(r#"{"type":"any"}"#),
            // Keys sorted, as a `serde_json::Value` object writes them.
            (ToolChoice::Tool(name), false) => {
                w.raw(r#"{"name":"#).str(name).raw(r#","type":"tool"}"#)
            }
        };
    }

    if let Some(budget_tokens) = budget {
        w.raw(r#","thinking":{"type":"enabled","budget_tokens":"#)
            .num(u64::from(budget_tokens))
            .raw("}");
    }
    let effort = match &req.reasoning {
        Reasoning::Effort(e) => Some(e.as_str()),
        _ => None,
    };
    let format = req.response.as_ref().filter(|_| !schema_in_prompt);
    if effort.is_some() || format.is_some() {
        w.raw(r#","output_config":{"#);
        if let Some(effort) = effort {
            w.raw(r#""effort":"#).str(effort);
        }
        if let Some(r) = format {
            w.raw(if effort.is_some() {
                r#","format":"#
            } else {
                r#""format":"#
            });
            let at = w.mark();
            w.raw(r#"{"type":"json_schema","schema":"#)
                .json(&*strict::rendered(&r.schema, Adaptation::ClosedObjects))?
                .raw("}");
            w.close_part(at);
        }
        w.raw("}");
    }
    if stream {
        w.raw(r#","stream":true"#);
    }
    w.raw("}");
    let (body, segments) = w.finish();

    let mut headers = Vec::with_capacity(3);
    headers.push(Header::plain("content-type", "application/json"));
    headers.push(Header::plain("anthropic-version", API_VERSION));
    if let Some(key) = &target.api_key {
        headers.push(Header::secret("x-api-key", key.expose_secret().to_owned()));
    }
    Ok(EncodedRequest {
        url: [target.base(), "/v1/messages"].concat(),
        headers,
        body,
        segments,
        plan: DecodePlan {
            dialect: target.dialect,
            text_tools: tools_in_prompt,
            next_call_number: req.tool_calls_so_far() + 1,
            stream,
        },
    })
}

fn source<'a>(media_type: &'a str, s: &'a MediaSource) -> Source<'a> {
    match s {
        MediaSource::Base64(data) => Source::Base64 { media_type, data },
        MediaSource::Url(url) => Source::Url { url },
    }
}

fn tool_input(arguments: &Value) -> Cow<'_, Value> {
    match arguments {
        Value::Object(_) => Cow::Borrowed(arguments),
        // The provider requires an object; arguments that did not parse are sent as the object
        // they encode when they do, else as an empty object.
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(v @ Value::Object(_)) => Cow::Owned(v),
            _ => Cow::Owned(json!({})),
        },
        _ => Cow::Owned(json!({})),
    }
}

fn block<'a>(b: &'a ContentBlock, thinking: bool) -> Option<Block<'a>> {
    Some(match b {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => Block::Text { text },
        ContentBlock::Thinking {
            thinking: t,
            signature,
        } if thinking && !signature.is_empty() => Block::Thinking {
            thinking: t,
            signature,
        },
        ContentBlock::RedactedThinking { data } if thinking => Block::RedactedThinking { data },
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => return None,
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
        } => Block::ToolUse {
            id,
            name,
            input: tool_input(arguments),
        },
        ContentBlock::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => Block::ToolResult {
            tool_use_id: call_id,
            content,
            is_error: *is_error,
        },
        ContentBlock::Image {
            media_type,
            source: s,
        } => Block::Image {
            source: source(media_type, s),
        },
        ContentBlock::File {
            media_type,
            name,
            source: s,
        } => Block::Document {
            source: source(media_type, s),
            title: name.as_deref(),
        },
    })
}

/// Whether the latest assistant turn called tools without a (signed) thinking block.
fn unthought_tool_turn(history: &[Message]) -> bool {
    let Some(last) = history.iter().rev().find(|m| m.role == Role::Assistant) else {
        return false;
    };
    let calls = last
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall { .. }));
    let thought = last.content.iter().any(|b| match b {
        ContentBlock::Thinking { signature, .. } => !signature.is_empty(),
        ContentBlock::RedactedThinking { .. } => true,
        _ => false,
    });
    calls && !thought
}

fn turns(history: &[Message], thinking: bool) -> Vec<Turn<'_>> {
    let mut out: Vec<Turn<'_>> = Vec::with_capacity(history.len());
    for m in history {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let blocks: Vec<Block<'_>> = m
            .content
            .iter()
            .filter_map(|b| block(b, thinking))
            .collect();
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(Turn {
                role,
                content: blocks,
            }),
        }
    }
    for t in &mut out {
        // A stable sort keeps the original order within each rank.
        t.content.sort_by_key(Block::rank);
    }
    out
}
