//! Decoding and checking a Converse request body.
//!
//! Checks enforced as the real API does: at least one message, the conversation starting with a
//! user turn and the roles alternating; `inferenceConfig.maxTokens` within the model's ceiling;
//! `toolConfig` present whenever the messages hold `toolUse` or `toolResult` blocks, valid tool
//! specifications, every `toolUse` answered by a `toolResult` in the next user message;
//! `additionalModelRequestFields.thinking` only on a model that supports it, with a budget of at
//! least 1,024 below `maxTokens`, never with a forced tool choice; prior reasoning blocks
//! unmodified (their signatures verify).

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::api_error::ApiError;
use crate::config::SimModel;
use crate::exchange::{AnswerFormat, Dialect, Exchange, Message, Part, Role, ToolChoice, ToolSpec};
use crate::openai::valid_tool_name;
use crate::seeding::{Signer, content_seed};
use crate::text_protocol;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::invalid(message, None)
}

fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The text of a `toolResult`'s content: its `text` members, and its `json` members as JSON.
pub(crate) fn result_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            c.get("text")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| c.get("json").map(Value::to_string))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Decodes `raw`, a request to `model` at `/converse` (or `/converse-stream` when `stream`).
pub(crate) fn decode(
    raw: &Value,
    model: &SimModel,
    seed: u64,
    signer: &Signer,
    stream: bool,
) -> Result<Exchange, ApiError> {
    let Some(body) = raw.as_object() else {
        return Err(invalid("The request body must be a JSON object."));
    };
    let max_tokens = match raw.pointer("/inferenceConfig/maxTokens") {
        None | Some(Value::Null) => u64::from(model.output_ceiling),
        Some(v) => v.as_u64().filter(|n| *n >= 1).ok_or_else(|| {
            invalid("1 validation error detected: Value at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1")
        })?,
    };
    if max_tokens > u64::from(model.output_ceiling) {
        return Err(invalid(format!(
            "The maximum tokens you requested exceeds the model limit of {}. Try again with a maximum tokens value that is lower than {}.",
            model.output_ceiling, model.output_ceiling
        )));
    }
    let raw_messages = match body.get("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m,
        _ => {
            return Err(invalid(
                "A conversation must start with a user message. Try again with a conversation that starts with a user message.",
            ));
        }
    };
    check_roles(raw_messages)?;
    let tools = decode_tools(body.get("toolConfig"), model)?;
    let uses_tools = raw_messages
        .iter()
        .flat_map(blocks)
        .any(|b| b.get("toolUse").is_some() || b.get("toolResult").is_some());
    if uses_tools && body.get("toolConfig").is_none() {
        return Err(invalid(
            "The toolConfig field must be defined when using toolUse and toolResult content blocks.",
        ));
    }
    check_tool_pairing(raw_messages)?;
    let tool_choice = decode_tool_choice(raw.pointer("/toolConfig/toolChoice"), &tools)?;
    let thinking = decode_thinking(
        raw.pointer("/additionalModelRequestFields/thinking"),
        model,
        max_tokens,
        &tool_choice,
    )?;
    check_reasoning(raw_messages, signer)?;

    let system = body
        .get("system")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    let messages = raw_messages.iter().map(to_message).collect();
    let text_tools = text_protocol::tools(&system).unwrap_or_else(|e| {
        tracing::debug!(error = %e.0, "ignoring an unreadable <tools> block");
        Vec::new()
    });
    let format = match raw.pointer("/outputConfig/textFormat") {
        Some(f) if !f.is_null() => {
            let schema = f
                .pointer("/structure/jsonSchema/schema")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    invalid("outputConfig.textFormat.structure.jsonSchema.schema is required")
                })?;
            let schema: Value = serde_json::from_str(schema)
                .map_err(|e| invalid(format!("The provided JSON schema is not valid JSON: {e}")))?;
            AnswerFormat::JsonSchema(schema)
        }
        _ => text_protocol::response_schema(&system)
            .ok()
            .flatten()
            .map_or(AnswerFormat::Text, AnswerFormat::JsonSchema),
    };
    let key = json!([
        body.get("system"),
        body.get("messages"),
        body.get("toolConfig"),
        body.get("outputConfig")
    ]);
    Ok(Exchange {
        dialect: Dialect::Bedrock,
        model: model.name.clone(),
        content_seed: content_seed(seed, &model.name, key.to_string().as_bytes()),
        system,
        messages,
        tools,
        text_tools,
        tool_choice,
        parallel: true,
        format,
        thinking,
        reasoning_effort: raw
            .pointer("/outputConfig/effort")
            .and_then(Value::as_str)
            .map(str::to_owned),
        max_output: Some(max_tokens),
        stream,
        include_usage: false,
        logprobs: None,
        encrypted_reasoning: false,
        include_thoughts: false,
    })
}

fn check_roles(messages: &[Value]) -> Result<(), ApiError> {
    let mut previous = None;
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str);
        match role {
            Some("user" | "assistant") => {}
            _ => {
                return Err(invalid(format!(
                    "1 validation error detected: Value at 'messages.{}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]",
                    i + 1
                )));
            }
        }
        if i == 0 && role != Some("user") {
            return Err(invalid(
                "A conversation must start with a user message. Try again with a conversation that starts with a user message.",
            ));
        }
        if previous == role {
            return Err(invalid(
                "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.",
            ));
        }
        if blocks(m).is_empty() {
            return Err(invalid(format!(
                "The content field in the Message object at messages.{i} is empty. Add a ContentBlock object to the content field and try again."
            )));
        }
        previous = role;
    }
    Ok(())
}

fn ids<'a>(message: &'a Value, member: &str) -> Vec<&'a str> {
    blocks(message)
        .iter()
        .filter_map(|b| b.get(member))
        .filter_map(|b| b.get("toolUseId").and_then(Value::as_str))
        .collect()
}

fn check_tool_pairing(messages: &[Value]) -> Result<(), ApiError> {
    for (i, m) in messages.iter().enumerate() {
        let calls = ids(m, "toolUse");
        if calls.is_empty() {
            continue;
        }
        let answered: HashSet<&str> = messages
            .get(i + 1)
            .map(|next| ids(next, "toolResult").into_iter().collect())
            .unwrap_or_default();
        if i + 1 < messages.len()
            && let Some(missing) = calls.iter().find(|id| !answered.contains(*id))
        {
            return Err(invalid(format!(
                "Expected toolResult blocks at messages.{}.content for the following Ids: {missing}",
                i + 1
            )));
        }
    }
    for (i, m) in messages.iter().enumerate() {
        let results = ids(m, "toolResult");
        let called: HashSet<&str> = i
            .checked_sub(1)
            .map(|p| ids(&messages[p], "toolUse").into_iter().collect())
            .unwrap_or_default();
        if let Some(stray) = results.iter().find(|id| !called.contains(*id)) {
            return Err(invalid(format!(
                "messages.{i}.content: the toolResult block with id {stray} does not answer a toolUse block of the previous turn"
            )));
        }
    }
    Ok(())
}

fn decode_tools(config: Option<&Value>, model: &SimModel) -> Result<Vec<ToolSpec>, ApiError> {
    let Some(config) = config.filter(|c| !c.is_null()) else {
        return Ok(Vec::new());
    };
    let Some(list) = config.get("tools").and_then(Value::as_array) else {
        return Err(invalid("toolConfig.tools is required"));
    };
    if !model.native_tools {
        return Err(invalid(format!(
            "This model ({}) doesn't support tool use.",
            model.name
        )));
    }
    let mut out = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        let Some(spec) = tool.get("toolSpec") else {
            // Cache points and system tools are not simulated.
            continue;
        };
        let name = spec.get("name").and_then(Value::as_str).unwrap_or("");
        if !valid_tool_name(name, 64) {
            return Err(invalid(format!(
                "1 validation error detected: Value at 'toolConfig.tools.{}.member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+",
                i + 1
            )));
        }
        let Some(schema) = spec.pointer("/inputSchema/json").filter(|s| s.is_object()) else {
            return Err(invalid(format!(
                "toolConfig.tools.{i}.toolSpec.inputSchema.json is required"
            )));
        };
        out.push(ToolSpec {
            name: name.to_owned(),
            description: spec
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            schema: schema.clone(),
        });
    }
    Ok(out)
}

fn decode_tool_choice(raw: Option<&Value>, tools: &[ToolSpec]) -> Result<ToolChoice, ApiError> {
    let Some(choice) = raw.filter(|c| !c.is_null()) else {
        return Ok(ToolChoice::Auto);
    };
    if choice.get("auto").is_some() {
        return Ok(ToolChoice::Auto);
    }
    if choice.get("any").is_some() {
        return Ok(ToolChoice::Required);
    }
    let Some(name) = choice.pointer("/tool/name").and_then(Value::as_str) else {
        return Err(invalid(
            "toolConfig.toolChoice must set one of auto, any or tool",
        ));
    };
    if !tools.iter().any(|t| t.name == name) {
        return Err(invalid(format!(
            "The tool {name} named in toolChoice is not in toolConfig.tools."
        )));
    }
    Ok(ToolChoice::Named(name.to_owned()))
}

fn decode_thinking(
    raw: Option<&Value>,
    model: &SimModel,
    max_tokens: u64,
    tool_choice: &ToolChoice,
) -> Result<bool, ApiError> {
    let Some(config) = raw.and_then(Value::as_object) else {
        return Ok(false);
    };
    if config.get("type").and_then(Value::as_str) != Some("enabled") {
        return Ok(false);
    }
    if !model.thinking {
        return Err(invalid(format!(
            "The model {} does not support extended thinking.",
            model.name
        )));
    }
    let budget = config
        .get("budget_tokens")
        .and_then(Value::as_u64)
        .ok_or_else(|| invalid("thinking.enabled.budget_tokens: Field required"))?;
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
    if matches!(tool_choice, ToolChoice::Required | ToolChoice::Named(_)) {
        return Err(invalid(
            "Thinking may not be enabled when tool_choice forces tool use.",
        ));
    }
    Ok(true)
}

/// Every reasoning text that carries a signature must be the one the sim signed, unchanged.
fn check_reasoning(messages: &[Value], signer: &Signer) -> Result<(), ApiError> {
    for (i, m) in messages.iter().enumerate() {
        for r in blocks(m)
            .iter()
            .filter_map(|b| b.pointer("/reasoningContent/reasoningText"))
        {
            let text = r.get("text").and_then(Value::as_str).unwrap_or("");
            let Some(signature) = r.get("signature").and_then(Value::as_str) else {
                continue;
            };
            if !signer.verify(text, signature) {
                return Err(invalid(format!(
                    "messages.{i}.content: the signature of a reasoningContent block does not match its text; reasoning blocks must be sent back unmodified"
                )));
            }
        }
    }
    Ok(())
}

fn to_message(message: &Value) -> Message {
    let role = match message.get("role").and_then(Value::as_str) {
        Some("assistant") => Role::Assistant,
        _ => Role::User,
    };
    let parts = blocks(message)
        .iter()
        .filter_map(|b| {
            if let Some(t) = b.get("text").and_then(Value::as_str) {
                return Some(Part::Text(t.to_owned()));
            }
            if let Some(u) = b.get("toolUse") {
                return Some(Part::ToolCall {
                    name: u
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    arguments: u.get("input").map(Value::to_string).unwrap_or_default(),
                });
            }
            if let Some(r) = b.get("toolResult") {
                return Some(Part::ToolResult(result_text(r)));
            }
            b.pointer("/reasoningContent/reasoningText/text")
                .and_then(Value::as_str)
                .map(|t| Part::Thinking(t.to_owned()))
        })
        .collect();
    Message { role, parts }
}
