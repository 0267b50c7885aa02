//! What the topics share, declared once: the `thinkers` binary as a command, `thinkers serve` as
//! a child process, a headless browser, a Restate server, the `errands` workflow's sim and
//! ledger, and PostgreSQL schemas.
//!
//! Each helper starts or names its own processes, ports, directories and schemas: none keeps
//! state between tests, which now share one process.

pub(crate) mod browser;
pub(crate) mod cli;
pub(crate) mod errands;
pub(crate) mod host;
// The crate `thinkers`'s conversation tests share this file; `pg_conversations` is theirs alone.
#[allow(dead_code)]
#[path = "../../../../thinkers-store/tests/conversations/pg.rs"]
pub(crate) mod pg;
pub(crate) mod restate;

/// The `thinkers` binary of this package as a plain (blocking) command, with the environment of
/// the test process; [`cli::thinkers`] is the async one with the store and sim variables removed.
pub(crate) fn thinkers() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_thinkers"))
}
