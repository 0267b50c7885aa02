//! Decoding and checking an Anthropic Messages request body.
//!
//! Checks enforced as the real API does: `max_tokens` present and within the model's ceiling;
//! every `tool_use` answered by a `tool_result` in the next user message, results placed before
//! any text, and no result without its call; valid tool definitions; thinking only on a model
//! that supports it, with a budget of at least 1024 below `max_tokens`, never with a forced
//! `tool_choice`; prior thinking blocks unmodified (their signatures verify) and, while thinking
//! is on, the final assistant turn of a tool loop starting with its thinking block.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::api_error::ApiError;
use crate::config::SimModel;
use crate::exchange::{AnswerFormat, Dialect, Exchange, Message, Part, Role, ToolChoice, ToolSpec};
use crate::openai::valid_tool_name;
use crate::seeding::{Signer, content_seed};
use crate::text_protocol;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::invalid(message, None)
}

fn block_type(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The text of a `system` field or of a `tool_result`'s `content`: a string, or its text blocks.
pub(crate) fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A message's content as a list of blocks (a plain string is one text block).
fn blocks_of(message: &Value) -> Vec<Value> {
    match message.get("content") {
        Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
        Some(Value::Array(blocks)) => blocks.clone(),
        _ => Vec::new(),
    }
}

/// Decodes `raw` (already known to name `model`) into an [`Exchange`].
pub(crate) fn decode(
    raw: &Value,
    model: &SimModel,
    seed: u64,
    signer: &Signer,
) -> Result<Exchange, ApiError> {
    let Some(body) = raw.as_object() else {
        return Err(invalid("The request body must be a JSON object."));
    };
    let max_tokens = match body.get("max_tokens") {
        None | Some(Value::Null) => return Err(invalid("max_tokens: Field required")),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| invalid("max_tokens: Input should be a valid integer"))?,
    };
    if max_tokens > u64::from(model.output_ceiling) {
        return Err(invalid(format!(
            "max_tokens: {max_tokens} > {}, which is the maximum allowed number of output tokens for {}",
            model.output_ceiling, model.name
        )));
    }
    let raw_messages = match body.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m,
        Some(Value::Array(_)) => return Err(invalid("messages: at least one message is required")),
        _ => return Err(invalid("messages: Field required")),
    };
    let blocks: Vec<Vec<Value>> = raw_messages.iter().map(blocks_of).collect();
    check_tool_pairing(raw_messages, &blocks)?;

    let tools = decode_tools(body.get("tools"), model)?;
    let (tool_choice, parallel) = decode_tool_choice(body.get("tool_choice"), &tools)?;
    let thinking = decode_thinking(body.get("thinking"), model, max_tokens, &tool_choice)?;
    check_thinking_blocks(raw_messages, &blocks, signer, thinking)?;

    let system = text_of(body.get("system"));
    let messages = raw_messages
        .iter()
        .zip(&blocks)
        .map(|(m, b)| to_message(m, b))
        .collect::<Result<Vec<_>, _>>()?;
    let text_tools = text_protocol::tools(&system).unwrap_or_else(|e| {
        tracing::debug!(error = %e.0, "ignoring an unreadable <tools> block");
        Vec::new()
    });
    let format = match raw.pointer("/output_config/format") {
        Some(f) if f.get("type").and_then(Value::as_str) == Some("json_schema") => f
            .get("schema")
            .cloned()
            .map(AnswerFormat::JsonSchema)
            .ok_or_else(|| invalid("output_config.format.schema: Field required"))?,
        Some(f) if !f.is_null() => {
            return Err(invalid(
                "output_config.format.type: Input should be 'json_schema'",
            ));
        }
        _ => text_protocol::response_schema(&system)
            .ok()
            .flatten()
            .map_or(AnswerFormat::Text, AnswerFormat::JsonSchema),
    };
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let key = json!([
        body.get("system"),
        body.get("messages"),
        body.get("tools"),
        body.get("tool_choice"),
        body.get("output_config")
    ]);
    Ok(Exchange {
        dialect: Dialect::Anthropic,
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
        reasoning_effort: None,
        max_output: Some(max_tokens),
        stream,
        include_usage: false,
        logprobs: None,
        encrypted_reasoning: false,
    })
}

fn to_message(message: &Value, blocks: &[Value]) -> Result<Message, ApiError> {
    let role = match message.get("role").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        other => {
            return Err(invalid(format!(
                "messages: Unexpected role {}. The Messages API accepts only 'user' and 'assistant' roles.",
                other.map_or_else(|| "null".to_owned(), |r| format!("\"{r}\""))
            )));
        }
    };
    let parts = blocks
        .iter()
        .filter_map(|block| match block_type(block) {
            "text" => Some(Part::Text(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            )),
            "tool_use" => Some(Part::ToolCall {
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                arguments: block.get("input").map(Value::to_string).unwrap_or_default(),
            }),
            "tool_result" => Some(Part::ToolResult(text_of(block.get("content")))),
            "thinking" => Some(Part::Thinking(
                block
                    .get("thinking")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            )),
            _ => None,
        })
        .collect();
    Ok(Message { role, parts })
}

fn ids_of<'a>(blocks: &'a [Value], kind: &str, field: &str) -> Vec<&'a str> {
    blocks
        .iter()
        .filter(|b| block_type(b) == kind)
        .filter_map(|b| b.get(field).and_then(Value::as_str))
        .collect()
}

fn check_tool_pairing(messages: &[Value], blocks: &[Vec<Value>]) -> Result<(), ApiError> {
    for (i, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let results = ids_of(&blocks[i], "tool_result", "tool_use_id");
        if !results.is_empty() {
            let previous: HashSet<&str> = i
                .checked_sub(1)
                .map(|p| ids_of(&blocks[p], "tool_use", "id").into_iter().collect())
                .unwrap_or_default();
            if let Some(stray) = results.iter().find(|id| !previous.contains(*id)) {
                return Err(invalid(format!(
                    "messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: {stray}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                )));
            }
            let first_text = blocks[i]
                .iter()
                .position(|b| block_type(b) != "tool_result");
            let last_result = blocks[i]
                .iter()
                .rposition(|b| block_type(b) == "tool_result");
            if let (Some(t), Some(r)) = (first_text, last_result)
                && t < r
            {
                return Err(invalid(format!(
                    "messages.{i}.content.{t}: `tool_result` blocks must come first in a user message, before any other content."
                )));
            }
        }
        if role == "assistant" {
            let calls = ids_of(&blocks[i], "tool_use", "id");
            if calls.is_empty() {
                continue;
            }
            let answered: HashSet<&str> = blocks
                .get(i + 1)
                .map(|next| {
                    ids_of(next, "tool_result", "tool_use_id")
                        .into_iter()
                        .collect()
                })
                .unwrap_or_default();
            let missing: Vec<&str> = calls
                .into_iter()
                .filter(|c| !answered.contains(c))
                .collect();
            if !missing.is_empty() {
                return Err(invalid(format!(
                    "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    i + 1,
                    missing.join(", ")
                )));
            }
        }
    }
    Ok(())
}

fn decode_tools(raw: Option<&Value>, model: &SimModel) -> Result<Vec<ToolSpec>, ApiError> {
    let list = match raw {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(invalid("tools: Input should be a valid list")),
    };
    if list.is_empty() {
        return Ok(Vec::new());
    }
    if !model.native_tools {
        return Err(invalid(format!(
            "tools: the model {} does not support tool use.",
            model.name
        )));
    }
    let mut out = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        let kind = tool.get("type").and_then(Value::as_str).unwrap_or("custom");
        if kind != "custom" {
            // Server tools (web search, code execution…) are not simulated.
            continue;
        }
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
        if !valid_tool_name(name, 128) {
            return Err(invalid(format!(
                "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
            )));
        }
        let Some(schema) = tool.get("input_schema").filter(|s| s.is_object()) else {
            return Err(invalid(format!(
                "tools.{i}.custom.input_schema: Field required"
            )));
        };
        out.push(ToolSpec {
            name: name.to_owned(),
            description: tool
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            schema: schema.clone(),
        });
    }
    Ok(out)
}

fn decode_tool_choice(
    raw: Option<&Value>,
    tools: &[ToolSpec],
) -> Result<(ToolChoice, bool), ApiError> {
    let Some(choice) = raw.filter(|v| !v.is_null()) else {
        return Ok((ToolChoice::Auto, true));
    };
    let parallel = choice
        .get("disable_parallel_tool_use")
        .and_then(Value::as_bool)
        != Some(true);
    let parsed = match choice.get("type").and_then(Value::as_str) {
        Some("auto") => ToolChoice::Auto,
        Some("none") => ToolChoice::None,
        Some("any") => ToolChoice::Required,
        Some("tool") => {
            let name = choice.get("name").and_then(Value::as_str).unwrap_or("");
            if !tools.iter().any(|t| t.name == name) {
                return Err(invalid(format!(
                    "tool_choice.tool.name: tool `{name}` is not one of the tools provided"
                )));
            }
            ToolChoice::Named(name.to_owned())
        }
        _ => {
            return Err(invalid(
                "tool_choice: Input tag does not match any of the expected tags: 'auto', 'any', 'tool', 'none'",
            ));
        }
    };
    Ok((parsed, parallel))
}

/// Whether thinking is on for this request, after checking the configuration.
fn decode_thinking(
    raw: Option<&Value>,
    model: &SimModel,
    max_tokens: u64,
    tool_choice: &ToolChoice,
) -> Result<bool, ApiError> {
    let Some(config) = raw.and_then(Value::as_object) else {
        return Ok(false);
    };
    let on = match config.get("type").and_then(Value::as_str) {
        Some("enabled") => {
            check_budget(config, max_tokens)?;
            true
        }
        Some("adaptive") => true,
        Some("disabled") => false,
        _ => {
            return Err(invalid(
                "thinking: Input tag does not match any of the expected tags: 'enabled', 'adaptive', 'disabled'",
            ));
        }
    };
    if on && !model.thinking {
        return Err(invalid(format!(
            "thinking: the model {} does not support extended thinking.",
            model.name
        )));
    }
    if on && matches!(tool_choice, ToolChoice::Required | ToolChoice::Named(_)) {
        return Err(invalid(
            "Thinking may not be enabled when tool_choice forces tool use.",
        ));
    }
    Ok(on)
}

fn check_budget(config: &Map<String, Value>, max_tokens: u64) -> Result<(), ApiError> {
    let Some(budget) = config.get("budget_tokens").and_then(Value::as_u64) else {
        return Err(invalid("thinking.enabled.budget_tokens: Field required"));
    };
    if budget < 1024 {
        return Err(invalid(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ));
    }
    if budget >= max_tokens {
        return Err(invalid(
            "`max_tokens` must be greater than `thinking.budget_tokens`.",
        ));
    }
    Ok(())
}

fn check_thinking_blocks(
    messages: &[Value],
    blocks: &[Vec<Value>],
    signer: &Signer,
    thinking_on: bool,
) -> Result<(), ApiError> {
    for (i, message) in messages.iter().enumerate() {
        if message.get("role").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        for (j, block) in blocks[i].iter().enumerate() {
            if block_type(block) != "thinking" {
                continue;
            }
            let text = block.get("thinking").and_then(Value::as_str).unwrap_or("");
            let signature = block.get("signature").and_then(Value::as_str).unwrap_or("");
            if !signer.verify(text, signature) {
                return Err(invalid(format!(
                    "messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                )));
            }
        }
    }
    if !thinking_on {
        return Ok(());
    }
    let last_assistant = messages
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("assistant"));
    if let Some(i) = last_assistant {
        let has_tool_use = blocks[i].iter().any(|b| block_type(b) == "tool_use");
        let first = blocks[i].first().map(block_type).unwrap_or("");
        if has_tool_use && first != "thinking" && first != "redacted_thinking" {
            return Err(invalid(format!(
                "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceding the latest set of `tool_use` and `tool_result` blocks). Send back the thinking blocks of previous turns unchanged, or disable `thinking`."
            )));
        }
    }
    Ok(())
}
