//! Render a [`ChatRequest`] as an OpenAI Responses body.
//!
//! * The system content is `instructions`; each turn becomes input items in its own order: text
//!   as a `message` item, a tool call as a `function_call` item (`call_id`, `name`, the arguments
//!   as JSON text), a tool result as a `function_call_output` item answering its `call_id`, a
//!   carried reasoning item (see the module docs of [`super`]) as the very JSON the provider sent.
//! * Function tools are flat (`{type, name, description, parameters, strict}`) and strict, their
//!   schemas adapted by `llm::strict`; a structured answer is `text.format` `json_schema`,
//!   strict. With text-protocol tools both go into the instructions instead.
//! * `store: false` always (the runtime keeps the conversation). On a target with thinking, a
//!   reasoning request becomes `reasoning: {effort, summary: "auto"}` and `include` asks for
//!   `reasoning.encrypted_content`, so reasoning items can be sent back. Reasoning items are sent
//!   only to a target with thinking.
//! * `max_output_tokens` is the answer budget (providers count reasoning toward it, see
//!   [`ChatRequest::max_output_tokens`]).
//! * Not sent: `logprobs` (a Chat Completions feature here), `previous_response_id` and
//!   `conversation` (the runtime keeps the conversation itself).
//! * With prompt caching on (the default), `prompt_cache_key` is the request's
//!   [`ChatRequest::derived_cache_key`], one per system content and tools, so every turn, and
//!   every run of the same agent, is routed to the cache the earlier ones filled (OpenAI caches
//!   prefixes on its own). A request too short to be cached carries no derived key
//!   (`encoded::may_be_cached`).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::llm::encoded::{self, DecodePlan, EncodedRequest, Header, Part};
use crate::llm::message::{ContentBlock, MediaSource, Message, Role};
use crate::llm::request::{ChatRequest, Reasoning, ToolChoice, ToolSpec};
use crate::llm::strict::{self, Adaptation, Rendered};
use crate::llm::target::WireTarget;
use crate::llm::text_tools;
use crate::{Error, Result};

/// What `include` asks for when reasoning items are kept.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// The request body, fields in the order the API reference lists them.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    input: &'a [Part],
    #[serde(skip_serializing_if = "<[Part]>::is_empty")]
    tools: &'a [Part],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Text<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<WireReasoning<'a>>,
    max_output_tokens: u32,
    store: bool,
    #[serde(skip_serializing_if = "<[&str]>::is_empty")]
    include: &'a [&'a str],
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum WireToolChoice<'a> {
    Mode(&'static str),
    Named {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
    },
}

#[derive(Serialize)]
struct Text<'a> {
    format: &'a RawValue,
}

#[derive(Serialize)]
struct Format<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    schema: &'a Rendered,
    strict: bool,
}

#[derive(Serialize)]
struct WireReasoning<'a> {
    effort: &'a str,
    summary: &'static str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Rendered,
    strict: bool,
}

/// One input item (a carried reasoning item is written as its raw JSON instead).
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: MessageContent<'a>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: Cow<'a, str>,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Cow<'a, str>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum MessageContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<InputPart<'a>>),
}

/// A part of a user message (`input_text`, `input_image`, `input_file` on the wire).
#[derive(Serialize)]
#[serde(tag = "type")]
enum InputPart<'a> {
    #[serde(rename = "input_text")]
    Text { text: &'a str },
    #[serde(rename = "input_image")]
    Image {
        image_url: Cow<'a, str>,
        detail: &'static str,
    },
    #[serde(rename = "input_file")]
    File {
        #[serde(skip_serializing_if = "Option::is_none")]
        filename: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_data: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_url: Option<&'a str>,
    },
}

/// Render the request for an OpenAI Responses target.
pub(crate) fn encode(
    target: &WireTarget,
    req: &ChatRequest,
    stream: bool,
) -> Result<EncodedRequest> {
    let text_tools = !target.native_tools;
    let offers_tools = !req.tools.is_empty();
    let may_call_tools = offers_tools && req.tool_choice != ToolChoice::None;
    let tools_in_prompt = text_tools && may_call_tools;
    // A native answer schema would forbid the text protocol's tool-call object.
    let schema_in_prompt = req.response.is_some() && tools_in_prompt;
    let (system, history) = text_tools::prompt_parts(req, text_tools, schema_in_prompt);

    let mut input = Vec::with_capacity(history.len() * 2);
    for m in history.iter() {
        push_items(&mut input, m, target.thinking)?;
    }

    let (tools, tool_choice) = if !text_tools && offers_tools {
        let tools = req.tools.iter().map(tool).collect::<Result<Vec<_>>>()?;
        let choice = match &req.tool_choice {
            // `auto` is what the API does when tools are given: it is not written.
            ToolChoice::Auto => None,
            ToolChoice::None => Some(WireToolChoice::Mode("none")),
            ToolChoice::Required => Some(WireToolChoice::Mode("required")),
            ToolChoice::Tool(name) => Some(WireToolChoice::Named {
                kind: "function",
                name,
            }),
        };
        (tools, choice)
    } else {
        (Vec::new(), None)
    };

    let format = match req.response.as_ref().filter(|_| !schema_in_prompt) {
        Some(r) => Some(encoded::part(&Format {
            kind: "json_schema",
            name: &r.name,
            schema: &strict::rendered(&r.schema, Adaptation::OpenAiStrict),
            strict: true,
        })?),
        None => None,
    };

    let effort = match &req.reasoning {
        Reasoning::Effort(e) if target.thinking => Some(e.as_str()),
        Reasoning::Tokens(n) if *n > 0 && target.thinking => {
            Some(crate::llm::common::effort_for_tokens(*n))
        }
        _ => None,
    };
    let include: &[&str] = if target.thinking {
        &[ENCRYPTED_REASONING]
    } else {
        &[]
    };
    let cache_key = target.prompt_cache.is_on().then(|| req.derived_cache_key());
    let body = Body {
        model: &target.model,
        instructions: (!system.is_empty()).then_some(&*system),
        input: &input,
        tools: &tools,
        tool_choice,
        text: format.as_deref().map(|format| Text { format }),
        reasoning: effort.map(|effort| WireReasoning {
            effort,
            summary: "auto",
        }),
        max_output_tokens: req.max_output_tokens,
        store: false,
        include,
        stream: stream.then_some(true),
        prompt_cache_key: cache_key
            .as_deref()
            .filter(|_| encoded::may_be_cached(req, &system, &history)),
    };
    let body = encoded::finish(&body)?;

    let mut headers = Vec::with_capacity(2);
    headers.push(Header::plain("content-type", "application/json"));
    headers.extend(target.openai_auth());
    Ok(EncodedRequest {
        url: target.openai_url("responses"),
        headers,
        body,
        plan: DecodePlan {
            dialect: target.dialect,
            text_tools: tools_in_prompt,
            next_call_number: req.tool_calls_so_far() + 1,
            stream,
        },
    })
}

fn tool(t: &ToolSpec) -> Result<Part> {
    encoded::part(&WireTool {
        kind: "function",
        name: &t.name,
        description: &t.description,
        parameters: &strict::rendered(&t.parameters, Adaptation::OpenAiStrict),
        strict: true,
    })
}

/// A tool call's arguments as the JSON text the wire format carries.
fn arguments_text(arguments: &Value) -> Result<Cow<'_, str>> {
    Ok(match arguments {
        // Arguments that did not parse are sent back exactly as the model wrote them.
        Value::String(raw) => Cow::Borrowed(raw),
        Value::Null => Cow::Borrowed("{}"),
        other => Cow::Owned(serde_json::to_string(other).map_err(|e| {
            Error::system(
                "llm request encoding",
                "tool-call arguments did not serialize",
            )
            .with_source(e)
        })?),
    })
}

fn data_url<'a>(media_type: &str, source: &'a MediaSource) -> Cow<'a, str> {
    match source {
        MediaSource::Url(u) => Cow::Borrowed(u),
        MediaSource::Base64(b) => Cow::Owned(format!("data:{media_type};base64,{b}")),
    }
}

/// A carried reasoning item, as the raw JSON it was received as; `None` for a thinking block
/// that is not one (Anthropic's, or reasoning text from a Chat Completions server).
fn carried_item(signature: &str) -> Result<Option<Part>> {
    if !crate::llm::common::reasoning_item(signature) {
        return Ok(None);
    }
    RawValue::from_string(signature.to_owned())
        .map(Some)
        .map_err(|e| {
            Error::system(
                "llm request encoding",
                "a carried reasoning item is not valid JSON",
            )
            .with_source(e)
        })
}

/// Push the input items one message becomes, in the message's order; consecutive texts of a
/// turn are one `message` item.
fn push_items(out: &mut Vec<Part>, m: &Message, thinking: bool) -> Result<()> {
    let role = match m.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let mut parts: Vec<InputPart<'_>> = Vec::new();
    let flush = |out: &mut Vec<Part>, parts: &mut Vec<InputPart<'_>>| -> Result<()> {
        if parts.is_empty() {
            return Ok(());
        }
        let content = match parts.as_slice() {
            [InputPart::Text { text }] => MessageContent::Text(Cow::Borrowed(*text)),
            _ if m.role == Role::Assistant => {
                // An assistant message is text only: its texts joined.
                let joined: String = parts
                    .iter()
                    .filter_map(|p| match p {
                        InputPart::Text { text } => Some(*text),
                        _ => None,
                    })
                    .collect();
                MessageContent::Text(Cow::Owned(joined))
            }
            _ => MessageContent::Parts(std::mem::take(parts)),
        };
        parts.clear();
        out.push(encoded::part(&Item::Message { role, content })?);
        Ok(())
    };
    for b in &m.content {
        match b {
            ContentBlock::Text { text } if text.is_empty() => {}
            ContentBlock::Text { text } => parts.push(InputPart::Text { text }),
            ContentBlock::Image { media_type, source } if m.role == Role::User => {
                parts.push(InputPart::Image {
                    image_url: data_url(media_type, source),
                    detail: "auto",
                });
            }
            ContentBlock::File {
                media_type,
                name,
                source,
            } if m.role == Role::User => parts.push(match source {
                MediaSource::Base64(_) => InputPart::File {
                    filename: Some(name.as_deref().unwrap_or("file")),
                    file_data: Some(data_url(media_type, source).into_owned()),
                    file_url: None,
                },
                MediaSource::Url(u) => InputPart::File {
                    filename: None,
                    file_data: None,
                    file_url: Some(u),
                },
            }),
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => {
                flush(out, &mut parts)?;
                out.push(encoded::part(&Item::FunctionCall {
                    call_id: id,
                    name,
                    arguments: arguments_text(arguments)?,
                })?);
            }
            ContentBlock::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                flush(out, &mut parts)?;
                let output = if *is_error {
                    Cow::Owned(format!("ERROR: {content}"))
                } else {
                    Cow::Borrowed(content.as_str())
                };
                out.push(encoded::part(&Item::FunctionCallOutput {
                    call_id,
                    output,
                })?);
            }
            ContentBlock::Thinking { signature, .. } if thinking => {
                if let Some(item) = carried_item(signature)? {
                    flush(out, &mut parts)?;
                    out.push(item);
                }
            }
            // Reasoning of another provider, or for a target without thinking; media cannot
            // be an assistant turn.
            ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::Image { .. }
            | ContentBlock::File { .. } => {}
        }
    }
    flush(out, &mut parts)
}
