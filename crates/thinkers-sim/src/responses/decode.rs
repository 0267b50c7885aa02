//! Decoding and checking an OpenAI Responses request body (`POST /v1/responses`).
//!
//! `input` is a string or a list of items: messages (`{role, content}`, `type: "message"`
//! optional; `system`/`developer` messages join the instructions), `function_call` items,
//! `function_call_output` items answering a call by `call_id`, and `reasoning` items the sim
//! issued. The checks are the ones the real API makes: every function call answered and no
//! output without its call, reasoning items unchanged (their `encrypted_content` verifies) and
//! followed by what they led to, flat function tools with valid names, a known `tool_choice`,
//! `text.format` `json_schema` with a name, a known `reasoning.effort` on a reasoning model only,
//! `max_output_tokens` of at least 16 and within the model's ceiling, and no
//! `previous_response_id` (the sim keeps no responses: a conversation is sent whole).

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::api_error::ApiError;
use crate::config::SimModel;
use crate::exchange::{AnswerFormat, Dialect, Exchange, Message, Part, Role, ToolChoice, ToolSpec};
use crate::openai::valid_tool_name;
use crate::seeding::{Signer, content_seed};
use crate::text_protocol;

const EFFORTS: [&str; 7] = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/// What `include` asks for to get reasoning items back with their encrypted content.
const ENCRYPTED: &str = "reasoning.encrypted_content";

fn invalid(message: impl Into<String>, param: &str) -> ApiError {
    ApiError::invalid(message, Some(param))
}

/// What the sim signs for a reasoning item: its id and summary text.
pub(crate) fn signed_text(id: &str, summary: &str) -> String {
    format!("{id}\n{summary}")
}

/// The text of a `content` field: a string, or the `text` of its text parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn summary_text(item: &Value) -> String {
    item.get("summary")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Decodes `raw` (already known to name `model`) into an [`Exchange`].
pub(crate) fn decode(
    raw: &Value,
    model: &SimModel,
    seed: u64,
    signer: &Signer,
) -> Result<Exchange, ApiError> {
    let Some(body) = raw.as_object() else {
        return Err(ApiError::invalid(
            "The request body must be a JSON object.",
            None,
        ));
    };
    if let Some(id) = body
        .get("previous_response_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        return Err(invalid(
            format!("Previous response with id '{id}' not found."),
            "previous_response_id",
        ));
    }
    let mut system: Vec<String> = body
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .into_iter()
        .collect();
    let messages = match body.get("input") {
        Some(Value::String(text)) => vec![Message {
            role: Role::User,
            parts: vec![Part::Text(text.clone())],
        }],
        Some(Value::Array(items)) => decode_items(items, &mut system, signer)?,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => {
            return Err(invalid(
                "Invalid type for 'input': expected a string or an array of input items.",
                "input",
            ));
        }
    };
    let system = system.join("\n");

    let tools = decode_tools(body.get("tools"), model)?;
    let tool_choice = decode_tool_choice(body.get("tool_choice"), &tools)?;
    let parallel = body
        .get("parallel_tool_calls")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let text_tools = text_protocol::tools(&system).unwrap_or_default();
    let format = decode_format(body.get("text"), &system)?;

    let effort = match body.get("reasoning").and_then(|r| r.get("effort")) {
        None | Some(Value::Null) => None,
        Some(Value::String(e)) if EFFORTS.contains(&e.as_str()) => Some(e.clone()),
        Some(other) => {
            return Err(invalid(
                format!(
                    "Invalid value: {other}. Supported values are: {}.",
                    EFFORTS.map(|e| format!("'{e}'")).join(", ")
                ),
                "reasoning.effort",
            ));
        }
    };
    if !model.thinking && effort.as_deref().is_some_and(|e| e != "none") {
        return Err(invalid(
            format!(
                "Unsupported parameter: 'reasoning.effort' is not supported with the '{}' model.",
                model.name
            ),
            "reasoning.effort",
        ));
    }
    let thinking = model.thinking && effort.as_deref() != Some("none");
    let include: Vec<&str> = match body.get("include") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        Some(_) => {
            return Err(invalid(
                "Invalid type for 'include': expected an array of strings.",
                "include",
            ));
        }
    };
    let encrypted_reasoning = include.contains(&ENCRYPTED);
    if encrypted_reasoning && !model.thinking {
        return Err(invalid(
            format!(
                "Encrypted content is not supported with the '{}' model.",
                model.name
            ),
            "include",
        ));
    }

    let max_output = match body.get("max_output_tokens") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let Some(n) = v.as_u64() else {
                return Err(invalid(
                    format!("Invalid type for 'max_output_tokens': expected an integer, got {v}."),
                    "max_output_tokens",
                ));
            };
            if n < 16 {
                return Err(invalid(
                    format!(
                        "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got {n} instead."
                    ),
                    "max_output_tokens",
                ));
            }
            if n > u64::from(model.output_ceiling) {
                return Err(invalid(
                    format!(
                        "max_output_tokens is too large: {n}. This model supports at most {} output tokens.",
                        model.output_ceiling
                    ),
                    "max_output_tokens",
                ));
            }
            Some(n)
        }
    };
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    if body.get("stream_options").is_some_and(|v| !v.is_null()) && !stream {
        return Err(invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        ));
    }

    let key = json!([
        body.get("instructions"),
        body.get("input"),
        body.get("tools"),
        body.get("tool_choice"),
        body.get("text")
    ]);
    Ok(Exchange {
        dialect: Dialect::OpenAiResponses,
        model: model.name.clone(),
        content_seed: content_seed(seed, &model.name, key.to_string().as_bytes()),
        system,
        messages,
        tools,
        text_tools,
        tool_choice,
        parallel,
        format,
        thinking,
        include_thoughts: false,
        reasoning_effort: effort,
        max_output,
        stream,
        include_usage: false,
        logprobs: None,
        encrypted_reasoning,
    })
}

/// The items of `input` as messages: consecutive assistant output (messages, reasoning, calls)
/// is one assistant turn; each `function_call_output` is a tool message.
fn decode_items(
    items: &[Value],
    system: &mut Vec<String>,
    signer: &Signer,
) -> Result<Vec<Message>, ApiError> {
    let mut messages: Vec<Message> = Vec::new();
    let mut calls: HashSet<String> = HashSet::new();
    let mut pending: Vec<String> = Vec::new();
    let assistant = |messages: &mut Vec<Message>, part: Part| match messages.last_mut() {
        Some(m) if m.role == Role::Assistant => m.parts.push(part),
        _ => messages.push(Message {
            role: Role::Assistant,
            parts: vec![part],
        }),
    };
    for (i, item) in items.iter().enumerate() {
        let kind = item.get("type").and_then(Value::as_str);
        let role = item.get("role").and_then(Value::as_str);
        match (kind, role) {
            (None | Some("message"), Some(role)) => {
                let text = content_text(item.get("content"));
                match role {
                    "system" | "developer" => system.push(text),
                    "user" => {
                        if let Some(id) = pending.first() {
                            return Err(invalid(
                                format!("No tool output found for function call {id}."),
                                "input",
                            ));
                        }
                        messages.push(Message {
                            role: Role::User,
                            parts: vec![Part::Text(text)],
                        });
                    }
                    "assistant" => assistant(&mut messages, Part::Text(text)),
                    other => {
                        return Err(invalid(
                            format!(
                                "Invalid value: '{other}'. Supported values are: 'assistant', 'system', 'developer', and 'user'."
                            ),
                            &format!("input[{i}].role"),
                        ));
                    }
                }
            }
            (Some("function_call"), _) => {
                let call_id = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if call_id.is_empty() {
                    return Err(invalid(
                        "Missing required parameter: 'input[].call_id'.",
                        &format!("input[{i}].call_id"),
                    ));
                }
                calls.insert(call_id.to_owned());
                pending.push(call_id.to_owned());
                assistant(
                    &mut messages,
                    Part::ToolCall {
                        name: item
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        arguments: item
                            .get("arguments")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    },
                );
            }
            (Some("function_call_output"), _) => {
                let call_id = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !calls.contains(call_id) {
                    return Err(invalid(
                        format!(
                            "No tool call found for function call output with call_id {call_id}."
                        ),
                        "input",
                    ));
                }
                pending.retain(|p| p != call_id);
                messages.push(Message {
                    role: Role::Tool,
                    parts: vec![Part::ToolResult(content_text(item.get("output")))],
                });
            }
            (Some("reasoning"), _) => {
                let id = item.get("id").and_then(Value::as_str).unwrap_or_default();
                let summary = summary_text(item);
                let verified = item
                    .get("encrypted_content")
                    .and_then(Value::as_str)
                    .is_some_and(|e| signer.verify(&signed_text(id, &summary), e));
                if !verified {
                    return Err(invalid(
                        format!(
                            "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or send the reasoning item back with its `encrypted_content` unchanged."
                        ),
                        &format!("input[{i}]"),
                    ));
                }
                let followed = items.get(i + 1).is_some_and(|next| {
                    matches!(
                        next.get("type").and_then(Value::as_str),
                        Some("function_call" | "reasoning")
                    ) || next.get("role").and_then(Value::as_str) == Some("assistant")
                });
                if !followed {
                    return Err(invalid(
                        format!(
                            "Item '{id}' of type 'reasoning' was provided without its required following item."
                        ),
                        "input",
                    ));
                }
                assistant(&mut messages, Part::Thinking(summary));
            }
            (Some(other), _) => {
                return Err(invalid(
                    format!(
                        "Invalid value: '{other}'. The sim accepts message, function_call, function_call_output and reasoning items."
                    ),
                    &format!("input[{i}].type"),
                ));
            }
            (None, None) => {
                return Err(invalid(
                    "Missing required parameter: 'input[].role'.",
                    &format!("input[{i}]"),
                ));
            }
        }
    }
    if let Some(id) = pending.first() {
        return Err(invalid(
            format!("No tool output found for function call {id}."),
            "input",
        ));
    }
    Ok(messages)
}

fn decode_tools(raw: Option<&Value>, model: &SimModel) -> Result<Vec<ToolSpec>, ApiError> {
    let list = match raw {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(invalid(
                "Invalid type for 'tools': expected an array.",
                "tools",
            ));
        }
    };
    if list.is_empty() {
        return Ok(Vec::new());
    }
    if !model.native_tools {
        return Err(invalid(
            format!(
                "Invalid parameter: model '{}' does not support 'tools'.",
                model.name
            ),
            "tools",
        ));
    }
    list.iter()
        .enumerate()
        .filter(|(_, tool)| tool.get("type").and_then(Value::as_str) == Some("function"))
        .map(|(i, tool)| {
            if tool.get("function").is_some() {
                return Err(invalid(
                    format!("Missing required parameter: 'tools[{i}].name'. (Responses function tools are flat: name, description and parameters sit beside type.)"),
                    &format!("tools[{i}].name"),
                ));
            }
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
            if !valid_tool_name(name, 64) {
                return Err(invalid(
                    format!("Invalid 'tools[{i}].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$' and is at most 64 characters long."),
                    &format!("tools[{i}].name"),
                ));
            }
            Ok(ToolSpec {
                name: name.to_owned(),
                description: tool
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                schema: tool
                    .get("parameters")
                    .cloned()
                    .filter(|p| !p.is_null())
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            })
        })
        .collect()
}

fn decode_tool_choice(raw: Option<&Value>, tools: &[ToolSpec]) -> Result<ToolChoice, ApiError> {
    let choice = match raw {
        None | Some(Value::Null) => return Ok(ToolChoice::Auto),
        Some(Value::String(s)) => match s.as_str() {
            "none" => ToolChoice::None,
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            other => {
                return Err(invalid(
                    format!(
                        "Invalid value: '{other}'. Supported values are: 'none', 'auto', and 'required'."
                    ),
                    "tool_choice",
                ));
            }
        },
        Some(obj) => match obj.get("type").and_then(Value::as_str) {
            Some("function") => {
                let name = obj.get("name").and_then(Value::as_str).unwrap_or_default();
                if !tools.iter().any(|t| t.name == name) {
                    return Err(invalid(
                        format!("Tool choice 'function' not found in 'tools' parameter: '{name}'."),
                        "tool_choice",
                    ));
                }
                ToolChoice::Named(name.to_owned())
            }
            Some("allowed_tools") => match obj.get("mode").and_then(Value::as_str) {
                Some("required") => ToolChoice::Required,
                _ => ToolChoice::Auto,
            },
            _ => {
                return Err(invalid(
                    "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or a function choice.",
                    "tool_choice",
                ));
            }
        },
    };
    if tools.is_empty() && matches!(choice, ToolChoice::Required | ToolChoice::Named(_)) {
        return Err(invalid(
            "Tool choice 'required' must be specified with 'tools' parameter.",
            "tool_choice",
        ));
    }
    Ok(choice)
}

fn decode_format(text: Option<&Value>, system: &str) -> Result<AnswerFormat, ApiError> {
    let text_schema = || {
        text_protocol::response_schema(system)
            .ok()
            .flatten()
            .map_or(AnswerFormat::Text, AnswerFormat::JsonSchema)
    };
    let Some(format) = text.and_then(|t| t.get("format")).filter(|v| !v.is_null()) else {
        return Ok(text_schema());
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(text_schema()),
        Some("json_object") => Ok(AnswerFormat::JsonObject),
        Some("json_schema") => {
            if format.get("name").and_then(Value::as_str).is_none() {
                return Err(invalid(
                    "Missing required parameter: 'text.format.name'.",
                    "text.format.name",
                ));
            }
            match format.get("schema") {
                Some(schema) if schema.is_object() => Ok(AnswerFormat::JsonSchema(schema.clone())),
                _ => Err(invalid(
                    "Missing required parameter: 'text.format.schema'.",
                    "text.format.schema",
                )),
            }
        }
        _ => Err(invalid(
            "Invalid value for 'text.format.type': supported values are 'text', 'json_object' and 'json_schema'.",
            "text.format.type",
        )),
    }
}
