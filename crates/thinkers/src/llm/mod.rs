//! Talking to model providers.
//!
//! A [`ChatRequest`] (provider-agnostic: system content, [`crate::llm::message::Message`]s, tools,
//! an answer shape, budgets) is rendered for a [`WireTarget`] by its dialect into an
//! [`EncodedRequest`] — the exact bytes — which [`ModelClient`] sends; the answer comes back as a
//! [`ChatResponse`] of the same shape whichever dialect ran.
//!
//! Dialects (only these modules know provider wire JSON):
//!
//! * OpenAI Chat Completions (`openai`), strict tools and answers;
//! * OpenAI-compatible servers — Ollama, vLLM, llama.cpp — through the same module with a
//!   conservative profile and lenient decoding;
//! * Anthropic Messages (`anthropic`), with thinking blocks kept verbatim;
//! * OpenAI Responses (`responses`), with reasoning items kept verbatim, also on Azure OpenAI;
//! * Google Gemini `generateContent` (`gemini`), with thought parts and thought signatures kept
//!   verbatim;
//! * Amazon Bedrock Converse (`bedrock`), requests signed with AWS Signature Version 4 and
//!   streams read from AWS event-stream frames;
//! * the text-based tool protocol (`text_tools`) layered on any of them for models without
//!   native tools: tools in the system prompt, JSON tool calls in the reply, ids minted by the
//!   runtime.
//!
//! Provider schema constraints are handled in one place (the crate-internal `strict` module); provider failures map onto
//! the error hierarchy in one place (`errors`); token counting for reservations lives in
//! [`tokens`].

mod anthropic;
mod bedrock;
mod breakpoints;
pub(crate) mod cache;
mod cached_prefix;
pub(crate) mod call;
pub(crate) mod client;
mod client_builder;
mod codec;
mod common;
pub(crate) mod correction;
pub(crate) mod encoded;
mod errors;
mod failed;
mod gemini;
mod headers;
mod http;
pub(crate) mod message;
mod negotiate;
mod openai;
mod redact;
pub(crate) mod request;
pub(crate) mod response;
mod responses;
mod seat_tokens;
mod services;
pub(crate) mod shape;
pub(crate) mod strict;
pub(crate) mod target;
mod text_tools;
pub mod tokens;

/// The providers' wire formats byte for byte, for tools that need what a call sends or must read
/// a captured answer: [`wire::encode`] renders the exact request of a target, [`wire::decode`]
/// reads a whole body and [`wire::StreamDecoder`] an event stream, as the runtime does. Programs
/// that call models never need them.
pub mod wire {
    pub use super::codec::{StreamDecoder, decode, encode};
}

#[cfg(test)]
mod tests;

pub use bedrock::AwsSigning;
pub use cache::{CacheKey, CacheUse, ResponseCache, ResponseCacheService};
pub use call::{BoundSeat, DeltaSink, LlmCall, LlmOutcome, converse_bound, require_seat};
pub use client::ClientLimits;
pub(crate) use client::SendOutcome;
pub use client::{
    CONNECT_TIMEOUT, DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_RETRY_WAIT, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_STREAM_IDLE_TIMEOUT, ModelClient, ModelClientBuilder, SendOptions,
};
pub(crate) use codec::encode;
#[cfg(test)]
pub(crate) use codec::{StreamDecoder, decode};
pub use encoded::{DecodePlan, EncodedRequest, Header};
pub use request::{ChatRequest, Reasoning, ResponseSchema, ToolChoice, ToolSpec};
pub use response::TokenLogprob;
pub use response::ToolCallView;
pub use response::{ChatResponse, StopReason, StreamDelta, Usage};
pub use services::ModelServices;
pub use target::Auth;
pub use target::AzureApi;
pub use target::{ApiKey, CacheTtl, Dialect, PromptCache, StructuredOutput, WireTarget};
pub use tokens::{TokenCounter, Tokenizer};
