//! What the runtime asks of a model, before any dialect renders it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::llm::message::{ContentBlock, Message};
pub use crate::tool::ToolSpec;

/// Whether and which tools the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// A requested answer shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    /// A short name for the shape (`[a-zA-Z0-9_-]`, as OpenAI requires).
    pub name: String,
    /// The JSON Schema of the answer (shared, like [`ToolSpec::parameters`]).
    pub schema: Arc<Value>,
}

/// How much the model should reason before answering.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reasoning {
    /// No explicit reasoning request.
    #[default]
    Off,
    /// A reasoning budget in tokens (Anthropic `thinking.budget_tokens`; mapped to an effort
    /// level on OpenAI).
    Tokens(u32),
    /// A provider effort level such as `low`, `medium`, `high`.
    Effort(String),
}

/// One call to a model, independent of the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The system content (the conversation's objective). Empty means none.
    pub system: String,
    /// The turns, oldest first. Shared, so a request rendered from a conversation does not copy
    /// its history (`Arc::make_mut` to change them here).
    pub messages: Arc<Vec<Message>>,
    /// The tools offered.
    pub tools: Vec<ToolSpec>,
    /// Whether and which tools must be called. Ignored when no tools are offered.
    pub tool_choice: ToolChoice,
    /// A required answer shape, if any.
    pub response: Option<ResponseSchema>,
    /// The output budget of the visible answer. On Anthropic with a thinking budget, the wire
    /// `max_tokens` is this plus the budget (thinking counts toward `max_tokens` there). With an
    /// effort level, providers count the reasoning toward this cap too, so
    /// [`super::require_seat`] sets it to the answer's budget plus the reasoning it reserves.
    pub max_output_tokens: u32,
    /// How much to reason.
    pub reasoning: Reasoning,
    /// Whether to stream the answer (server-sent events).
    pub stream: bool,
    /// Ask for token log-probabilities with this many alternatives per token (OpenAI family).
    pub logprobs: Option<u8>,
    /// The `prompt_cache_key` sent to OpenAI (Chat and Responses) when the target caches
    /// prompts: requests sharing a key and a prefix are routed to the same cache. `None` (the
    /// usual case) derives it from the request's start (`ChatRequest::derived_cache_key`), so
    /// every turn of a conversation shares one. A key set here must be as deterministic as the
    /// rest of the body (a replayed workflow must render the same bytes for the response cache
    /// to answer it) and never a secret. Other dialects ignore it.
    pub cache_key: Option<String>,
}

impl ChatRequest {
    /// A request with a system content and turns, no tools, 4,096 output tokens.
    pub fn new(system: impl Into<String>, messages: impl Into<Arc<Vec<Message>>>) -> Self {
        Self {
            system: system.into(),
            messages: messages.into(),
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            response: None,
            max_output_tokens: 4096,
            reasoning: Reasoning::Off,
            stream: false,
            logprobs: None,
            cache_key: None,
        }
    }

    /// The `prompt_cache_key` of this request: [`ChatRequest::cache_key`] when set, else
    /// `thinkers-` and the first 16 hex digits of the SHA-256 of the system content and the
    /// tools (names, descriptions, schemas): the prefix every turn of a conversation, and every
    /// run of the same agent, share. OpenAI routes requests with one key and one prefix to the
    /// same cache, so runs of one agent reuse each other's cached prefix instead of each warming
    /// its own. The parts are the request's own content, so a replay renders the same key; the
    /// hash shows nothing of them.
    pub(crate) fn derived_cache_key(&self) -> String {
        use sha2::{Digest, Sha256};
        use std::fmt::Write as _;
        if let Some(key) = &self.cache_key {
            return key.clone();
        }
        let mut h = Sha256::new();
        h.update(self.system.as_bytes());
        h.update([0]);
        for tool in &self.tools {
            h.update(tool.name.as_bytes());
            h.update([0]);
            h.update(tool.description.as_bytes());
            h.update([0]);
            h.update(tool.parameters.to_string().as_bytes());
            h.update([0]);
        }
        let digest = h.finalize();
        let mut key = String::with_capacity(9 + 16);
        key.push_str("thinkers-");
        for byte in &digest[..8] {
            let _ = write!(key, "{byte:02x}");
        }
        key
    }

    /// How many tool calls the conversation already holds (the text-tool fallback mints the
    /// next ids after them, so ids stay unique within a conversation).
    pub(crate) fn tool_calls_so_far(&self) -> usize {
        self.messages
            .iter()
            .flat_map(|m| &m.content)
            .filter(|b| matches!(b, ContentBlock::ToolCall { .. }))
            .count()
    }
}
