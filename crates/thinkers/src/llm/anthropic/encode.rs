//! Render a [`ChatRequest`] as an Anthropic Messages body.
//!
//! * Consecutive turns of one role are merged (the provider merges them anyway), so consecutive
//!   tool results travel in one user turn, ahead of any other block of that turn.
//! * An assistant turn sends its thinking and redacted-thinking blocks first, unchanged and in
//!   their order, then the rest. Thinking blocks are sent only to a target with thinking support
//!   and only when they carry a signature (reasoning decoded from other providers has none;
//!   Gemini's thoughts and signatures, tagged, are never sent).
//! * `Reasoning::Tokens(n)` on a thinking target becomes `thinking: {type: enabled,
//!   budget_tokens}` with the budget raised to at least 1,024; thinking counts toward
//!   `max_tokens`, so `max_tokens` is the answer budget plus the thinking budget (which keeps the
//!   budget below `max_tokens`, as required). A forced tool choice cannot be combined with
//!   thinking and falls back to `auto`. When the latest assistant turn called tools without a
//!   signed thinking block (another entry served it), thinking stays off for the request: the
//!   provider refuses thinking after such a turn.
//! * `Reasoning::Effort` becomes `output_config.effort`; a structured answer becomes
//!   `output_config.format` (objects closed by `llm::strict`), unless text-protocol tools are in
//!   play, in which case the schema goes into the system prompt.
//! * With prompt caching on (the default), `cache_control: {type: ephemeral}` (with `ttl: 1h`
//!   for the hour) marks the breakpoints `llm::breakpoints` places: the last tool, the system
//!   content (then sent as one text block), the last block of the previous user turn and of the
//!   last turn, at most four, none on a thinking block.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::API_VERSION;
use crate::Result;
use crate::llm::breakpoints::{Breakpoints, TurnSize};
use crate::llm::common::MIN_THINKING_BUDGET;
use crate::llm::encoded::{self, DecodePlan, EncodedRequest, Header, Part};
use crate::llm::message::{ContentBlock, MediaSource, Message, Role};
use crate::llm::request::{ChatRequest, Reasoning, ToolChoice, ToolSpec};
use crate::llm::strict::{self, Adaptation, Rendered};
use crate::llm::target::{CacheTtl, PromptCache, WireTarget};
use crate::llm::{gemini, text_tools};

/// The request body, fields in the order the Messages API documents them.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<&'a RawValue>,
    messages: &'a [Part],
    #[serde(skip_serializing_if = "<[Part]>::is_empty")]
    tools: &'a [Part],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireToolChoice<'a> {
    None,
    Auto,
    Any,
    Tool { name: &'a str },
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
struct OutputConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct Format<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    schema: &'a Rendered,
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: InputSchema<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// A breakpoint: `{"type": "ephemeral"}`, with `"ttl": "1h"` for the hour (five minutes, the
/// default, is not written).
#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

impl CacheControl {
    fn new(ttl: CacheTtl) -> Self {
        Self {
            kind: "ephemeral",
            ttl: (ttl != CacheTtl::FiveMinutes).then(|| ttl.as_str()),
        }
    }
}

/// The system content as one text block carrying a breakpoint.
#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: CacheControl,
}

/// A block of a turn, with a breakpoint after it when `cache_control` is set.
#[derive(Serialize)]
struct MarkedBlock<'a, 'b> {
    #[serde(flatten)]
    block: &'b Block<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// A turn whose last markable block carries a breakpoint.
#[derive(Serialize)]
struct MarkedTurn<'a, 'b> {
    role: &'static str,
    content: Vec<MarkedBlock<'a, 'b>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum InputSchema<'a> {
    Rendered(&'a Rendered),
    /// For a tool whose schema is not an object (the provider requires one).
    Empty(Value),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Source<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    Text {
        text: &'a str,
    },
    Image {
        source: Source<'a>,
    },
    Document {
        source: Source<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl Block<'_> {
    /// The order inside a turn: tool results lead a user turn, thinking leads an assistant turn.
    fn rank(&self) -> u8 {
        match self {
            Self::Thinking { .. } | Self::RedactedThinking { .. } | Self::ToolResult { .. } => 0,
            _ => 1,
        }
    }

    /// Whether the block may carry a breakpoint (thinking blocks may not).
    fn markable(&self) -> bool {
        !matches!(self, Self::Thinking { .. } | Self::RedactedThinking { .. })
    }
}

impl Turn<'_> {
    /// The turn with a breakpoint on its last markable block.
    fn marked(&self, mark: CacheControl) -> MarkedTurn<'_, '_> {
        let at = self.content.iter().rposition(Block::markable);
        MarkedTurn {
            role: self.role,
            content: self
                .content
                .iter()
                .enumerate()
                .map(|(i, block)| MarkedBlock {
                    block,
                    cache_control: (Some(i) == at).then_some(mark),
                })
                .collect(),
        }
    }
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// Render the request for an Anthropic target.
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

    // With thinking on, the provider wants the latest assistant turn that called tools to open
    // with a thinking block. A turn served by another entry (one without thinking) has none, so
    // this request goes without thinking rather than be refused.
    let budget = match req.reasoning {
        Reasoning::Tokens(n) if n > 0 && target.thinking && !unthought_tool_turn(history) => {
            Some(n.max(MIN_THINKING_BUDGET))
        }
        _ => None,
    };

    let mut system_part = if system.is_empty() {
        None
    } else {
        Some(encoded::part(&*system)?)
    };
    let turns = turns(history, target.thinking);
    let mut messages = turns
        .iter()
        .map(encoded::part)
        .collect::<Result<Vec<_>>>()?;

    let (mut tools, tool_choice) = if !text_tools && offers_tools {
        let tools = req
            .tools
            .iter()
            .map(|t| tool(t, None))
            .collect::<Result<Vec<_>>>()?;
        let choice = match (&req.tool_choice, budget.is_some()) {
            (ToolChoice::None, _) => WireToolChoice::None,
            // `auto` is what the API does when tools are given: it is not written.
            (ToolChoice::Auto, _) | (_, true) => WireToolChoice::Auto,
            (ToolChoice::Required, false) => WireToolChoice::Any,
            (ToolChoice::Tool(name), false) => WireToolChoice::Tool { name },
        };
        (
            tools,
            (!matches!(choice, WireToolChoice::Auto)).then_some(choice),
        )
    } else {
        (Vec::new(), None)
    };

    // The prompt-cache breakpoints (`llm::breakpoints`), in the order the prefix is read.
    if let PromptCache::On(ttl) = target.prompt_cache {
        let mark = CacheControl::new(ttl);
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
        let system_bytes = system_part.as_ref().map_or(0, |s| s.get().len());
        let at = Breakpoints::place(true, tool_bytes, system_bytes, &sizes);
        if at.tools
            && let (Some(last), Some(spec)) = (tools.last_mut(), req.tools.last())
        {
            *last = tool(spec, Some(mark))?;
        }
        if at.system {
            system_part = Some(encoded::part(&[SystemBlock {
                kind: "text",
                text: &system,
                cache_control: mark,
            }])?);
        }
        for &i in &at.turns {
            messages[i] = encoded::part(&turns[i].marked(mark))?;
        }
    }

    let effort = match &req.reasoning {
        Reasoning::Effort(e) => Some(e.as_str()),
        _ => None,
    };
    let format = match req.response.as_ref().filter(|_| !schema_in_prompt) {
        Some(r) => Some(encoded::part(&Format {
            kind: "json_schema",
            schema: &strict::rendered(&r.schema, Adaptation::ClosedObjects),
        })?),
        None => None,
    };
    let output_config = (effort.is_some() || format.is_some()).then_some(OutputConfig {
        effort,
        format: format.as_deref(),
    });

    let body = Body {
        model: &target.model,
        max_tokens: req.max_output_tokens.saturating_add(budget.unwrap_or(0)),
        system: system_part.as_deref(),
        messages: &messages,
        tools: &tools,
        tool_choice,
        thinking: budget.map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        }),
        output_config,
        stream: stream.then_some(true),
    };
    let body = encoded::finish(&body)?;

    let mut headers = Vec::with_capacity(3);
    headers.push(Header::plain("content-type", "application/json"));
    headers.push(Header::plain("anthropic-version", API_VERSION));
    if let Some(key) = &target.api_key {
        headers.push(Header::secret("x-api-key", key.expose_secret().to_owned()));
    }
    Ok(EncodedRequest {
        url: format!("{}/v1/messages", target.base()),
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

fn tool(t: &ToolSpec, cache_control: Option<CacheControl>) -> Result<Part> {
    let rendered;
    let input_schema = if t.parameters.is_object() {
        rendered = strict::rendered(&t.parameters, Adaptation::AsIs);
        InputSchema::Rendered(&rendered)
    } else {
        InputSchema::Empty(json!({"type": "object", "properties": {}}))
    };
    encoded::part(&WireTool {
        name: &t.name,
        description: &t.description,
        input_schema,
        cache_control,
    })
}

fn source<'a>(media_type: &'a str, s: &'a MediaSource) -> Source<'a> {
    match s {
        MediaSource::Base64(data) => Source::Base64 { media_type, data },
        MediaSource::Url(url) => Source::Url { url },
    }
}

fn tool_input(arguments: &Value) -> Cow<'_, Value> {
    match arguments {
        Value::Object(_) => Cow::Borrowed(arguments),
        // The provider requires an object; arguments that did not parse are sent as the object
        // they encode when they do, else as an empty object.
        Value::String(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(v @ Value::Object(_)) => Cow::Owned(v),
            _ => Cow::Owned(json!({})),
        },
        _ => Cow::Owned(json!({})),
    }
}

fn block<'a>(b: &'a ContentBlock, thinking: bool) -> Option<Block<'a>> {
    Some(match b {
        ContentBlock::Text { text } if text.is_empty() => return None,
        ContentBlock::Text { text } => Block::Text { text },
        ContentBlock::Thinking {
            thinking: t,
            signature,
        } if thinking && anthropic_signature(signature) => Block::Thinking {
            thinking: t,
            signature,
        },
        ContentBlock::RedactedThinking { data } if thinking && !gemini::is_gemini(data) => {
            Block::RedactedThinking { data }
        }
        ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => return None,
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
        } => Block::ToolUse {
            id,
            name,
            input: tool_input(arguments),
        },
        ContentBlock::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => Block::ToolResult {
            tool_use_id: call_id,
            content,
            is_error: *is_error,
        },
        ContentBlock::Image {
            media_type,
            source: s,
        } => Block::Image {
            source: source(media_type, s),
        },
        ContentBlock::File {
            media_type,
            name,
            source: s,
        } => Block::Document {
            source: source(media_type, s),
            title: name.as_deref(),
        },
    })
}

/// Whether a thinking block's signature is one this provider made: not empty, not an OpenAI
/// Responses reasoning item and not a Gemini thought signature carried in the same field.
fn anthropic_signature(signature: &str) -> bool {
    !signature.is_empty()
        && !crate::llm::common::reasoning_item(signature)
        && !gemini::is_gemini(signature)
}

/// Whether the latest assistant turn called tools without a (signed) thinking block.
fn unthought_tool_turn(history: &[Message]) -> bool {
    let Some(last) = history.iter().rev().find(|m| m.role == Role::Assistant) else {
        return false;
    };
    let calls = last
        .content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall { .. }));
    let thought = last.content.iter().any(|b| match b {
        ContentBlock::Thinking { signature, .. } => anthropic_signature(signature),
        ContentBlock::RedactedThinking { data } => !gemini::is_gemini(data),
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
