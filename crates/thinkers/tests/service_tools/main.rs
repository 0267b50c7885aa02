//! Service-tool tests: the built-in tools that call external services (`web_fetch`,
//! `pubmed_fetch`, `epo_claims`) against loopback fakes replaying hand-written fixtures, and,
//! with the `mcp` feature, MCP servers as tool providers against a real MCP server.
//!
//! One test binary of topic modules, so it links once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod contract;
mod epo;
mod fakes;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "mcp")]
mod mcp_thinker;
mod pubmed;
mod support;
mod web_fetch;
mod web_fetch_ipv6;
