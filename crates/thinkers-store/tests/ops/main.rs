//! Operations tests: sizing from history and cost roll-ups on a real SQLite file, rows written
//! through the batching recorder and read back through the store's queries.
//!
//! One test binary of topic modules, so it links once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod cost;
mod sizing;
mod support;
