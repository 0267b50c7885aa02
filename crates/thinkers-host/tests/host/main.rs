//! The chat host over real HTTP: the JSON API and every refusal, the names and origins a host
//! answers, server-sent events in order,
//! chats surviving a restart of the host on the same database file, and the web page driven by
//! headless Chromium (skipped, loudly, when the browser is not installed); with `postgres`, two
//! hosts on one PostgreSQL database serialising the turns of one chat.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod access;
mod api;
mod browser;
// The WebDriver client the CLI's explorer test uses too (one copy for both crates).
mod explorer_api;
mod explorer_limits;
mod explorer_store;
mod names;
#[allow(dead_code)]
#[path = "../../../thinkers-store/tests/conversations/pg.rs"]
mod pg;
mod scaleout;
mod support;
#[path = "../../../thinkers-cli/tests/cli/support/browser.rs"]
mod webdriver;
