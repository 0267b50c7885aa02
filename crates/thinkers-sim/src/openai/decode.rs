//! Decoding and checking an OpenAI Chat Completions request body.
//!
//! The checks are the ones a client most easily gets wrong and the real API enforces: every tool
//! call answered by a `tool` message (and no stray `tool` messages), `tool_choice` only with tools,
//! valid tool names, a known `reasoning_effort` on a reasoning model, `stream_options` only when
//! streaming, an output budget within the model's ceiling, `top_logprobs` only with `logprobs`,
//! and the word "json" in the messages for `json_object` mode. A `json_object` with a `schema`
//! beside its type (llama-cpp-python's form) is answered to that schema, and needs no "json".

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::api_error::ApiError;
use crate::config::SimModel;
use crate::exchange::{AnswerFormat, Dialect, Exchange, Message, Part, Role, ToolChoice, ToolSpec};
use crate::seeding::content_seed;
use crate::text_protocol;

const EFFORTS: [&str; 7] = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];

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

pub(crate) fn valid_tool_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn invalid(message: impl Into<String>, param: &str) -> ApiError {
    ApiError::invalid(message, Some(param))
}

/// Decodes `raw` (already known to name `model`) into an [`Exchange`].
pub(crate) fn decode(raw: &Value, model: &SimModel, seed: u64) -> Result<Exchange, ApiError> {
    let Some(body) = raw.as_object() else {
        return Err(ApiError::invalid(
            "The request body must be a JSON object.",
            None,
        ));
    };
    let messages_raw = match body.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m,
        Some(Value::Array(_)) => {
            return Err(invalid(
                "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
                "messages",
            ));
        }
        _ => return Err(invalid("'messages' is a required property", "messages")),
    };
    let (system, messages) = decode_messages(messages_raw)?;
    check_tool_pairing(messages_raw)?;

    let tools = decode_tools(body.get("tools"), model)?;
    let tool_choice = decode_tool_choice(body.get("tool_choice"), &tools)?;
    let parallel = body
        .get("parallel_tool_calls")
        .and_then(Value::as_bool)
        .unwrap_or(true);

    let text_tools = text_protocol::tools(&system).unwrap_or_else(|e| {
        tracing::debug!(error = %e.0, "ignoring an unreadable <tools> block");
        Vec::new()
    });
    let format = decode_format(body.get("response_format"), &system, &messages)?;

    let effort = match body.get("reasoning_effort") {
        None | Some(Value::Null) => None,
        Some(Value::String(e)) if EFFORTS.contains(&e.as_str()) => Some(e.clone()),
        Some(other) => {
            return Err(invalid(
                format!(
                    "Invalid value for 'reasoning_effort': {other}. Supported values are: {}.",
                    EFFORTS.map(|e| format!("'{e}'")).join(", ")
                ),
                "reasoning_effort",
            ));
        }
    };
    if !model.thinking && effort.as_deref().is_some_and(|e| e != "none") {
        return Err(invalid(
            "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
            "reasoning_effort",
        ));
    }
    let thinking = model.thinking && effort.as_deref() != Some("none");

    let max_output = decode_max_output(body, model)?;
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let stream_options = body.get("stream_options").filter(|v| !v.is_null());
    if stream_options.is_some() && !stream {
        return Err(invalid(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
            "stream_options",
        ));
    }
    let include_usage = stream_options
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);

    let logprobs = body
        .get("logprobs")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let top = match body.get("top_logprobs") {
        None | Some(Value::Null) => 0,
        Some(v) => match v.as_u64() {
            Some(n) if n <= 20 => n as u8,
            _ => {
                return Err(invalid(
                    format!("Invalid 'top_logprobs': {v}. Expected an integer between 0 and 20."),
                    "top_logprobs",
                ));
            }
        },
    };
    if top > 0 && !logprobs {
        return Err(invalid(
            "Invalid value for 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is used.",
            "top_logprobs",
        ));
    }

    let key = json!([
        body.get("messages"),
        body.get("tools"),
        body.get("tool_choice"),
        body.get("response_format")
    ]);
    Ok(Exchange {
        dialect: Dialect::OpenAi,
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
        include_usage,
        logprobs: logprobs.then_some(top),
        encrypted_reasoning: false,
    })
}

fn decode_messages(raw: &[Value]) -> Result<(String, Vec<Message>), ApiError> {
    let mut system = Vec::new();
    let mut messages = Vec::new();
    for (i, message) in raw.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let content = message.get("content");
        match role {
            "system" | "developer" => system.push(content_text(content)),
            "user" => messages.push(Message {
                role: Role::User,
                parts: vec![Part::Text(content_text(content))],
            }),
            "assistant" => {
                let mut parts = Vec::new();
                let text = content_text(content);
                if !text.is_empty() {
                    parts.push(Part::Text(text));
                }
                for call in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let function = call.get("function");
                    parts.push(Part::ToolCall {
                        name: function
                            .and_then(|f| f.get("name"))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        arguments: function
                            .and_then(|f| f.get("arguments"))
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    });
                }
                messages.push(Message {
                    role: Role::Assistant,
                    parts,
                });
            }
            "tool" | "function" => messages.push(Message {
                role: Role::Tool,
                parts: vec![Part::ToolResult(content_text(content))],
            }),
            other => {
                return Err(invalid(
                    format!(
                        "Invalid value: '{other}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'."
                    ),
                    &format!("messages[{i}].role"),
                ));
            }
        }
    }
    Ok((system.join("\n"), messages))
}

/// Every assistant tool call must be answered by a following `tool` message, and every `tool`
/// message must answer a call of the assistant message before it.
fn check_tool_pairing(raw: &[Value]) -> Result<(), ApiError> {
    let mut pending: Vec<String> = Vec::new();
    let mut open: HashSet<String> = HashSet::new();
    for (i, message) in raw.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if role == "tool" {
            let id = message
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !open.contains(id) {
                return Err(invalid(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                    &format!("messages.[{i}].role"),
                ));
            }
            pending.retain(|p| p != id);
            continue;
        }
        if !pending.is_empty() {
            return Err(invalid(
                format!(
                    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                    pending.join(", ")
                ),
                "messages",
            ));
        }
        open.clear();
        if role == "assistant" {
            for call in message
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
                pending.push(id.to_owned());
                open.insert(id.to_owned());
            }
        }
    }
    if pending.is_empty() {
        Ok(())
    } else {
        Err(invalid(
            format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                pending.join(", ")
            ),
            "messages",
        ))
    }
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
            let function = tool.get("function").unwrap_or(&Value::Null);
            let name = function.get("name").and_then(Value::as_str).unwrap_or("");
            if !valid_tool_name(name, 64) {
                return Err(invalid(
                    format!("Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$' and is at most 64 characters long."),
                    &format!("tools[{i}].function.name"),
                ));
            }
            Ok(ToolSpec {
                name: name.to_owned(),
                description: function
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                schema: function
                    .get("parameters")
                    .cloned()
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
                let name = obj
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !tools.iter().any(|t| t.name == name) {
                    return Err(invalid(
                        format!(
                            "Invalid value for 'tool_choice': function '{name}' is not one of the tools provided."
                        ),
                        "tool_choice",
                    ));
                }
                ToolChoice::Named(name.to_owned())
            }
            Some("allowed_tools") => {
                match obj.pointer("/allowed_tools/mode").and_then(Value::as_str) {
                    Some("required") => ToolChoice::Required,
                    _ => ToolChoice::Auto,
                }
            }
            _ => {
                return Err(invalid(
                    "Invalid value for 'tool_choice': expected 'none', 'auto', 'required' or a function choice.",
                    "tool_choice",
                ));
            }
        },
    };
    if tools.is_empty() && choice != ToolChoice::None {
        return Err(invalid(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            "tool_choice",
        ));
    }
    Ok(choice)
}

fn decode_format(
    raw: Option<&Value>,
    system: &str,
    messages: &[Message],
) -> Result<AnswerFormat, ApiError> {
    let text_schema = || {
        text_protocol::response_schema(system)
            .ok()
            .flatten()
            .map_or(AnswerFormat::Text, AnswerFormat::JsonSchema)
    };
    let Some(format) = raw.filter(|v| !v.is_null()) else {
        return Ok(text_schema());
    };
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(text_schema()),
        Some("json_object") => {
            // llama-cpp-python's server constrains decoding to a schema sent beside the type.
            if let Some(schema) = format.get("schema").filter(|s| s.is_object()) {
                return Ok(AnswerFormat::JsonSchema(schema.clone()));
            }
            let mentions_json = system.to_lowercase().contains("json")
                || messages.iter().any(|m| {
                    m.parts.iter().any(|p| match p {
                        Part::Text(t) | Part::ToolResult(t) => t.to_lowercase().contains("json"),
                        _ => false,
                    })
                });
            if !mentions_json {
                return Err(invalid(
                    "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
                    "messages",
                ));
            }
            Ok(AnswerFormat::JsonObject)
        }
        Some("json_schema") => {
            let spec = format.get("json_schema");
            if spec
                .and_then(|s| s.get("name"))
                .and_then(Value::as_str)
                .is_none()
            {
                return Err(invalid(
                    "Missing required parameter: 'response_format.json_schema.name'.",
                    "response_format.json_schema.name",
                ));
            }
            Ok(spec
                .and_then(|s| s.get("schema"))
                .cloned()
                .map_or(AnswerFormat::JsonObject, AnswerFormat::JsonSchema))
        }
        _ => Err(invalid(
            "Invalid value for 'response_format.type': supported values are 'text', 'json_object' and 'json_schema'.",
            "response_format.type",
        )),
    }
}

/// The refusal of a request whose `response_format` type is one of `refused` (the model's
/// `Profile::refused_formats`), worded as llama-cpp-python's server words its validation error.
pub(crate) fn refused_format(raw: &Value, refused: &[String]) -> Option<ApiError> {
    let kind = raw.get("response_format")?.get("type")?.as_str()?;
    if !refused.iter().any(|r| r == kind) {
        return None;
    }
    let expected = ["text", "json_object", "json_schema"]
        .into_iter()
        .filter(|t| !refused.iter().any(|r| r == t))
        .map(|t| format!("'{t}'"))
        .collect::<Vec<_>>()
        .join(" or ");
    Some(ApiError::ServerValidation(format!(
        "1 validation error:\n  {{'type': 'literal_error', 'loc': ('body', 'response_format', \
         'type'), 'msg': \"Input should be {expected}\", 'input': '{kind}', 'ctx': \
         {{'expected': \"{expected}\"}}}}\n\n  File \"llama_cpp/server/app.py\", line 376, in \
         create_chat_completion\n    POST /v1/chat/completions"
    )))
}

fn decode_max_output(
    body: &serde_json::Map<String, Value>,
    model: &SimModel,
) -> Result<Option<u64>, ApiError> {
    for param in ["max_completion_tokens", "max_tokens"] {
        match body.get(param) {
            None | Some(Value::Null) => continue,
            Some(v) => {
                let Some(n) = v.as_u64().filter(|n| *n >= 1) else {
                    return Err(invalid(
                        format!("Invalid '{param}': expected an integer of at least 1, got {v}."),
                        param,
                    ));
                };
                if n > u64::from(model.output_ceiling) {
                    return Err(invalid(
                        format!(
                            "max_tokens is too large: {n}. This model supports at most {} completion tokens, whereas you provided {n}.",
                            model.output_ceiling
                        ),
                        param,
                    ));
                }
                return Ok(Some(n));
            }
        }
    }
    Ok(None)
}
