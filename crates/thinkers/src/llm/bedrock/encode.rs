//! Render a [`ChatRequest`] as a Bedrock Converse body.
//!
//! * Consecutive turns of one role are merged (Converse wants the roles to alternate), so
//!   consecutive tool results travel in one user turn, ahead of any other block of that turn.
//!   Empty texts are left out (Converse refuses a blank `text`).
//! * An assistant turn sends its reasoning blocks first, unchanged and in their order, then the
//!   rest. Reasoning is sent only to a target with thinking support and only with its signature
//!   (reasoning decoded from other providers has none); redacted reasoning goes back as the
//!   `redactedContent` it came as.
//! * A tool result whose text is a JSON object goes as a `json` block, anything else as `text`;
//!   `status` is written only for a failed call (`error`), since only some models read it.
//! * `Reasoning::Tokens(n)` on a thinking target becomes `additionalModelRequestFields.thinking`
//!   (the Anthropic-on-Bedrock form), with the budget raised to at least 1,024 and `maxTokens`
//!   the answer budget plus the thinking budget; a forced tool choice falls back to `auto` with
//!   it, and after a tool turn served without reasoning it stays off, as for Anthropic.
//!   `Reasoning::Effort` becomes `outputConfig.effort`.
//! * A structured answer becomes `outputConfig.textFormat` (`json_schema`, the schema as JSON
//!   text, objects closed by `llm::strict`), unless text-protocol tools are in play, in which
//!   case the schema goes into the system prompt.
//! * Converse has no `none` tool choice: with [`ToolChoice::None`] the tools are left out, unless
//!   the history holds tool blocks (Converse then requires `toolConfig`), in which case they are
//!   offered with the default `auto`.
//! * With prompt caching on (the default), a Claude or Nova model (`model::BedrockCaching`: the
//!   model id holds `anthropic.claude` or `amazon.nova`) gets `{"cachePoint": {"type":
//!   "default"}}` blocks where `llm::breakpoints` places them: after the system text, after the
//!   tools (Claude only), at the end of the previous user turn and of the last turn; at most
//!   four. Other models get none.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::Result;
use crate::llm::breakpoints::{Breakpoints, TurnSize};
use crate::llm::common::MIN_THINKING_BUDGET;
use crate::llm::encoded::{self, DecodePlan, EncodedRequest, Header, Part};
use crate::llm::message::{ContentBlock, MediaSource, Message, Role};
use crate::llm::request::{ChatRequest, Reasoning, ToolChoice, ToolSpec};
use crate::llm::strict::{self, Adaptation, Rendered};
use crate::llm::target::WireTarget;
use crate::llm::text_tools;
use crate::model::BedrockCaching;

/// The request body, fields in the order the Converse API documents them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    messages: &'a [Part],
    #[serde(skip_serializing_if = "<[SystemText<'_>]>::is_empty")]
    system: &'a [SystemText<'a>],
    inference_config: InferenceConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_model_request_fields: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
}

/// A `system` block: a union, the text or a checkpoint after it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum SystemText<'a> {
    Text(&'a str),
    CachePoint(CachePoint),
}

/// A prompt-cache checkpoint: `{"cachePoint": {"type": "default"}}` as a block of `system`,
/// `toolConfig.tools` or a message's content.
#[derive(Serialize, Clone, Copy)]
struct CachePoint {
    #[serde(rename = "type")]
    kind: &'static str,
}

const CACHE_POINT: CachePoint = CachePoint { kind: "default" };

/// A `toolConfig.tools` member that is a checkpoint.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolCachePoint {
    cache_point: CachePoint,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InferenceConfig {
    max_tokens: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig<'a> {
    tools: &'a [Part],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum WireToolChoice<'a> {
    Any {},
    Tool { name: &'a str },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OutputConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text_format: Option<TextFormat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'a str>,
}

#[derive(Serialize)]
struct TextFormat {
    #[serde(rename = "type")]
    kind: &'static str,
    structure: Structure,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Structure {
    json_schema: JsonSchemaDefinition,
}

#[derive(Serialize)]
struct JsonSchemaDefinition {
    /// The schema as JSON text (Converse takes a string here).
    schema: String,
    name: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WireTool<'a> {
    tool_spec: ToolSpecification<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolSpecification<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    description: &'a str,
    input_schema: InputSchema<'a>,
}

#[derive(Serialize)]
struct InputSchema<'a> {
    json: SchemaJson<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum SchemaJson<'a> {
    Rendered(&'a Rendered),
    /// For a tool whose schema is not an object (Converse requires one).
    Empty(Value),
}

/// One content block: a union, so exactly one member is written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Block<'a> {
    ReasoningContent(ReasoningBlock<'a>),
    Text(&'a str),
    Image(Media<'a>),
    Document(Document<'a>),
    ToolUse(ToolUse<'a>),
    ToolResult(ToolResult<'a>),
    CachePoint(CachePoint),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum ReasoningBlock<'a> {
    ReasoningText { text: &'a str, signature: &'a str },
    RedactedContent(&'a str),
}

#[derive(Serialize)]
struct Media<'a> {
    format: &'a str,
    source: Bytes<'a>,
}

#[derive(Serialize)]
struct Document<'a> {
    format: &'a str,
    name: Cow<'a, str>,
    source: Bytes<'a>,
}

#[derive(Serialize)]
struct Bytes<'a> {
    bytes: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolUse<'a> {
    tool_use_id: &'a str,
    name: &'a str,
    input: Cow<'a, Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolResult<'a> {
    tool_use_id: &'a str,
    content: [ResultContent<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum ResultContent<'a> {
    Json(Map<String, Value>),
    Text(&'a str),
}

impl Block<'_> {
    /// The order inside a turn: tool results lead a user turn, reasoning leads an assistant turn.
    fn rank(&self) -> u8 {
        match self {
            Self::ReasoningContent(_) | Self::ToolResult(_) => 0,
            _ => 1,
        }
    }

    /// Whether a checkpoint may follow the block (not reasoning).
    fn markable(&self) -> bool {
        !matches!(self, Self::ReasoningContent(_))
    }
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// Render the request for a Bedrock Converse target.
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

    let budget = match req.reasoning {
        Reasoning::Tokens(n) if n > 0 && target.thinking && !unthought_tool_turn(history) => {
            Some(n.max(MIN_THINKING_BUDGET))
        }
        _ => None,
    };

    let system_bytes = system.len();
    let mut system = if system.is_empty() {
        Vec::new()
    } else {
        vec![SystemText::Text(&system)]
    };
    let mut turns = turns(history, target.thinking);
    let mut messages = turns
        .iter()
        .map(encoded::part)
        .collect::<Result<Vec<_>>>()?;

    let history_has_tools = history.iter().flat_map(|m| &m.content).any(|b| {
        matches!(
            b,
            ContentBlock::ToolCall { .. } | ContentBlock::ToolResult { .. }
        )
    });
    let send_tools =
        !text_tools && offers_tools && (req.tool_choice != ToolChoice::None || history_has_tools);
    let mut tools = if send_tools {
        req.tools.iter().map(tool).collect::<Result<Vec<_>>>()?
    } else {
        Vec::new()
    };

    // Prompt-cache checkpoints (`llm::breakpoints`), for the models that take them.
    let caching = BedrockCaching::of(&target.model);
    if target.prompt_cache.is_on() && caching != BedrockCaching::None {
        let sizes: Vec<TurnSize> = turns
            .iter()
            .zip(&messages)
            .map(|(t, part)| TurnSize {
                bytes: part.get().len(),
                user: t.role == "user",
                markable: t.content.iter().any(Block::markable),
            })
            .collect();
        let tool_bytes = tools.iter().map(|t| t.get().len()).sum();
        let mut at = Breakpoints::place(true, tool_bytes, system_bytes, &sizes);
        // Nova takes no checkpoint among its tools.
        at.tools &= caching == BedrockCaching::Claude;
        if at.tools {
            tools.push(encoded::part(&ToolCachePoint {
                cache_point: CACHE_POINT,
            })?);
        }
        if at.system {
            system.push(SystemText::CachePoint(CACHE_POINT));
        }
        for &i in &at.turns {
            turns[i].content.push(Block::CachePoint(CACHE_POINT));
            messages[i] = encoded::part(&turns[i])?;
        }
    }
    let tool_config = send_tools.then(|| ToolConfig {
        tools: &tools,
        // `auto` is what Converse does when tools are given: it is not written.
        tool_choice: match (&req.tool_choice, budget.is_some()) {
            (ToolChoice::Required, false) => Some(WireToolChoice::Any {}),
            (ToolChoice::Tool(name), false) => Some(WireToolChoice::Tool { name }),
            _ => None,
        },
    });

    let effort = match &req.reasoning {
        Reasoning::Effort(e) => Some(e.as_str()),
        _ => None,
    };
    let text_format = match req.response.as_ref().filter(|_| !schema_in_prompt) {
        Some(r) => Some(TextFormat {
            kind: "json_schema",
            structure: Structure {
                json_schema: JsonSchemaDefinition {
                    schema: schema_text(&r.schema)?,
                    name: r.name.clone(),
                },
            },
        }),
        None => None,
    };
    let output_config = (effort.is_some() || text_format.is_some()).then_some(OutputConfig {
        text_format,
        effort,
    });

    let body = Body {
        messages: &messages,
        system: &system,
        inference_config: InferenceConfig {
            max_tokens: req.max_output_tokens.saturating_add(budget.unwrap_or(0)),
        },
        tool_config,
        additional_model_request_fields: budget
            .map(|n| json!({"thinking": {"type": "enabled", "budget_tokens": n}})),
        output_config,
    };
    let body = encoded::finish(&body)?;

    let mut headers = Vec::with_capacity(2);
    headers.push(Header::plain("content-type", "application/json"));
    // A Bedrock API key, when the provider names one, is a bearer token; otherwise the request
    // is signed with the AWS credentials when it is sent.
    if let Some(key) = &target.api_key {
        headers.push(Header::secret(
            "authorization",
            format!("Bearer {}", key.expose_secret()),
        ));
    } else if let Some(signing) = &target.aws {
        headers.push(Header::aws_sigv4(Arc::clone(signing)));
    }
    Ok(EncodedRequest {
        url: super::endpoint(target.base(), &target.model, stream),
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

/// The answer schema as the JSON text `jsonSchema.schema` carries.
fn schema_text(schema: &Arc<Value>) -> Result<String> {
    let rendered = strict::rendered(schema, Adaptation::ClosedObjects);
    serde_json::to_string(&*rendered).map_err(|e| {
        crate::Error::system(
            "llm request encoding",
            "the answer schema did not serialize",
        )
        .with_source(e)
    })
}

fn tool(t: &ToolSpec) -> Result<Part> {
    let rendered;
    let json = if t.parameters.is_object() {
        rendered = strict::rendered(&t.parameters, Adaptation::AsIs);
        SchemaJson::Rendered(&rendered)
    } else {
        SchemaJson::Empty(json!({"type": "object", "properties": {}}))
    };
    encoded::part(&WireTool {
        tool_spec: ToolSpecification {
            name: &t.name,
            description: &t.description,
            input_schema: InputSchema { json },
        },
    })
}

fn tool_input(arguments: &Value) -> Cow<'_, Value> {
    match arguments {
        Value::Object(_) => Cow::Borrowed(arguments),
        // Converse requires an object; arguments that did not parse are sent as the object they
        // encode when they do, else as an empty object.
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(v @ Value::Object(_)) => Cow::Owned(v),
            _ => Cow::Owned(json!({})),
        },
        _ => Cow::Owned(json!({})),
    }
}

/// The format name Converse wants from a media type (`image/png` → `png`).
fn format_of(media_type: &str) -> &str {
    media_type.rsplit('/').next().unwrap_or(media_type)
}

fn block<'a>(b: &'a ContentBlock, thinking: bool) -> Option<Block<'a>> {
    Some(match b {
        ContentBlock::Text { text } if text.trim().is_empty() => return None,
        ContentBlock::Text { text } => Block::Text(text),
        ContentBlock::Thinking {
            thinking: t,
            signature,
        } if thinking && !signature.is_empty() => {
            Block::ReasoningContent(ReasoningBlock::ReasoningText { text: t, signature })
        }
        ContentBlock::RedactedThinking { data } if thinking => {
            Block::ReasoningContent(ReasoningBlock::RedactedContent(data))
        }
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => return None,
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
        } => Block::ToolUse(ToolUse {
            tool_use_id: id,
            name,
            input: tool_input(arguments),
        }),
        ContentBlock::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => Block::ToolResult(ToolResult {
            tool_use_id: call_id,
            content: [match serde_json::from_str::<Value>(content) {
                Ok(Value::Object(object)) => ResultContent::Json(object),
                _ => ResultContent::Text(content),
            }],
            status: is_error.then_some("error"),
        }),
        ContentBlock::Image {
            media_type,
            source: MediaSource::Base64(data),
        } => Block::Image(Media {
            format: format_of(media_type),
            source: Bytes { bytes: data },
        }),
        ContentBlock::File {
            media_type,
            name,
            source: MediaSource::Base64(data),
        } => Block::Document(Document {
            format: format_of(media_type),
            name: name
                .as_deref()
                .map_or(Cow::Borrowed("document"), document_name),
            source: Bytes { bytes: data },
        }),
        // Converse reads media by value or from S3 only: a URL is named in text instead.
        ContentBlock::Image {
            source: MediaSource::Url(url),
            ..
        }
        | ContentBlock::File {
            source: MediaSource::Url(url),
            ..
        } => Block::Text(url),
    })
}

/// A document name as Converse admits it: letters, digits, single spaces, hyphens, parentheses
/// and square brackets.
fn document_name(name: &str) -> Cow<'_, str> {
    let ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '(' | ')' | '[' | ']');
    if name.chars().all(ok) && !name.contains("  ") {
        return Cow::Borrowed(name);
    }
    let cleaned: String = name.chars().map(|c| if ok(c) { c } else { ' ' }).collect();
    Cow::Owned(cleaned.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Whether the latest assistant turn called tools without a (signed) reasoning block.
fn unthought_tool_turn(history: &[Message]) -> bool {
    let Some(last) = history.iter().rev().find(|m| m.role == Role::Assistant) else {
        return false;
    };
    let calls = last
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall { .. }));
    let thought = last.content.iter().any(|b| match b {
        ContentBlock::Thinking { signature, .. } => !signature.is_empty(),
        ContentBlock::RedactedThinking { .. } => true,
        _ => false,
    });
    calls && !thought
}

fn turns(history: &[Message], thinking: bool) -> Vec<Turn<'_>> {
    let mut out: Vec<Turn<'_>> = Vec::with_capacity(history.len());
    for m in history {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        let blocks: Vec<Block<'_>> = m
            .content
            .iter()
            .filter_map(|b| block(b, thinking))
            .collect();
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(Turn {
                role,
                content: blocks,
            }),
        }
    }
    for t in &mut out {
        // A stable sort keeps the original order within each rank.
        t.content.sort_by_key(Block::rank);
    }
    out
}
