//! The integration tests of the `thinkers` command line, as one test binary of topic modules
//! (one link of the `thinkers` crate instead of one per file). Every topic runs the real
//! `thinkers` binary (`CARGO_BIN_EXE_thinkers`) as a child process.
//!
//! Select a topic by its module path: `cargo test -p thinkers-cli --test cli restate::`.
//!
//! The tests share one process, and libtest runs them on parallel threads: no test sets an
//! environment variable or changes the current directory of this process (a child gets its
//! variables and directory through its `Command`), none installs a global tracing subscriber,
//! and the only `static`s serialize tests of one topic that share an outside server
//! (`restate`: one Restate server's worth of processes at a time; `real_model`: the one model
//! server).
// A failing test reports by panicking; test binaries need no docs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;

/// `thinkers bench`: the bundled task, a task file, the JSON and CSV files.
mod bench;
/// `thinkers catalog --check` over the simulated provider and over servers that fail.
mod catalog_check;
/// `thinkers chat` with piped stdin, and `thinkers serve` answering the page and the API.
mod chat;
/// The demo's stored workflow through `trace`, and a keyed `thinkers run` paused and resumed.
mod cli;
/// `thinkers demo` when a stage fails, and over catalogs mixing every family.
mod demo;
/// The runs explorer of `thinkers serve` in headless Chromium.
mod explorer;
/// `thinkers sizing`, `thinkers cost` and the log flags against a seeded SQLite database.
mod ops;
/// `thinkers cost` and `thinkers sizing` over a run recorded in PostgreSQL.
mod ops_pg;
/// The command line against a real OpenAI-compatible model server.
mod real_model;
/// The record stays true on every path a process can end by.
mod record_truth;
/// Workflows on a real Restate server: crashes, approvals, shared limits.
mod restate;
/// Who `thinkers serve` lets in: tokens and loopback names.
mod serve_access;
/// Two `thinkers serve` processes on one PostgreSQL chat.
mod serve_pg;
/// A chat survives its host stopped or killed mid-turn.
mod serve_restart;
