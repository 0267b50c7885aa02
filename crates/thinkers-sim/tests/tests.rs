//! Integration tests of thinkers-sim over real HTTP, one module per topic:
//! - `openai`: Chat Completions answers, tools, structured output, streaming, logprobs, checks;
//! - `anthropic`: Messages answers, tools, thinking and signatures, streaming, checks;
//! - `bedrock`: Converse authentication, throttling, reasoning signatures, event-stream frames;
//! - `cache`: prompt caching per dialect (writes, reads, minimums, breakpoints, `itpm`, stats);
//! - `gemini`: generateContent answers, function calls, structured output, thought signatures,
//!   streaming, checks, 429s with `RetryInfo`;
//! - `modes`: text-tool mode, scripted mode, determinism;
//! - `faults`: every fault kind and every way to trigger one;
//! - `exchange_faults`: the faults of the exchange itself (key echoes, waits, stalls, bodies);
//! - `limits`: TPM/RPM 429s and rate-limit headers, latency;
//! - `admin`: stats, reset, request log, model list, catalog configuration, `serve`;
//! - `responses`: OpenAI Responses items, reasoning items, typed streams, and Azure's paths.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod admin;
mod anthropic;
mod bedrock;
mod cache;
mod exchange_faults;
mod faults;
mod gemini;
mod limits;
mod modes;
mod openai;
mod responses;
mod support;
