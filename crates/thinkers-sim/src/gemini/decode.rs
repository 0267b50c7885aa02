//! Decoding and checking a Gemini `generateContent` request body.
//!
//! Checks enforced as the real API does: `contents` present with the roles `user` and `model`;
//! a turn of function responses right after the model turn of the calls it answers, one response
//! per call; valid function declarations (`parameters` or `parametersJsonSchema`, not both);
//! `toolConfig.functionCallingConfig.mode` one of `AUTO`, `ANY`, `NONE`, `VALIDATED`, and
//! `allowedFunctionNames` naming declared functions, only with `ANY`/`VALIDATED`; a response
//! schema only with `responseMimeType: application/json`; `maxOutputTokens` within the model's
//! ceiling; thinking only on a model that supports it; every `thoughtSignature` one the sim
//! issued, unchanged; and, while thinking is on, the first function call of every model turn of
//! the current turn signed (Gemini 3 refuses such a turn otherwise).

use serde_json::{Value, json};

use crate::api_error::ApiError;
use crate::config::SimModel;
use crate::exchange::{AnswerFormat, Dialect, Exchange, Message, Part, Role, ToolChoice, ToolSpec};
use crate::seeding::{Signer, content_seed};
use crate::text_protocol;

fn invalid(message: impl Into<String>, field: &str) -> ApiError {
    ApiError::invalid(message, Some(field))
}

/// A field by its JSON name (`lowerCamelCase`) or, as every proto3 JSON reader accepts (and the
/// official Python SDK sends for some fields), by its proto name (`snake_case`).
fn get<'a>(v: &'a Value, camel: &str) -> Option<&'a Value> {
    v.get(camel).or_else(|| {
        let mut snake = String::with_capacity(camel.len() + 4);
        for c in camel.chars() {
            if c.is_ascii_uppercase() {
                snake.push('_');
                snake.push(c.to_ascii_lowercase());
            } else {
                snake.push(c);
            }
        }
        v.get(snake)
    })
}

fn parts_of(content: &Value) -> &[Value] {
    content
        .get("parts")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn text_of(content: Option<&Value>) -> String {
    content
        .map(parts_of)
        .unwrap_or_default()
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

fn calls_in(content: &Value) -> Vec<&Value> {
    parts_of(content)
        .iter()
        .filter_map(|p| get(p, "functionCall"))
        .collect()
}

fn responses_in(content: &Value) -> usize {
    parts_of(content)
        .iter()
        .filter(|p| get(p, "functionResponse").is_some())
        .count()
}

/// Decodes `raw` (for `model`, named in the path) into an [`Exchange`].
pub(crate) fn decode(
    raw: &Value,
    model: &SimModel,
    seed: u64,
    signer: &Signer,
    stream: bool,
) -> Result<Exchange, ApiError> {
    let Some(body) = raw.as_object() else {
        return Err(ApiError::invalid(
            "Invalid JSON payload received. The request body must be a JSON object.",
            None,
        ));
    };
    let contents = match body.get("contents") {
        Some(Value::Array(c)) if !c.is_empty() => c,
        _ => {
            return Err(invalid(
                "* GenerateContentRequest.contents: contents is not specified",
                "contents",
            ));
        }
    };
    let roles = contents
        .iter()
        .enumerate()
        .map(|(i, c)| match c.get("role").and_then(Value::as_str) {
            None | Some("user") => Ok(Role::User),
            Some("model") => Ok(Role::Assistant),
            Some(other) => Err(invalid(
                format!("Please use a valid role: user, model. (contents[{i}].role was `{other}`)"),
                &format!("contents[{i}].role"),
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_function_turns(contents, &roles)?;

    let config = get(raw, "generationConfig").cloned().unwrap_or(json!({}));
    let max_output = match get(&config, "maxOutputTokens") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            invalid(
                "Invalid value at 'generation_config.max_output_tokens', expected an integer",
                "generationConfig.maxOutputTokens",
            )
        })?),
    };
    if let Some(n) = max_output
        && n > u64::from(model.output_ceiling)
    {
        return Err(invalid(
            format!(
                "The requested maxOutputTokens ({n}) exceeds the maximum of {} for {}.",
                model.output_ceiling, model.name
            ),
            "generationConfig.maxOutputTokens",
        ));
    }
    let (thinking, include_thoughts) = decode_thinking(get(&config, "thinkingConfig"), model)?;
    check_signatures(contents, &roles, signer, thinking)?;

    let tools = decode_tools(body.get("tools"), model)?;
    let tool_choice = decode_tool_config(get(raw, "toolConfig"), &tools)?;
    let system = text_of(get(raw, "systemInstruction"));
    let messages = contents
        .iter()
        .zip(&roles)
        .map(|(c, role)| to_message(c, *role))
        .collect();
    let text_tools = text_protocol::tools(&system).unwrap_or_else(|e| {
        tracing::debug!(error = %e.0, "ignoring an unreadable <tools> block");
        Vec::new()
    });
    let format = decode_format(&config, &system)?;
    let key = json!([
        get(raw, "systemInstruction"),
        body.get("contents"),
        body.get("tools"),
        get(raw, "toolConfig"),
        get(&config, "responseJsonSchema"),
        get(&config, "responseSchema"),
    ]);
    Ok(Exchange {
        dialect: Dialect::Gemini,
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
        include_thoughts,
        reasoning_effort: None,
        max_output,
        stream,
        include_usage: true,
        logprobs: None,
        encrypted_reasoning: false,
    })
}

fn to_message(content: &Value, role: Role) -> Message {
    let parts = parts_of(content)
        .iter()
        .filter_map(|p| {
            if let Some(call) = get(p, "functionCall") {
                return Some(Part::ToolCall {
                    name: call
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    arguments: call.get("args").map(Value::to_string).unwrap_or_default(),
                });
            }
            if let Some(response) = get(p, "functionResponse") {
                let r = response.get("response");
                let text = match r
                    .and_then(|r| r.get("output").or_else(|| r.get("error")))
                    .or(r)
                {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                return Some(Part::ToolResult(text));
            }
            let text = p.get("text").and_then(Value::as_str)?.to_owned();
            if p.get("thought").and_then(Value::as_bool) == Some(true) {
                Some(Part::Thinking(text))
            } else if text.is_empty() {
                None
            } else {
                Some(Part::Text(text))
            }
        })
        .collect();
    Message { role, parts }
}

/// Function responses come right after the model turn of their calls, one per call.
fn check_function_turns(contents: &[Value], roles: &[Role]) -> Result<(), ApiError> {
    for (i, content) in contents.iter().enumerate() {
        let responses = responses_in(content);
        if responses == 0 {
            continue;
        }
        let calls = i
            .checked_sub(1)
            .filter(|p| roles[*p] == Role::Assistant)
            .map_or(0, |p| calls_in(&contents[p]).len());
        if calls == 0 || roles[i] != Role::User {
            return Err(invalid(
                "Please ensure that function response turn comes immediately after a function \
                 call turn.",
                &format!("contents[{i}]"),
            ));
        }
        if calls != responses {
            return Err(invalid(
                format!(
                    "Please ensure that the number of function response parts ({responses}) is \
                     equal to the number of function call parts of the function call turn \
                     ({calls})."
                ),
                &format!("contents[{i}]"),
            ));
        }
    }
    Ok(())
}

/// Whether thinking is on, and whether thoughts are shown.
fn decode_thinking(raw: Option<&Value>, model: &SimModel) -> Result<(bool, bool), ApiError> {
    let Some(config) = raw.filter(|v| !v.is_null()) else {
        // A thinking model thinks by default; it shows no thoughts unless asked.
        return Ok((model.thinking, false));
    };
    let budget = get(config, "thinkingBudget").and_then(Value::as_i64);
    let level = get(config, "thinkingLevel").and_then(Value::as_str);
    if budget.is_some() && level.is_some() {
        return Err(invalid(
            "You can only set one of thinking budget and thinking level.",
            "generationConfig.thinkingConfig",
        ));
    }
    if let Some(level) = level
        && !["minimal", "low", "medium", "high"].contains(&level.to_ascii_lowercase().as_str())
    {
        return Err(invalid(
            format!(
                "Invalid value at 'generation_config.thinking_config.thinking_level' ({level})"
            ),
            "generationConfig.thinkingConfig.thinkingLevel",
        ));
    }
    let off = budget == Some(0);
    if !model.thinking && !off && (budget.is_some() || level.is_some()) {
        return Err(invalid(
            format!("Thinking is not supported by the model {}.", model.name),
            "generationConfig.thinkingConfig",
        ));
    }
    let on = model.thinking && !off;
    let include = get(config, "includeThoughts").and_then(Value::as_bool) == Some(true);
    Ok((on, on && include))
}

/// Every signature is one the sim issued; while thinking is on, the first call of each model
/// turn since the last user text carries one.
fn check_signatures(
    contents: &[Value],
    roles: &[Role],
    signer: &Signer,
    thinking: bool,
) -> Result<(), ApiError> {
    for (i, content) in contents.iter().enumerate() {
        for (j, part) in parts_of(content).iter().enumerate() {
            if let Some(sig) = get(part, "thoughtSignature") {
                let ok = roles[i] == Role::Assistant
                    && sig.as_str().is_some_and(|s| super::verify(signer, s));
                if !ok {
                    return Err(invalid(
                        "Corrupted thought signature.",
                        &format!("contents[{i}].parts[{j}].thoughtSignature"),
                    ));
                }
            }
        }
    }
    if !thinking {
        return Ok(());
    }
    // The current turn starts after the last user content that is not function responses.
    let start = contents
        .iter()
        .zip(roles)
        .rposition(|(c, r)| *r == Role::User && responses_in(c) == 0)
        .map_or(0, |i| i + 1);
    for (i, content) in contents.iter().enumerate().skip(start) {
        if roles[i] != Role::Assistant {
            continue;
        }
        let first_call = parts_of(content)
            .iter()
            .find(|p| get(p, "functionCall").is_some());
        if let Some(part) = first_call
            && get(part, "thoughtSignature").is_none()
        {
            let name = get(part, "functionCall")
                .and_then(|c| c.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            return Err(invalid(
                format!(
                    "Function call `{name}` in the `{}.` content block is missing a \
                     `thought_signature`.",
                    i + 1
                ),
                &format!("contents[{i}]"),
            ));
        }
    }
    Ok(())
}

/// A function name as the API allows it: a letter or underscore, then letters, digits,
/// underscores, dots, colons and dashes, 64 characters at most.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 64
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
}

fn decode_tools(raw: Option<&Value>, model: &SimModel) -> Result<Vec<ToolSpec>, ApiError> {
    let list = match raw {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(invalid(
                "Invalid value at 'tools', expected a list",
                "tools",
            ));
        }
    };
    let mut out = Vec::new();
    for (i, tool) in list.iter().enumerate() {
        let Some(declarations) = get(tool, "functionDeclarations").and_then(Value::as_array) else {
            // Built-in tools (search, code execution…) are not simulated.
            continue;
        };
        if !declarations.is_empty() && !model.native_tools {
            return Err(invalid(
                format!("Function calling is not enabled for {}.", model.name),
                "tools",
            ));
        }
        for (j, d) in declarations.iter().enumerate() {
            let field = format!("tools[{i}].function_declarations[{j}]");
            let name = d.get("name").and_then(Value::as_str).unwrap_or("");
            if !valid_name(name) {
                return Err(invalid(
                    format!(
                        "* GenerateContentRequest.{field}.name: Invalid function name. Must start \
                         with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), \
                         underscores (_), dots (.), colons (:), or dashes (-), with a maximum \
                         length of 64."
                    ),
                    &format!("{field}.name"),
                ));
            }
            let schema = match (d.get("parameters"), get(d, "parametersJsonSchema")) {
                (Some(_), Some(_)) => {
                    return Err(invalid(
                        format!(
                            "* GenerateContentRequest.{field}: parameters and \
                             parameters_json_schema are mutually exclusive"
                        ),
                        &field,
                    ));
                }
                (Some(s), None) | (None, Some(s)) => s.clone(),
                (None, None) => json!({"type": "object", "properties": {}}),
            };
            out.push(ToolSpec {
                name: name.to_owned(),
                description: d
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                schema: lowercase_types(schema),
            });
        }
    }
    Ok(out)
}

/// OpenAPI-style schemas (`parameters`, `responseSchema`) spell types in capitals (`OBJECT`);
/// the planner reads JSON Schema.
fn lowercase_types(mut schema: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                for (k, child) in map.iter_mut() {
                    if k == "type"
                        && let Value::String(t) = child
                    {
                        *t = t.to_ascii_lowercase();
                    } else {
                        walk(child);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut schema);
    schema
}

fn decode_tool_config(raw: Option<&Value>, tools: &[ToolSpec]) -> Result<ToolChoice, ApiError> {
    let Some(config) = raw.and_then(|c| get(c, "functionCallingConfig")) else {
        return Ok(ToolChoice::Auto);
    };
    let field = "toolConfig.functionCallingConfig";
    let mode = config.get("mode").and_then(Value::as_str).unwrap_or("AUTO");
    let allowed: Vec<&str> = get(config, "allowedFunctionNames")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(unknown) = allowed
        .iter()
        .find(|n| !tools.iter().any(|t| t.name == **n))
    {
        return Err(invalid(
            format!(
                "allowed_function_names contains `{unknown}`, which is not a declared function."
            ),
            &format!("{field}.allowedFunctionNames"),
        ));
    }
    let choice = match mode {
        "AUTO" | "MODE_UNSPECIFIED" => ToolChoice::Auto,
        "NONE" => ToolChoice::None,
        "ANY" | "VALIDATED" => match allowed.as_slice() {
            [one] => ToolChoice::Named((*one).to_owned()),
            _ => ToolChoice::Required,
        },
        other => {
            return Err(invalid(
                format!("Invalid value at 'tool_config.function_calling_config.mode' ({other})"),
                &format!("{field}.mode"),
            ));
        }
    };
    if !allowed.is_empty() && !matches!(mode, "ANY" | "VALIDATED") {
        return Err(invalid(
            "allowed_function_names may only be set when mode is ANY or VALIDATED.",
            &format!("{field}.allowedFunctionNames"),
        ));
    }
    Ok(choice)
}

fn decode_format(config: &Value, system: &str) -> Result<AnswerFormat, ApiError> {
    let mime = get(config, "responseMimeType")
        .and_then(Value::as_str)
        .unwrap_or("text/plain");
    let schema = match (
        get(config, "responseJsonSchema"),
        get(config, "responseSchema"),
    ) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "response_schema and response_json_schema are mutually exclusive.",
                "generationConfig.responseJsonSchema",
            ));
        }
        (Some(s), None) => Some(s.clone()),
        (None, Some(s)) => Some(lowercase_types(s.clone())),
        (None, None) => None,
    };
    match (mime, schema) {
        ("application/json", Some(s)) => Ok(AnswerFormat::JsonSchema(s)),
        ("application/json", None) => Ok(AnswerFormat::JsonObject),
        (_, Some(_)) => Err(invalid(
            format!(
                "Setting a response schema requires responseMimeType application/json (it was \
                 `{mime}`)."
            ),
            "generationConfig.responseMimeType",
        )),
        ("text/plain" | "text/x.enum", None) => Ok(text_protocol::response_schema(system)
            .ok()
            .flatten()
            .map_or(AnswerFormat::Text, AnswerFormat::JsonSchema)),
        (other, None) => Err(invalid(
            format!(
                "Unsupported response mime type `{other}`: allowed are text/plain, \
                 application/json and text/x.enum."
            ),
            "generationConfig.responseMimeType",
        )),
    }
}
