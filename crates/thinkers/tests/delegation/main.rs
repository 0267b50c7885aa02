//! Delegation and discovery: the tool hub and skills, `request_tools`, `request_skill`,
//! `sub_thinker` and thinkers or doers offered as tools (`as_tool`) — the rules driven by
//! scripted turns through a real dispatcher. The run end to end over real HTTP against
//! thinkers-sim, recorded to SQLite and rendered as a trace, is `thinkers-store`'s `delegation`
//! test binary.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod as_tool;
mod catalog;
mod scope;
mod skills;
mod sub;
mod support;
