//! MCP servers as tool providers, against a real MCP server: the toolset's calls,
//! its failures as typed errors, and a thinker that is offered its tools under a read-only scope.
//!
//! One test binary of topic modules, so it links once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod example;
mod mcp;
mod mcp_thinker;
/// The service tools' test helpers (error assertions, a closed port), shared rather than copied.
#[allow(dead_code)]
#[path = "../../../thinkers-tools/tests/service_tools/support.rs"]
mod support;
