//! Conversation tests: every block kind through both stores, resume by id across two OS
//! processes, compaction properties, and two writers racing on one conversation.
//!
//! One test binary of topic modules, so it links once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod compaction;
mod concurrency;
mod pg;
mod resume;
mod roundtrip;
mod support;
