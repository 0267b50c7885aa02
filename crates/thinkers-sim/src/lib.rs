//! # thinkers-sim
//!
//! A simulated LLM provider: a real HTTP server that speaks the OpenAI Chat Completions
//! (`POST /v1/chat/completions`), OpenAI Responses (`POST /v1/responses`, and Azure OpenAI's
//! paths) and Anthropic Messages (`POST /v1/messages`) wire formats, for testing agents offline,
//! running demos and benchmarking a runtime without paying a provider.
//!
//! It is written from the providers' documented formats and shares no code with any client, so
//! a misreading of a format cannot hide on both sides of a test.
//!
//! ## Starting one
//!
//! ```no_run
//! # async fn demo() -> Result<(), thinkers_sim::SimError> {
//! use thinkers_sim::{Sim, SimConfig, SimModel};
//!
//! let config = SimConfig::builder()
//!     .model(SimModel::new("sim-small").tpm(100_000).rpm(600))
//!     .seed(7)
//!     .build()?;
//! let sim = Sim::start(config).await?;
//! // Point an OpenAI client at `sim.openai_base_url()`, an Anthropic client at `sim.base_url()`.
//! println!("{}", sim.openai_base_url());
//! sim.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! A configuration can also be read from the runtime's catalog TOML
//! ([`SimConfig::from_catalog_toml`]); each entry's `[entries.sim]` table is its behaviour
//! [`Profile`].
//!
//! ## How it answers
//!
//! - **Schema-driven** (default): while tools are offered and fewer than `tool_rounds` tool
//!   rounds were completed, it calls `parallel_tool_calls` tools with arguments valid for their
//!   schemas ([`schema`]); then it gives the final answer: JSON valid for the requested schema, or
//!   text quoting the latest tool result. Answers are a function of (seed, request).
//! - **Text-tool mode**: for models without native tools, tools listed in a `<tools>` block of
//!   the system prompt are called by answering `{"tool_calls":[…]}`; `<tool_result>` blocks count
//!   as completed rounds.
//! - **Scripted**: a [`Script`] of "when the last message contains X, answer Y" rules, tried
//!   first.
//!
//! ## Limits, latency and faults
//!
//! Per-model RPM, TPM, ITPM, OTPM and concurrency limits, enforced over a sliding window (the
//! minute by default), fixed windows or a token bucket ([`LimitShape`]), with the providers' 429
//! bodies and rate-limit headers ([`limits`], [`tokens`] for the token count). Latency per request
//! from the profile.
//! Faults ([`FaultKind`]) on demand through the `x-sim-fault` header, injected [`FaultRule`]s or
//! random per-model rates.
//!
//! ## Prompt caching
//!
//! Per model, on by default ([`cache`]): Anthropic `cache_control` and Bedrock `cachePoint`
//! breakpoints (5 minutes or 1 hour, a 20-block lookback, at most 4 on Anthropic), automatic
//! prefixes in 128-token steps on OpenAI (`prompt_cache_key` names a cache) and Gemini, from a
//! minimum of `cache_min_tokens` (1024). Usage reports each dialect's own fields; whether reads
//! are charged to `itpm`/`tpm` is `cache_reads_count` (not on Anthropic by default).
//!
//! ## Observing
//!
//! [`Sim::stats`] / `GET /sim/stats` count requests, admissions, settled tokens, 429s (per limit
//! kind) and faults per model ([`ModelStats`]);
//! [`Sim::requests`] / `GET /sim/requests` return the logged bodies when `log_bodies` is set.
//!
//! ## Feature flags
//!
//! None: the crate always builds the whole server.

mod anthropic;
mod api_error;
mod bedrock;
pub mod cache;
mod catalog;
pub mod config;
pub mod error;
mod exchange;
pub mod fault;
mod gemini;
pub mod limits;
mod logprobs;
mod openai;
mod plan;
mod rate_headers;
mod responses;
pub mod schema;
pub mod script;
mod seeding;
mod server;
pub mod stats;
mod text_protocol;
pub mod tokens;

pub use config::{Profile, SimConfig, SimConfigBuilder, SimModel};
pub use error::{Result, SimError};
pub use fault::{
    FAULT_HEADER, FaultHeaderError, FaultKind, FaultParams, FaultRates, FaultRule,
    UnknownFaultKind, parse_fault_header,
};
pub use limits::{LimitKind, LimitShape, UnknownLimitShape};
pub use script::{MatchOn, Script, ScriptAnswer, ScriptRule, ScriptToolCall};
pub use server::{Sim, serve, serve_with_shutdown};
pub use stats::{LoggedRequest, ModelStats, StatsSnapshot};
