//! Render a [`ChatRequest`] as a Gemini `generateContent` body.
//!
//! * The endpoint is `{base}/models/{model}:generateContent`, or
//!   `:streamGenerateContent?alt=sse` for a stream; the model is in the URL, not the body. The
//!   key goes in `x-goog-api-key`.
//! * Turns become `contents` with the roles `user` and `model`; consecutive turns of one role are
//!   merged, and a user turn sends its function responses first. System content is
//!   `systemInstruction`.
//! * Thought parts and thought signatures go back unchanged, on the parts they came with (see the
//!   module docs of `gemini`); thinking blocks another dialect made are not sent. Tool results are `functionResponse` parts whose `response` is
//!   `{"output": …}` or, for a failed tool, `{"error": …}`, as the API documents.
//! * Tools are one `functionDeclarations` tool whose parameters are JSON Schema
//!   (`parametersJsonSchema`, which takes `$ref`, `anyOf`, `additionalProperties`; the older
//!   `parameters` field takes only an OpenAPI subset). `tool_choice` becomes
//!   `toolConfig.functionCallingConfig` (`NONE`, `ANY`, `ANY` with `allowedFunctionNames`);
//!   `auto` is the default and is not written.
//! * A structured answer is `responseMimeType: application/json` with `responseJsonSchema`,
//!   unless text-protocol tools are in play, in which case the schema goes into the system prompt.
//! * On a target with thinking, `Reasoning::Tokens(n)` becomes `thinkingConfig.thinkingBudget`
//!   (0 turns thinking off) and an effort name `thinkingLevel`, both with `includeThoughts`.
//!   Thinking counts toward `maxOutputTokens`, so a budget is added to the answer's budget.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{KEY_HEADER, is_minted, untagged};
use crate::Result;
use crate::llm::encoded::{self, DecodePlan, EncodedRequest, Header, Part};
use crate::llm::message::{ContentBlock, MediaSource, Message, Role};
use crate::llm::request::{ChatRequest, Reasoning, ToolChoice, ToolSpec};
use crate::llm::strict::{self, Adaptation};
use crate::llm::target::WireTarget;
use crate::llm::text_tools;

/// The request body, fields in the order the API reference lists them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    contents: &'a [Part],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<[Tools<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<&'a RawValue>,
    generation_config: GenerationConfig<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    function_declarations: &'a [Part],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionDeclaration<'a> {
    name: &'a str,
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters_json_schema: Option<&'a strict::Rendered>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig<'a> {
    function_calling_config: FunctionCallingConfig<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCallingConfig<'a> {
    mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_function_names: Option<[&'a str; 1]>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    max_output_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<&'a strict::Rendered>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'a str>,
    include_thoughts: bool,
}

#[derive(Serialize)]
struct SystemInstruction<'a> {
    parts: [TextPart<'a>; 1],
}

#[derive(Serialize)]
struct TextPart<'a> {
    text: &'a str,
}

/// One part of a content: its data, whether it is a thought, and its signature.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WirePart<'a> {
    #[serde(flatten)]
    data: Payload<'a>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    thought: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
}

#[derive(Serialize)]
enum Payload<'a> {
    #[serde(rename = "text")]
    Text(&'a str),
    #[serde(rename = "inlineData")]
    InlineData(Blob<'a>),
    #[serde(rename = "fileData")]
    FileData(FileData<'a>),
    #[serde(rename = "functionCall")]
    FunctionCall(FunctionCall<'a>),
    #[serde(rename = "functionResponse")]
    FunctionResponse(FunctionResponse<'a>),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Blob<'a> {
    mime_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileData<'a> {
    mime_type: &'a str,
    file_uri: &'a str,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    args: Cow<'a, Value>,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    response: Outcome<'a>,
}

/// A tool's result as the API documents it: `output`, or `error` for a failure.
#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
enum Outcome<'a> {
    Output(&'a str),
    Error(&'a str),
}

impl WirePart<'_> {
    /// The order inside a turn: function responses lead a user turn.
    fn rank(&self) -> u8 {
        match self.data {
            Payload::FunctionResponse(_) => 0,
            _ => 1,
        }
    }
}

#[derive(Serialize)]
struct Content<'a> {
    role: &'static str,
    parts: Vec<WirePart<'a>>,
}

/// Render the request for a Gemini target.
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
    let history: &[Message] = &history;

    let system = if system.is_empty() {
        None
    } else {
        Some(encoded::part(&SystemInstruction {
            parts: [TextPart { text: &system }],
        })?)
    };
    let contents = contents(history)
        .iter()
        .map(encoded::part)
        .collect::<Result<Vec<_>>>()?;

    let (declarations, tool_config) = if !text_tools && offers_tools {
        let declarations = req
            .tools
            .iter()
            .map(declaration)
            .collect::<Result<Vec<_>>>()?;
        let config = match &req.tool_choice {
            // `AUTO` is what the API does when tools are given: it is not written.
            ToolChoice::Auto => None,
            ToolChoice::None => Some(("NONE", None)),
            ToolChoice::Required => Some(("ANY", None)),
            ToolChoice::Tool(name) => Some(("ANY", Some([name.as_str()]))),
        };
        (
            declarations,
            config.map(|(mode, allowed_function_names)| ToolConfig {
                function_calling_config: FunctionCallingConfig {
                    mode,
                    allowed_function_names,
                },
            }),
        )
    } else {
        (Vec::new(), None)
    };

    let (budget, level) = match &req.reasoning {
        _ if !target.thinking => (None, None),
        Reasoning::Off => (None, None),
        Reasoning::Tokens(n) => (Some(*n), None),
        Reasoning::Effort(e) => (None, Some(e.as_str())),
    };
    let thinking_config = (budget.is_some() || level.is_some()).then_some(ThinkingConfig {
        thinking_budget: budget,
        thinking_level: level,
        include_thoughts: budget != Some(0),
    });
    let schema = req
        .response
        .as_ref()
        .filter(|_| !schema_in_prompt)
        .map(|r| strict::rendered(&r.schema, Adaptation::AsIs));

    let body = Body {
        contents: &contents,
        tools: (!declarations.is_empty()).then_some([Tools {
            function_declarations: &declarations,
        }]),
        tool_config,
        system_instruction: system.as_deref(),
        generation_config: GenerationConfig {
            max_output_tokens: req.max_output_tokens.saturating_add(budget.unwrap_or(0)),
            response_mime_type: schema.is_some().then_some("application/json"),
            response_json_schema: schema.as_deref(),
            thinking_config,
        },
    };
    let body = encoded::finish(&body)?;

    let mut headers = Vec::with_capacity(2);
    headers.push(Header::plain("content-type", "application/json"));
    if let Some(key) = &target.api_key {
        headers.push(Header::secret(KEY_HEADER, key.expose_secret().to_owned()));
    }
    let url = if stream {
        format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            target.base(),
            target.model
        )
    } else {
        format!("{}/models/{}:generateContent", target.base(), target.model)
    };
    Ok(EncodedRequest {
        url,
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

fn declaration(t: &ToolSpec) -> Result<Part> {
    // A schema that is not an object declares a function without parameters.
    let rendered = t
        .parameters
        .is_object()
        .then(|| strict::rendered(&t.parameters, Adaptation::AsIs));
    encoded::part(&FunctionDeclaration {
        name: &t.name,
        description: &t.description,
        parameters_json_schema: rendered.as_deref(),
    })
}

/// The arguments as the API requires them: an object (arguments that did not parse are sent as
/// the object they encode when they do, else as an empty object).
fn args(arguments: &Value) -> Cow<'_, Value> {
    match arguments {
        Value::Object(_) => Cow::Borrowed(arguments),
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(v @ Value::Object(_)) => Cow::Owned(v),
            _ => Cow::Owned(Value::Object(Map::new())),
        },
        _ => Cow::Owned(Value::Object(Map::new())),
    }
}

fn media<'a>(mime_type: &'a str, source: &'a MediaSource) -> Payload<'a> {
    match source {
        MediaSource::Base64(data) => Payload::InlineData(Blob { mime_type, data }),
        MediaSource::Url(file_uri) => Payload::FileData(FileData {
            mime_type,
            file_uri,
        }),
    }
}

/// The data of a block that is a part of its own; `None` for thinking blocks (handled by the
/// caller) and empty texts.
fn data(b: &ContentBlock) -> Option<Payload<'_>> {
    Some(match b {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => Payload::Text(text),
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
        } => Payload::FunctionCall(FunctionCall {
            id: (!is_minted(id)).then_some(id.as_str()),
            name,
            args: args(arguments),
        }),
        ContentBlock::ToolResult {
            call_id,
            name,
            content,
            is_error,
        } => Payload::FunctionResponse(FunctionResponse {
            id: (!is_minted(call_id)).then_some(call_id.as_str()),
            name,
            response: if *is_error {
                Outcome::Error(content)
            } else {
                Outcome::Output(content)
            },
        }),
        ContentBlock::Image { media_type, source } => media(media_type, source),
        ContentBlock::File {
            media_type, source, ..
        } => media(media_type, source),
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => return None,
    })
}

/// A signature no part claimed, as the empty text part that carried it.
fn flush<'a>(pending: &mut Option<&'a str>, out: &mut Vec<WirePart<'a>>) {
    if let Some(signature) = pending.take() {
        out.push(WirePart {
            data: Payload::Text(""),
            thought: false,
            thought_signature: Some(signature),
        });
    }
}

/// The parts of one turn, signatures put back on the parts they came with.
fn parts(blocks: &[ContentBlock]) -> Vec<WirePart<'_>> {
    let mut out = Vec::with_capacity(blocks.len());
    // A signature waiting for the part it belongs to.
    let mut pending: Option<&str> = None;
    for b in blocks {
        match b {
            ContentBlock::RedactedThinking { data } => {
                // Another dialect's redacted thinking is not Gemini's to read: it is dropped.
                if let Some(signature) = untagged(data) {
                    flush(&mut pending, &mut out);
                    pending = Some(signature);
                }
            }
            ContentBlock::Thinking {
                thinking,
                signature,
            } => {
                // Another dialect's thinking (signed for that provider) is dropped too.
                if let Some(signature) = untagged(signature) {
                    flush(&mut pending, &mut out);
                    out.push(WirePart {
                        data: Payload::Text(thinking),
                        thought: true,
                        thought_signature: (!signature.is_empty()).then_some(signature),
                    });
                }
            }
            other => {
                if let Some(data) = data(other) {
                    out.push(WirePart {
                        data,
                        thought: false,
                        thought_signature: pending.take(),
                    });
                }
            }
        }
    }
    flush(&mut pending, &mut out);
    out
}

fn contents(history: &[Message]) -> Vec<Content<'_>> {
    let mut out: Vec<Content<'_>> = Vec::with_capacity(history.len());
    for m in history {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "model",
        };
        let parts = parts(&m.content);
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.parts.extend(parts),
            _ => out.push(Content { role, parts }),
        }
    }
    for c in &mut out {
        // A stable sort keeps the original order within each rank.
        c.parts.sort_by_key(WirePart::rank);
    }
    out
}
