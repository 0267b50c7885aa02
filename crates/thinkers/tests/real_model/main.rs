//! The client against a real OpenAI-compatible model server: llama-cpp-python's server with
//! SmolLM2-135M-Instruct (`scripts/real-model-server.sh start PORT` starts it and prints its base
//! URL; `scripts/test.sh` starts it for the whole suite).
//!
//! The base URL comes from `THINKERS_REAL_MODEL_URL`. When it is unset every test says it
//! skipped and passes, unless `THINKERS_REQUIRE_REAL_MODEL=1`, when it fails instead.
//!
//! The model is tiny and may call a tool again and again, so the tests assert on protocol and
//! types, never on the answers' wisdom. The server answers one request at a time: the tests
//! take turns through one lock.
//!
//! * `thinker` — a `Thinker` with one tool over native tool calls and over text
//!   tools: calls parsed, results paired with their ids, every turn answered by the server, the
//!   run ending by an answer or by its iteration limit;
//! * `chat` — a streamed chat turn: text deltas, then a final answer made of them;
//! * `toolless` — a `ToollessThinker` whose typed answer decodes (schema-constrained output);
//! * `minimal` — a catalog naming only the provider and the model: the structured-answer form
//!   and the streaming of tool calls the server accepts are found at run time (issue 48).
// A failing test reports by panicking; test binaries need no docs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod chat;
mod gate;
mod minimal;
mod support;
mod thinker;
mod toolless;
