//! Render a [`ChatRequest`] as an OpenAI Chat Completions body.
//!
//! OpenAI proper gets `max_completion_tokens`, strict function tools and strict `json_schema`
//! answers (schemas adapted once, by `llm::strict`). An OpenAI-compatible server gets the
//! conservative profile: `max_tokens`, no `strict`, `tool_choice` only as a string (a named choice
//! is expressed as `required` with only that tool offered, since llama.cpp rejects the object form)
//! and the answer schema in the system prompt (local servers' `json_schema` support varies).
//! Thinking blocks are never sent: OpenAI keeps reasoning on its side.

use std::borrow::Cow;

use serde_json::Value;

use crate::conversation::{ContentBlock, MediaSource, Message, Role};
use crate::llm::encoded::{BodyWriter, DecodePlan, EncodedRequest, Header, capacity_hint};
use crate::llm::request::{ChatRequest, Reasoning, ToolChoice};
use crate::llm::strict::{self, Adaptation};
use crate::llm::target::{Dialect, WireTarget};
use crate::llm::text_tools;
use crate::{Error, Result};

/// Render the request for an OpenAI or OpenAI-compatible target.
pub(crate) fn encode(
    target: &WireTarget,
    req: &ChatRequest,
    stream: bool,
) -> Result<EncodedRequest> {
    let compat = target.dialect == Dialect::OpenAiCompatible;
    let text_tools = !target.native_tools;
    let offers_tools = !req.tools.is_empty();
    let tools_in_prompt = text_tools && offers_tools && req.tool_choice != ToolChoice::None;
    // A native answer schema would forbid the tool-call object of the text protocol.
    let schema_in_prompt = req.response.is_some() && (compat || tools_in_prompt);

    let (system, history) = text_tools::prompt_parts(req, text_tools, schema_in_prompt);
    let capacity = capacity_hint(&system, &history, req);
    let history: &[Message] = &history;

    let mut w = BodyWriter::new(capacity, history.len() + req.tools.len() + 2);
    // The fields in the order the wire format's documentation lists them; every field after
    // `model` starts with its comma.
    w.raw(r#"{"model":"#)
        .str(&target.model)
        .raw(r#","messages":["#);
    let mut first = true;
    if !system.is_empty() {
        first = false;
        let at = w.mark();
        w.raw(r#"{"role":"system","content":"#)
            .str(&system)
            .raw("}");
        w.close_part(at);
    }
    for m in history {
        write_message(&mut w, m, &mut first)?;
    }
    w.raw("]");

    if !text_tools && offers_tools {
        write_tools(&mut w, req, compat)?;
    }

    if let Some(r) = &req.response
        && !schema_in_prompt
    {
        w.raw(r#","response_format":"#);
        let at = w.mark();
        w.raw(r#"{"type":"json_schema","json_schema":{"name":"#)
            .str(&r.name)
            .raw(r#","schema":"#)
            .json(&*strict::rendered(&r.schema, Adaptation::OpenAiStrict))?
            .raw(r#","strict":true}}"#);
        w.close_part(at);
    }

    let reasoning_effort = match &req.reasoning {
        Reasoning::Effort(e) => Some(e.as_str()),
        Reasoning::Tokens(n) if *n > 0 && target.thinking => Some(super::effort_for_tokens(*n)),
        _ => None,
    };
    if let Some(effort) = reasoning_effort {
        w.raw(r#","reasoning_effort":"#).str(effort);
    }
    w.raw(if compat {
        r#","max_tokens":"#
    } else {
        r#","max_completion_tokens":"#
    })
    .num(u64::from(req.max_output_tokens));
    if let Some(n) = req.logprobs {
        w.raw(r#","logprobs":true,"top_logprobs":"#)
            .num(u64::from(n.min(20)));
    }
    if stream {
        w.raw(r#","stream":true,"stream_options":{"include_usage":true}"#);
    }
    w.raw("}");
    let (body, segments) = w.finish();

    let mut headers = Vec::with_capacity(2);
    headers.push(Header::plain("content-type", "application/json"));
    if let Some(key) = &target.api_key {
        headers.push(Header::secret(
            "authorization",
            // Joined with one allocation of the exact length: this runs for every request.
            ["Bearer ", key.expose_secret()].concat(),
        ));
    }
    Ok(EncodedRequest {
        url: [target.base(), "/chat/completions"].concat(),
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

/// The `tools` and `tool_choice` fields.
fn write_tools(w: &mut BodyWriter, req: &ChatRequest, compat: bool) -> Result<()> {
    // Every tool, or only the one a compatible server is told to call (see below).
    let mut only = None;
    let mut named = None;
    let choice = match (&req.tool_choice, compat) {
        (ToolChoice::Auto, _) => r#""auto""#,
        (ToolChoice::None, _) => r#""none""#,
        (ToolChoice::Required, _) => r#""required""#,
        (ToolChoice::Tool(name), false) => {
            named = Some(name);
            ""
        }
        (ToolChoice::Tool(name), true) => {
            // Offer only the named tool, unless it is not among the tools at all (then the
            // choice cannot narrow anything and every tool stays).
            if req.tools.iter().any(|t| &t.name == name) {
                only = Some(name);
            }
            r#""required""#
        }
    };
    w.raw(r#","tools":["#);
    let adaptation = if compat {
        Adaptation::AsIs
    } else {
        Adaptation::OpenAiStrict
    };
    let offered = req
        .tools
        .iter()
        .filter(|t| only.is_none_or(|name| &t.name == name));
    for (i, t) in offered.enumerate() {
        if i > 0 {
            w.raw(",");
        }
        let at = w.mark();
        w.raw(r#"{"type":"function","function":{"name":"#)
            .str(&t.name)
            .raw(r#","description":"#)
            .str(&t.description)
            .raw(r#","parameters":"#)
            .json(&*strict::rendered(&t.parameters, adaptation))?
            .raw(if compat { "}}" } else { r#","strict":true}}"# });
        w.close_part(at);
    }
    w.raw(r#"],"tool_choice":"#);
    match named {
        // Keys in the order a `serde_json::Value` object writes them (sorted).
        Some(name) => {
            w.raw(r#"{"function":{"name":"#)
                .str(name)
                .raw(r#"},"type":"function"}"#);
        }
        None => {
            w.raw(choice);
        }
    }
    Ok(())
}

fn data_url(media_type: &str, source: &MediaSource) -> String {
    match source {
        MediaSource::Url(u) => u.clone(),
        MediaSource::Base64(b) => format!("data:{media_type};base64,{b}"),
    }
}

/// Write one message as the OpenAI messages it becomes, each a stable part of the body.
fn write_message(w: &mut BodyWriter, m: &Message, first: &mut bool) -> Result<()> {
    let mut open = |w: &mut BodyWriter| {
        if !std::mem::take(first) {
            w.raw(",");
        }
        w.mark()
    };
    match m.role {
        Role::Assistant => {
            let mut text: Option<Cow<'_, str>> = None;
            let mut calls = 0usize;
            for b in &m.content {
                match b {
                    ContentBlock::Text { text: t } => match &mut text {
                        None => text = Some(Cow::Borrowed(t)),
                        Some(all) => all.to_mut().push_str(t),
                    },
                    ContentBlock::ToolCall { .. } => calls += 1,
                    // Reasoning stays on the provider's side; media cannot be an assistant turn.
                    _ => {}
                }
            }
            let text = text.filter(|t| !t.is_empty());
            if text.is_none() && calls == 0 {
                return Ok(());
            }
            let at = open(w);
            w.raw(r#"{"role":"assistant""#);
            if let Some(text) = &text {
                w.raw(r#","content":"#).str(text);
            }
            if calls > 0 {
                w.raw(r#","tool_calls":["#);
                let mut i = 0;
                for b in &m.content {
                    if let ContentBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    } = b
                    {
                        if i > 0 {
                            w.raw(",");
                        }
                        i += 1;
                        w.raw(r#"{"id":"#)
                            .str(id)
                            .raw(r#","type":"function","function":{"name":"#)
                            .str(name)
                            .raw(r#","arguments":"#);
                        match arguments {
                            // Arguments that did not parse are sent back exactly as the model
                            // wrote them.
                            Value::String(raw) => w.str(raw),
                            Value::Null => w.str("{}"),
                            other => w.json_text(other)?,
                        };
                        w.raw("}}");
                    }
                }
                w.raw("]");
            }
            w.raw("}");
            w.close_part(at);
        }
        Role::User => {
            // The common case, one text, needs no list of parts.
            if let [ContentBlock::Text { text }] = m.content.as_slice() {
                let at = open(w);
                w.raw(r#"{"role":"user","content":"#).str(text).raw("}");
                w.close_part(at);
                return Ok(());
            }
            // Tool results answer the previous assistant turn, so they come first, one message
            // each; whatever else the turn holds follows as one user message.
            let mut parts = 0usize;
            let mut only_text = None;
            for b in &m.content {
                match b {
                    ContentBlock::ToolResult {
                        call_id,
                        content,
                        is_error,
                        ..
                    } => {
                        let at = open(w);
                        w.raw(r#"{"role":"tool","tool_call_id":"#)
                            .str(call_id)
                            .raw(r#","content":"#);
                        if *is_error {
                            w.str(&format!("ERROR: {content}"));
                        } else {
                            w.str(content);
                        }
                        w.raw("}");
                        w.close_part(at);
                    }
                    ContentBlock::Text { text } => {
                        parts += 1;
                        only_text = Some(text.as_str());
                    }
                    ContentBlock::Image { .. } => parts += 1,
                    ContentBlock::File { source, .. } => match source {
                        MediaSource::Base64(_) => parts += 1,
                        MediaSource::Url(_) => {
                            return Err(Error::invalid_input(
                                "messages",
                                None,
                                "the OpenAI chat format accepts files only as base64 data, not URLs",
                            ));
                        }
                    },
                    ContentBlock::ToolCall { .. }
                    | ContentBlock::Thinking { .. }
                    | ContentBlock::RedactedThinking { .. } => {}
                }
            }
            if parts == 0 {
                return Ok(());
            }
            let at = open(w);
            w.raw(r#"{"role":"user","content":"#);
            match only_text.filter(|_| parts == 1) {
                Some(text) => {
                    w.str(text);
                }
                None => write_parts(w, &m.content),
            }
            w.raw("}");
            w.close_part(at);
        }
    }
    Ok(())
}

/// A user message's text and media, as a list of parts (files carried as URLs were refused
/// before).
fn write_parts(w: &mut BodyWriter, content: &[ContentBlock]) {
    w.raw("[");
    let parts = content.iter().filter(|b| {
        matches!(
            b,
            ContentBlock::Text { .. }
                | ContentBlock::Image { .. }
                | ContentBlock::File {
                    source: MediaSource::Base64(_),
                    ..
                }
        )
    });
    for (i, b) in parts.enumerate() {
        if i > 0 {
            w.raw(",");
        }
        match b {
            ContentBlock::Text { text } => {
                w.raw(r#"{"type":"text","text":"#).str(text).raw("}");
            }
            ContentBlock::Image { media_type, source } => {
                w.raw(r#"{"type":"image_url","image_url":{"url":"#)
                    .str(&data_url(media_type, source))
                    .raw("}}");
            }
            ContentBlock::File {
                media_type,
                name,
                source,
            } => {
                w.raw(r#"{"type":"file","file":{"#);
                if let Some(name) = name {
                    w.raw(r#""filename":"#).str(name).raw(",");
                }
                w.raw(r#""file_data":"#)
                    .str(&data_url(media_type, source))
                    .raw("}}");
            }
            _ => {}
        }
    }
    w.raw("]");
}
