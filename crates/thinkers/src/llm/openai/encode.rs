//! Render a [`ChatRequest`] as an OpenAI Chat Completions body.
//!
//! OpenAI proper gets `max_completion_tokens`, strict function tools and strict `json_schema`
//! answers (schemas adapted once, by `llm::strict`). An OpenAI-compatible server gets the
//! conservative profile: `max_tokens`, no `strict`, `tool_choice` only as a string (a named choice
//! is expressed as `required` with only that tool offered, since llama.cpp rejects the object form)
//! and the answer schema in the system prompt (local servers' `json_schema` support varies).
//! Thinking blocks are never sent: OpenAI keeps reasoning on its side.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::conversation::{ContentBlock, MediaSource, Message, Role};
use crate::llm::encoded::{DecodePlan, EncodedRequest, Header, Segments, Tracked, capacity_hint};
use crate::llm::escape::JsonStr;
use crate::llm::request::{ChatRequest, Reasoning, ToolChoice};
use crate::llm::strict::{self, Adaptation, Rendered};
use crate::llm::target::{Dialect, WireTarget};
use crate::llm::text_tools;
use crate::{Error, Result};

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum OaMessage<'a> {
    System {
        content: JsonStr<'a>,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<JsonStr<'a>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<OaToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: JsonStr<'a>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(JsonStr<'a>),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: JsonStr<'a> },
    ImageUrl { image_url: ImageUrl },
    File { file: FilePart<'a> },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Serialize)]
struct FilePart<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    filename: Option<&'a str>,
    file_data: String,
}

#[derive(Serialize)]
struct OaToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: OaFunctionCall<'a>,
}

#[derive(Serialize)]
struct OaFunctionCall<'a> {
    name: &'a str,
    arguments: ArgumentsText<'a>,
}

/// A tool call's arguments as the JSON string the wire wants: written straight into the body
/// (escaped as it is written), without rendering them to a string first.
struct ArgumentsText<'a>(&'a Value);

impl Serialize for ArgumentsText<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        match self.0 {
            // Arguments that did not parse are sent back exactly as the model wrote them.
            Value::String(raw) => serializer.serialize_str(raw),
            Value::Null => serializer.serialize_str("{}"),
            other => serializer.collect_str(other),
        }
    }
}

#[derive(Serialize)]
struct OaTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: OaFunction<'a>,
}

#[derive(Serialize)]
struct OaFunction<'a> {
    name: &'a str,
    description: JsonStr<'a>,
    parameters: Arc<Rendered>,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'a str,
    schema: Arc<Rendered>,
    strict: bool,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Tracked<'a, OaMessage<'a>>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tracked<'a, OaTool<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Tracked<'a, ResponseFormat<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<u8>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
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
    let tools_in_prompt = text_tools && offers_tools && req.tool_choice != ToolChoice::None;
    // A native answer schema would forbid the tool-call object of the text protocol.
    let schema_in_prompt = req.response.is_some() && (compat || tools_in_prompt);

    let (system, history) = text_tools::prompt_parts(req, text_tools, schema_in_prompt);
    let capacity = capacity_hint(&system, &history, req);
    let history: &[Message] = &history;

    let seg = Segments::with_capacity(history.len() + req.tools.len() + 2);
    let mut messages = Vec::with_capacity(history.len() + 1);
    if !system.is_empty() {
        messages.push(seg.track(OaMessage::System {
            content: JsonStr(system),
        }));
    }
    for m in history {
        render_message(m, &mut |om| messages.push(seg.track(om)))?;
    }

    let (tools, tool_choice) = if text_tools || !offers_tools {
        (Vec::new(), None)
    } else {
        render_tools(&seg, req, compat)
    };

    let response_format = match &req.response {
        Some(r) if !schema_in_prompt => Some(seg.track(ResponseFormat {
            kind: "json_schema",
            json_schema: JsonSchemaFormat {
                name: &r.name,
                schema: strict::rendered(&r.schema, Adaptation::OpenAiStrict),
                strict: true,
            },
        })),
        _ => None,
    };

    let reasoning_effort = match &req.reasoning {
        Reasoning::Effort(e) => Some(e.as_str()),
        Reasoning::Tokens(n) if *n > 0 && target.thinking => Some(super::effort_for_tokens(*n)),
        _ => None,
    };

    let body = Body {
        model: &target.model,
        messages,
        tools,
        tool_choice,
        response_format,
        reasoning_effort,
        max_completion_tokens: (!compat).then_some(req.max_output_tokens),
        max_tokens: compat.then_some(req.max_output_tokens),
        logprobs: req.logprobs.map(|_| true),
        top_logprobs: req.logprobs.map(|n| n.min(20)),
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
    };
    let (body, segments) = seg.write(&body, capacity)?;

    let mut headers = vec![Header::plain("content-type", "application/json")];
    if let Some(key) = &target.api_key {
        headers.push(Header::secret(
            "authorization",
            format!("Bearer {}", key.expose_secret()),
        ));
    }
    Ok(EncodedRequest {
        url: format!("{}/chat/completions", target.base()),
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

fn render_tools<'a>(
    seg: &'a Segments,
    req: &'a ChatRequest,
    compat: bool,
) -> (Vec<Tracked<'a, OaTool<'a>>>, Option<Value>) {
    let mut offered: Vec<_> = req.tools.iter().collect();
    let choice = match (&req.tool_choice, compat) {
        (ToolChoice::Auto, _) => json!("auto"),
        (ToolChoice::None, _) => json!("none"),
        (ToolChoice::Required, _) => json!("required"),
        (ToolChoice::Tool(name), false) => json!({"type": "function", "function": {"name": name}}),
        (ToolChoice::Tool(name), true) => {
            // Offer only the named tool, unless it is not among the tools at all (then the
            // choice cannot narrow anything and every tool stays).
            if offered.iter().any(|t| &t.name == name) {
                offered.retain(|t| &t.name == name);
            }
            json!("required")
        }
    };
    let tools = offered
        .into_iter()
        .map(|t| {
            seg.track(OaTool {
                kind: "function",
                function: OaFunction {
                    name: &t.name,
                    description: JsonStr::from(&*t.description),
                    parameters: strict::rendered(
                        &t.parameters,
                        if compat {
                            Adaptation::AsIs
                        } else {
                            Adaptation::OpenAiStrict
                        },
                    ),
                    strict: (!compat).then_some(true),
                },
            })
        })
        .collect();
    (tools, Some(choice))
}

fn data_url(media_type: &str, source: &MediaSource) -> String {
    match source {
        MediaSource::Url(u) => u.clone(),
        MediaSource::Base64(b) => format!("data:{media_type};base64,{b}"),
    }
}

/// Render one message as the OpenAI messages it becomes, handing each to `out`.
fn render_message<'a>(m: &'a Message, out: &mut dyn FnMut(OaMessage<'a>)) -> Result<()> {
    match m.role {
        Role::Assistant => {
            let mut text = String::new();
            let mut tool_calls = Vec::new();
            for b in &m.content {
                match b {
                    ContentBlock::Text { text: t } => text.push_str(t),
                    ContentBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    } => tool_calls.push(OaToolCall {
                        id,
                        kind: "function",
                        function: OaFunctionCall {
                            name,
                            arguments: ArgumentsText(arguments),
                        },
                    }),
                    // Reasoning stays on the provider's side; media cannot be an assistant turn.
                    _ => {}
                }
            }
            if !text.is_empty() || !tool_calls.is_empty() {
                out(OaMessage::Assistant {
                    content: (!text.is_empty()).then_some(JsonStr::from(text)),
                    tool_calls,
                });
            }
        }
        Role::User => {
            // The common case, one text, needs no list of parts.
            if let [ContentBlock::Text { text }] = m.content.as_slice() {
                out(OaMessage::User {
                    content: UserContent::Text(JsonStr::from(text.as_str())),
                });
                return Ok(());
            }
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
                    } => out(OaMessage::Tool {
                        tool_call_id: call_id,
                        content: if *is_error {
                            JsonStr::from(format!("ERROR: {content}"))
                        } else {
                            JsonStr::from(content.as_str())
                        },
                    }),
                    ContentBlock::Text { text } => parts.push(Part::Text {
                        text: JsonStr::from(text.as_str()),
                    }),
                    ContentBlock::Image { media_type, source } => parts.push(Part::ImageUrl {
                        image_url: ImageUrl {
                            url: data_url(media_type, source),
                        },
                    }),
                    ContentBlock::File {
                        media_type,
                        name,
                        source,
                    } => match source {
                        MediaSource::Base64(_) => parts.push(Part::File {
                            file: FilePart {
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
            if parts.len() == 1
                && let Some(Part::Text { text }) = parts.pop()
            {
                out(OaMessage::User {
                    content: UserContent::Text(text),
                });
            } else if !parts.is_empty() {
                out(OaMessage::User {
                    content: UserContent::Parts(parts),
                });
            }
        }
    }
    Ok(())
}
