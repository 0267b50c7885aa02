//! The cacheable prefixes of a request, per dialect: blocks and breakpoints read from an
//! Anthropic or Bedrock body, or the counted text of any other request in blocks of 128 tokens.

use std::hash::{DefaultHasher, Hasher};
use std::time::Duration;

use serde_json::{Value, json};

use super::{AUTO_INCREMENT, DEFAULT_TTL, LONG_TTL, MAX_BREAKPOINTS, Point, Prompt};
use crate::api_error::ApiError;
use crate::exchange::{Dialect, Exchange, Part, Role};
use crate::tokens::tokens_for_bytes;
use crate::{anthropic, bedrock};

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::invalid(message, None)
}

/// The cacheable prefixes of a request already decoded into `exchange`; a 400 for breakpoints
/// the provider refuses (more than four on Anthropic, an unknown type or time to live).
pub(crate) fn build(
    dialect: Dialect,
    raw: &Value,
    exchange: &Exchange,
) -> Result<Prompt, ApiError> {
    match dialect {
        Dialect::Anthropic => anthropic_blocks(raw),
        Dialect::Bedrock => bedrock_blocks(raw),
        Dialect::OpenAi | Dialect::OpenAiResponses | Dialect::Gemini => {
            let key = match dialect {
                Dialect::Gemini => None,
                _ => raw.get("prompt_cache_key").and_then(Value::as_str),
            };
            Ok(automatic(exchange, key))
        }
    }
}

/// A chain of blocks: a point at the end of each, breakpoints on some.
struct Blocks {
    hasher: DefaultHasher,
    counted: usize,
    messages: u64,
    points: Vec<Point>,
    breakpoints: Vec<(usize, Duration)>,
}

impl Blocks {
    fn new(tag: &str) -> Self {
        let mut hasher = DefaultHasher::new();
        hasher.write(tag.as_bytes());
        Self {
            hasher,
            counted: 0,
            messages: 0,
            points: Vec::new(),
            breakpoints: Vec::new(),
        }
    }

    /// Adds a block whose bytes are `identity` and whose counted text is `counted` bytes long.
    fn block(&mut self, identity: &Value, counted: usize) {
        let bytes = identity.to_string();
        self.hasher.write_usize(bytes.len());
        self.hasher.write(bytes.as_bytes());
        self.counted += counted;
        self.points.push(Point {
            hash: self.hasher.finish(),
            tokens: tokens_for_bytes(self.counted) + 3 * self.messages + 3,
        });
    }

    /// Mixes request settings into the prefix of the blocks that follow.
    fn salt(&mut self, value: &Value) {
        let bytes = value.to_string();
        self.hasher.write_usize(bytes.len());
        self.hasher.write(bytes.as_bytes());
    }

    fn message(&mut self, role: &str) {
        self.messages += 1;
        self.hasher.write_u8(0xff);
        self.hasher.write(role.as_bytes());
    }

    /// Puts a breakpoint on the last block (none when there is no block yet).
    fn mark_last(&mut self, ttl: Duration) {
        if let Some(at) = self.points.len().checked_sub(1) {
            self.breakpoints.push((at, ttl));
        }
    }

    fn finish(self) -> Prompt {
        Prompt::Explicit {
            points: self.points,
            breakpoints: self.breakpoints,
        }
    }
}

/// A block without its `cache_control`, and its breakpoint's time to live if it has one.
fn anthropic_block(block: &Value, at: &str) -> Result<(Value, Option<Duration>), ApiError> {
    let mut identity = block.clone();
    let control = identity
        .as_object_mut()
        .and_then(|o| o.remove("cache_control"));
    Ok((identity, cache_control(control.as_ref(), at)?))
}

/// Reads a `cache_control` value: `{"type":"ephemeral","ttl"?:"5m"|"1h"}`.
fn cache_control(control: Option<&Value>, at: &str) -> Result<Option<Duration>, ApiError> {
    let Some(control) = control.filter(|c| !c.is_null()) else {
        return Ok(None);
    };
    if control.get("type").and_then(Value::as_str) != Some("ephemeral") {
        return Err(invalid(format!(
            "{at}cache_control.type: Input should be 'ephemeral'"
        )));
    }
    match control.get("ttl") {
        None | Some(Value::Null) => Ok(Some(DEFAULT_TTL)),
        Some(v) if v == "5m" => Ok(Some(DEFAULT_TTL)),
        Some(v) if v == "1h" => Ok(Some(LONG_TTL)),
        Some(_) => Err(invalid(format!(
            "{at}cache_control.ttl: Input should be '5m' or '1h'"
        ))),
    }
}

/// The bytes of an Anthropic content block the token estimate counts.
fn anthropic_counted(block: &Value) -> usize {
    let str_len = |key: &str| block.get(key).and_then(Value::as_str).map_or(0, str::len);
    match block.get("type").and_then(Value::as_str).unwrap_or("") {
        "text" => str_len("text"),
        "tool_use" => str_len("name") + block.get("input").map_or(0, |i| i.to_string().len()),
        "tool_result" => anthropic::text_of(block.get("content")).len(),
        "thinking" => str_len("thinking"),
        _ => 0,
    }
}

/// Tools → system → (`tool_choice`, `thinking`) → messages, with their `cache_control`s.
fn anthropic_blocks(raw: &Value) -> Result<Prompt, ApiError> {
    let mut chain = Blocks::new("anthropic");
    let mut marks = 0usize;
    let mut note = |chain: &mut Blocks, ttl: Option<Duration>| {
        if let Some(ttl) = ttl {
            marks += 1;
            chain.mark_last(ttl);
        }
    };
    for (i, tool) in raw
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let (identity, ttl) = anthropic_block(tool, &format!("tools.{i}."))?;
        let custom = tool.get("type").and_then(Value::as_str).unwrap_or("custom") == "custom";
        let counted = if custom {
            let s = |k: &str| tool.get(k).and_then(Value::as_str).map_or(0, str::len);
            s("name")
                + s("description")
                + tool.get("input_schema").map_or(0, |v| v.to_string().len())
        } else {
            0
        };
        chain.block(&identity, counted);
        note(&mut chain, ttl);
    }
    match raw.get("system") {
        Some(Value::String(s)) => chain.block(&json!({"type": "text", "text": s}), s.len()),
        Some(Value::Array(blocks)) => {
            let mut texts = 0;
            for (i, block) in blocks.iter().enumerate() {
                let (identity, ttl) = anthropic_block(block, &format!("system.{i}."))?;
                let text = block.get("text").and_then(Value::as_str);
                let join = usize::from(text.is_some() && texts > 0);
                texts += usize::from(text.is_some());
                chain.block(&identity, text.map_or(0, str::len) + join);
                note(&mut chain, ttl);
            }
        }
        _ => {}
    }
    chain.salt(&json!([raw.get("tool_choice"), raw.get("thinking")]));
    for (m, message) in raw
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        chain.message(message.get("role").and_then(Value::as_str).unwrap_or(""));
        match message.get("content") {
            Some(Value::String(s)) => chain.block(&json!({"type": "text", "text": s}), s.len()),
            Some(Value::Array(blocks)) => {
                for (j, block) in blocks.iter().enumerate() {
                    let (identity, ttl) =
                        anthropic_block(block, &format!("messages.{m}.content.{j}."))?;
                    chain.block(&identity, anthropic_counted(block));
                    note(&mut chain, ttl);
                }
            }
            _ => {}
        }
    }
    // Automatic mode: a top-level `cache_control` marks the last block.
    let top = cache_control(raw.get("cache_control"), "")?;
    note(&mut chain, top);
    if marks > MAX_BREAKPOINTS {
        return Err(invalid(format!(
            "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {marks}."
        )));
    }
    Ok(chain.finish())
}

/// Reads a Bedrock `cachePoint`: `{"type":"default","ttl"?:"5m"|"1h"}`.
fn cache_point(point: &Value, at: &str) -> Result<Duration, ApiError> {
    if point.get("type").and_then(Value::as_str) != Some("default") {
        return Err(invalid(format!(
            "1 validation error detected: Value at '{at}.cachePoint.type' failed to satisfy constraint: Member must satisfy enum value set: [default]"
        )));
    }
    match point.get("ttl") {
        None | Some(Value::Null) => Ok(DEFAULT_TTL),
        Some(v) if v == "5m" => Ok(DEFAULT_TTL),
        Some(v) if v == "1h" => Ok(LONG_TTL),
        Some(_) => Err(invalid(format!(
            "1 validation error detected: Value at '{at}.cachePoint.ttl' failed to satisfy constraint: Member must satisfy enum value set: [5m, 1h]"
        ))),
    }
}

/// The bytes of a Bedrock content block the token estimate counts.
fn bedrock_counted(block: &Value) -> usize {
    if let Some(t) = block.get("text").and_then(Value::as_str) {
        return t.len();
    }
    if let Some(u) = block.get("toolUse") {
        return u.get("name").and_then(Value::as_str).map_or(0, str::len)
            + u.get("input").map_or(0, |i| i.to_string().len());
    }
    if let Some(r) = block.get("toolResult") {
        return bedrock::result_text(r).len();
    }
    block
        .pointer("/reasoningContent/reasoningText/text")
        .and_then(Value::as_str)
        .map_or(0, str::len)
}

/// `toolConfig.tools` → `system` → messages, with their `cachePoint` blocks.
fn bedrock_blocks(raw: &Value) -> Result<Prompt, ApiError> {
    let mut chain = Blocks::new("bedrock");
    let array = |pointer: &str| {
        raw.pointer(pointer)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    };
    for (i, tool) in array("/toolConfig/tools").iter().enumerate() {
        if let Some(point) = tool.get("cachePoint") {
            chain.mark_last(cache_point(point, &format!("toolConfig.tools.{i}"))?);
            continue;
        }
        let counted = tool.get("toolSpec").map_or(0, |spec| {
            let s = |k: &str| spec.get(k).and_then(Value::as_str).map_or(0, str::len);
            s("name")
                + s("description")
                + spec
                    .pointer("/inputSchema/json")
                    .map_or(0, |v| v.to_string().len())
        });
        chain.block(tool, counted);
    }
    let mut texts = 0;
    for (i, block) in array("/system").iter().enumerate() {
        if let Some(point) = block.get("cachePoint") {
            chain.mark_last(cache_point(point, &format!("system.{i}"))?);
            continue;
        }
        let text = block.get("text").and_then(Value::as_str);
        let join = usize::from(text.is_some() && texts > 0);
        texts += usize::from(text.is_some());
        chain.block(block, text.map_or(0, str::len) + join);
    }
    chain.salt(&json!([
        raw.pointer("/toolConfig/toolChoice"),
        raw.pointer("/additionalModelRequestFields/thinking")
    ]));
    for (m, message) in array("/messages").iter().enumerate() {
        chain.message(message.get("role").and_then(Value::as_str).unwrap_or(""));
        for (j, block) in message
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if let Some(point) = block.get("cachePoint") {
                chain.mark_last(cache_point(point, &format!("messages.{m}.content.{j}"))?);
                continue;
            }
            chain.block(block, bedrock_counted(block));
        }
    }
    Ok(chain.finish())
}

/// The counted text of a request cut into blocks of [`AUTO_INCREMENT`] tokens.
struct Stream {
    hasher: DefaultHasher,
    counted: usize,
    points: Vec<Point>,
}

/// [`AUTO_INCREMENT`] tokens in counted bytes.
const AUTO_BYTES: usize = (AUTO_INCREMENT as usize) * 4;

impl Stream {
    /// Uncounted bytes that still tell prefixes apart (roles, kinds of content).
    fn marker(&mut self, tag: &str) {
        self.hasher.write_u8(0);
        self.hasher.write(tag.as_bytes());
        self.hasher.write_u8(0);
    }

    fn text(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = AUTO_BYTES - self.counted % AUTO_BYTES;
            let take = room.min(bytes.len());
            self.hasher.write(&bytes[..take]);
            self.counted += take;
            bytes = &bytes[take..];
            if self.counted.is_multiple_of(AUTO_BYTES) {
                self.points.push(Point {
                    hash: self.hasher.finish(),
                    tokens: (self.counted / 4) as u64,
                });
            }
        }
    }
}

/// Tools → system → messages as the token estimate counts them, behind the cache key.
fn automatic(exchange: &Exchange, key: Option<&str>) -> Prompt {
    let mut stream = Stream {
        hasher: DefaultHasher::new(),
        counted: 0,
        points: Vec::new(),
    };
    stream.marker(key.unwrap_or(""));
    for tool in &exchange.tools {
        stream.marker("tool");
        stream.text(tool.name.as_bytes());
        stream.marker("description");
        stream.text(tool.description.as_bytes());
        stream.marker("schema");
        stream.text(tool.schema.to_string().as_bytes());
    }
    stream.marker("system");
    stream.text(exchange.system.as_bytes());
    for message in &exchange.messages {
        stream.marker(match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool_message",
        });
        for part in &message.parts {
            match part {
                Part::Text(t) => {
                    stream.marker("text");
                    stream.text(t.as_bytes());
                }
                Part::ToolResult(t) => {
                    stream.marker("tool_result");
                    stream.text(t.as_bytes());
                }
                Part::Thinking(t) => {
                    stream.marker("thinking");
                    stream.text(t.as_bytes());
                }
                Part::ToolCall { name, arguments } => {
                    stream.marker("tool_call");
                    stream.text(name.as_bytes());
                    stream.marker("arguments");
                    stream.text(arguments.as_bytes());
                }
            }
        }
    }
    Prompt::Automatic {
        points: stream.points,
    }
}
