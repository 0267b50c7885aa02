//! Render a [`ChatRequest`] as an OpenAI Chat Completions body.
//!
//! OpenAI proper gets `max_completion_tokens`, strict function tools and strict `json_schema`
//! answers (schemas adapted once, by `llm::strict`). An OpenAI-compatible server gets the
//! conservative profile: `max_tokens`, no `strict`, `tool_choice` only as a string (a named choice
//! is expressed as `required` with only that tool offered, since llama.cpp rejects the object form)
//! and the answer schema the way the provider's `structured_output` setting says (see
//! [`StructuredOutput`]). Thinking blocks are never sent: OpenAI keeps reasoning on its side.
//!
//! An assistant turn that calls tools always carries `content`: `null` for OpenAI (documented),
//! `""` for compatible servers (llama.cpp-family chat templates fail without the key, and
//! llama-cpp-python's server refuses `null`).
//!
//! OpenAI caches prompt prefixes on its own; with prompt caching on (the default) OpenAI proper
//! also gets a `prompt_cache_key` ([`ChatRequest::derived_cache_key`], one per system content
//! and tools), so every turn, and every run of the same agent, is routed to the cache the earlier
//! ones filled; a request too short to be cached carries no derived key
//! (`encoded::may_be_cached`). Nothing
//! that changes from turn to turn is put before the conversation: the system message is the
//! request's system content (and the text-tool protocol's fixed instructions).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::llm::encoded::{self, DecodePlan, EncodedRequest, Header, Part};
use crate::llm::message::{ContentBlock, MediaSource, Message, Role};
use crate::llm::request::{ChatRequest, Reasoning, ToolChoice, ToolSpec};
use crate::llm::strict::{self, Adaptation, Rendered};
use crate::llm::target::{Dialect, StructuredOutput, WireTarget};
use crate::llm::text_tools;
use crate::{Error, Result};

/// The request body, fields in the order the wire format's documentation lists them.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: &'a [Part],
    #[serde(skip_serializing_if = "<[Part]>::is_empty")]
    tools: &'a [Part],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// Always written (see the module docs); `None` is `null`.
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<UserPart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum UserPart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
    File { file: FileData<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    url: Cow<'a, str>,
}

#[derive(Serialize)]
struct FileData<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    filename: Option<&'a str>,
    file_data: Cow<'a, str>,
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionCall<'a>,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    /// The arguments as JSON text, as the wire format carries them.
    arguments: Cow<'a, str>,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionDef<'a>,
}

#[derive(Serialize)]
struct FunctionDef<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Rendered,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum WireToolChoice<'a> {
    Mode(&'static str),
    Named {
        #[serde(rename = "type")]
        kind: &'static str,
        function: Named<'a>,
    },
}

#[derive(Serialize)]
struct Named<'a> {
    name: &'a str,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ResponseFormat<'a> {
    JsonSchema {
        json_schema: JsonSchemaFormat<'a>,
    },
    /// llama-cpp-python's form: JSON mode constrained to the attached schema.
    JsonObject {
        schema: &'a Rendered,
    },
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'a str,
    schema: &'a Rendered,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

/// Where a requested answer schema goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AnswerFormat {
    /// No schema was asked for.
    None,
    /// In the system prompt.
    Prompt,
    /// As `response_format` in the given form.
    Native(StructuredOutput),
}

/// Where the answer schema of `req` goes on `target`. A compatible server that could call a tool
/// in its answer gets the schema in the prompt: decoding constrained to the schema could not
/// produce a tool call. On OpenAI proper only the text tool protocol needs the prompt (a native
/// schema would forbid its tool-call object).
fn answer_format(target: &WireTarget, req: &ChatRequest, tools_in_prompt: bool) -> AnswerFormat {
    if req.response.is_none() {
        return AnswerFormat::None;
    }
    if target.dialect != Dialect::OpenAiCompatible {
        return if tools_in_prompt {
            AnswerFormat::Prompt
        } else {
            AnswerFormat::Native(StructuredOutput::JsonSchema)
        };
    }
    let may_call_tools = !req.tools.is_empty() && req.tool_choice != ToolChoice::None;
    match target.structured_output {
        StructuredOutput::Prompt => AnswerFormat::Prompt,
        _ if may_call_tools => AnswerFormat::Prompt,
        native => AnswerFormat::Native(native),
    }
}

/// Render the request for an OpenAI or OpenAI-compatible target.
pub(crate) fn encode(
    target: &WireTarget,
    req: &ChatRequest,
    stream: bool,
) -> Result<EncodedRequest> {
    let compat = target.dialect == Dialect::OpenAiCompatible;
    let text_tools = !target.native_tools;
    let offers_tools = !req.tools.is_empty();
    let may_call_tools = offers_tools && req.tool_choice != ToolChoice::None;
    let tools_in_prompt = text_tools && may_call_tools;
    let format = answer_format(target, req, tools_in_prompt);
    // A compatible server that cannot stream a tool call (llama-cpp-python ends such a stream
    // empty) is asked for the whole answer; the client hands it to the reader at once.
    let asked_whole = compat && !target.stream_tools && !text_tools && may_call_tools;
    let stream = stream && !asked_whole;

    let (system, history) =
        text_tools::prompt_parts(req, text_tools, format == AnswerFormat::Prompt);

    let mut messages = Vec::with_capacity(history.len() + 1);
    if !system.is_empty() {
        messages.push(encoded::part(&WireMessage::System { content: &system })?);
    }
    for m in history.iter() {
        push_messages(&mut messages, m, compat)?;
    }

    let (tools, tool_choice) = if !text_tools && offers_tools {
        tools(req, compat)?
    } else {
        (Vec::new(), None)
    };

    let response_format = match (&req.response, format) {
        (Some(r), AnswerFormat::Native(kind)) => {
            // OpenAI proper gets the strict form; a compatible server the schema as it is.
            let adaptation = if compat {
                Adaptation::AsIs
            } else {
                Adaptation::OpenAiStrict
            };
            let schema = strict::rendered(&r.schema, adaptation);
            let wire = match kind {
                StructuredOutput::JsonObject => ResponseFormat::JsonObject { schema: &schema },
                StructuredOutput::JsonSchema | StructuredOutput::Prompt => {
                    ResponseFormat::JsonSchema {
                        json_schema: JsonSchemaFormat {
                            name: &r.name,
                            schema: &schema,
                            strict: (!compat).then_some(true),
                        },
                    }
                }
            };
            Some(encoded::part(&wire)?)
        }
        _ => None,
    };

    let reasoning_effort = match &req.reasoning {
        Reasoning::Effort(e) => Some(e.as_str()),
        Reasoning::Tokens(n) if *n > 0 && target.thinking => {
            Some(crate::llm::common::effort_for_tokens(*n))
        }
        _ => None,
    };
    // OpenAI proper routes requests with one key and one prefix to the same cache; a compatible
    // server gets no key (its caching, if any, is its own, and a strict one refuses the field).
    let cache_key = (!compat && target.prompt_cache.is_on()).then(|| req.derived_cache_key());
    let body = Body {
        model: &target.model,
        messages: &messages,
        tools: &tools,
        tool_choice,
        response_format: response_format.as_deref(),
        reasoning_effort,
        max_tokens: compat.then_some(req.max_output_tokens),
        max_completion_tokens: (!compat).then_some(req.max_output_tokens),
        logprobs: req.logprobs.map(|_| true),
        top_logprobs: req.logprobs.map(|n| n.min(20)),
        stream: stream.then_some(true),
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
        prompt_cache_key: cache_key
            .as_deref()
            .filter(|_| encoded::may_be_cached(req, &system, &history)),
    };
    let body = encoded::finish(&body)?;

    let mut headers = Vec::with_capacity(2);
    headers.push(Header::plain("content-type", "application/json"));
    headers.extend(target.openai_auth());
    Ok(EncodedRequest {
        url: target.openai_url("chat/completions"),
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

/// The `tools` (each a stable part) and `tool_choice` fields.
fn tools<'a>(
    req: &'a ChatRequest,
    compat: bool,
) -> Result<(Vec<Part>, Option<WireToolChoice<'a>>)> {
    // Every tool, or only the one a compatible server is told to call.
    let mut only = None;
    let choice = match (&req.tool_choice, compat) {
        (ToolChoice::Auto, _) => WireToolChoice::Mode("auto"),
        (ToolChoice::None, _) => WireToolChoice::Mode("none"),
        (ToolChoice::Required, _) => WireToolChoice::Mode("required"),
        (ToolChoice::Tool(name), false) => WireToolChoice::Named {
            kind: "function",
            function: Named { name },
        },
        (ToolChoice::Tool(name), true) => {
            // Offer only the named tool, unless it is not among the tools at all (then the
            // choice cannot narrow anything and every tool stays).
            if req.tools.iter().any(|t| &t.name == name) {
                only = Some(name);
            }
            WireToolChoice::Mode("required")
        }
    };
    let adaptation = if compat {
        Adaptation::AsIs
    } else {
        Adaptation::OpenAiStrict
    };
    let tools = req
        .tools
        .iter()
        .filter(|t| only.is_none_or(|name| &t.name == name))
        .map(|t| tool(t, adaptation, compat))
        .collect::<Result<Vec<_>>>()?;
    // `auto` is what OpenAI does when tools are given, so it is not written to OpenAI. A
    // compatible server is told: llama-cpp-python's `chatml-function-calling` offers no tool
    // without it.
    let written = compat || !matches!(choice, WireToolChoice::Mode("auto"));
    Ok((tools, written.then_some(choice)))
}

fn tool(t: &ToolSpec, adaptation: Adaptation, compat: bool) -> Result<Part> {
    encoded::part(&WireTool {
        kind: "function",
        function: FunctionDef {
            name: &t.name,
            description: &t.description,
            parameters: &strict::rendered(&t.parameters, adaptation),
            strict: (!compat).then_some(true),
        },
    })
}

fn data_url<'a>(media_type: &str, source: &'a MediaSource) -> Cow<'a, str> {
    match source {
        MediaSource::Url(u) => Cow::Borrowed(u),
        MediaSource::Base64(b) => Cow::Owned(format!("data:{media_type};base64,{b}")),
    }
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

/// Push the OpenAI messages one message becomes, each a stable part of the body.
fn push_messages(out: &mut Vec<Part>, m: &Message, compat: bool) -> Result<()> {
    match m.role {
        Role::Assistant => {
            let mut text: Option<Cow<'_, str>> = None;
            let mut tool_calls = Vec::new();
            for b in &m.content {
                match b {
                    ContentBlock::Text { text: t } => match &mut text {
                        None => text = Some(Cow::Borrowed(t)),
                        Some(all) => all.to_mut().push_str(t),
                    },
                    ContentBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    } => tool_calls.push(WireToolCall {
                        id,
                        kind: "function",
                        function: FunctionCall {
                            name,
                            arguments: arguments_text(arguments)?,
                        },
                    }),
                    // Reasoning stays on the provider's side; media cannot be an assistant turn.
                    _ => {}
                }
            }
            let text = text.filter(|t| !t.is_empty());
            if text.is_none() && tool_calls.is_empty() {
                return Ok(());
            }
            let content = match text {
                Some(text) => Some(text),
                None if compat => Some(Cow::Borrowed("")),
                None => None,
            };
            out.push(encoded::part(&WireMessage::Assistant {
                content,
                tool_calls,
            })?);
        }
        Role::User => {
            // Tool results answer the previous assistant turn, so they come first, one message
            // each; whatever else the turn holds follows as one user message.
            let mut parts = Vec::new();
            for b in &m.content {
                match b {
                    ContentBlock::ToolResult {
                        call_id,
                        content,
                        is_error,
                        ..
                    } => {
                        let content = if *is_error {
                            Cow::Owned(format!("ERROR: {content}"))
                        } else {
                            Cow::Borrowed(content.as_str())
                        };
                        out.push(encoded::part(&WireMessage::Tool {
                            tool_call_id: call_id,
                            content,
                        })?);
                    }
                    ContentBlock::Text { text } => parts.push(UserPart::Text { text }),
                    ContentBlock::Image { media_type, source } => parts.push(UserPart::ImageUrl {
                        image_url: ImageUrl {
                            url: data_url(media_type, source),
                        },
                    }),
                    ContentBlock::File {
                        media_type,
                        name,
                        source,
                    } => match source {
                        MediaSource::Base64(_) => parts.push(UserPart::File {
                            file: FileData {
                                filename: name.as_deref(),
                                file_data: data_url(media_type, source),
                            },
                        }),
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
            if parts.is_empty() {
                return Ok(());
            }
            // The common case, one text, needs no list of parts.
            let content = if let [UserPart::Text { text }] = parts[..] {
                UserContent::Text(text)
            } else {
                UserContent::Parts(parts)
            };
            out.push(encoded::part(&WireMessage::User { content })?);
        }
    }
    Ok(())
}
