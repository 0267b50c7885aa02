//! Delegation end to end over real HTTP against thinkers-sim, recorded to SQLite and rendered as a
//! trace: discovery, a skill, a sub-thinker and the tree under the thinker.
//!
//! One test binary of topic modules, so it links once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod e2e;
/// The hub, tools and declarations of the `thinkers` delegation tests.
#[allow(dead_code)]
#[path = "../../../thinkers/tests/delegation/support.rs"]
mod support;
