//! Thinkers end to end: the loop driven by scripted turns through the dispatcher, the
//! answer-shape boundary, and single-objective runs over real HTTP against thinkers-sim for the
//! OpenAI, Anthropic and Gemini dialects and the text-tool fallback, for OpenAI Responses and
//! Azure OpenAI (`responses`), and for Bedrock Converse (`bedrock`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod answer;
mod bedrock;
mod e2e;
mod gemini;
mod made_up;
mod pins;
mod read_only;
mod redeclared;
mod responses;
mod scripted;
mod stamps;
mod support;
