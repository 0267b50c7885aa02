//! MCP servers as tool providers for thinkers, through rmcp.
//!
//! [`McpToolset::connect`] starts or reaches one MCP server ([`McpServer::stdio`] spawns a
//! command and speaks JSON-RPC over its stdin/stdout; [`McpServer::http`] speaks streamable HTTP
//! to a URL), performs the protocol handshake through rmcp, and lists the server's tools. Each
//! listed tool becomes an [`McpTool`], a [`ToolProvider`] whose name, description and input
//! schema come from the server. All tools of one toolset share one connection (an `Arc`); the
//! connection closes — and a spawned server is stopped — when the toolset and every tool from it
//! are dropped. A broken connection is not re-established: connect again.
//!
//! **Never read-only.** [`McpTool::read_only`] is `false` for every MCP tool, whatever the server
//! says. MCP's tool annotations (`readOnlyHint` and the like) are hints a server volunteers about
//! itself; the protocol gives a client no way to establish them, and the server is exactly the
//! party the read-only binding protects against. So a read-only scope refuses every MCP tool (see
//! [`thinkers::tool::admit_call`]). The hint is still readable, for display, as
//! [`McpTool::read_only_hint`].
//!
//! **Names.** Tool names on the wire of thinkers are snake_case, so a server's `getTinyImage` or
//! `get-sum` is offered as `get_tiny_image` or `get_sum` ([`McpTool::name`]); the call uses the
//! server's own name ([`McpTool::wire_name`]).
//!
//! **Outcomes of a call** (service = the server's name, step = `tools/call`):
//!
//! * arguments that are not a JSON object → [`Error::InvalidInput`] on `arguments`, before any
//!   request;
//! * a result with `isError: true` → [`Error::InvalidInput`] on `arguments` carrying the server's
//!   text: the protocol reserves that flag for failures the model should see and can act on;
//! * a JSON-RPC "invalid params" error → [`Error::InvalidInput`] on `arguments`;
//! * any other JSON-RPC error, a closed or failed transport, or no answer within
//!   [`McpServer::call_timeout`] → [`Error::ExternalService`] naming the server and `tools/call`;
//! * a result → [`ToolOutput`]: the structured content when the server sent one, otherwise the
//!   text of a single text block as a JSON string, or an array of the blocks (text blocks as
//!   strings, others as their MCP JSON). The typed value is rmcp's `CallToolResult`.

// Every public item carries rustdoc: the workspace warns, the library refuses.
#![deny(missing_docs)]

mod call;
mod server;

pub use call::McpTool;
pub use server::{McpServer, McpToolset};

#[cfg(doc)]
use thinkers::Error;
#[cfg(doc)]
use thinkers::tool::{ToolOutput, ToolProvider};

/// A tool name as snake_case: `getTinyImage` → `get_tiny_image`, `get-sum` → `get_sum`.
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev_lower_or_digit = false;
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower_or_digit {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower_or_digit = false;
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
            prev_lower_or_digit = true;
        } else {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower_or_digit = false;
        }
    }
    let trimmed = out.trim_matches('_');
    let mut s = if trimmed.is_empty() {
        "tool".to_owned()
    } else {
        trimmed.to_owned()
    };
    if !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        s.insert_str(0, "t_");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_snake_case() {
        assert_eq!(snake_case("echo"), "echo");
        assert_eq!(snake_case("get-sum"), "get_sum");
        assert_eq!(snake_case("getTinyImage"), "get_tiny_image");
        assert_eq!(
            snake_case("trigger-long-running-operation"),
            "trigger_long_running_operation"
        );
        assert_eq!(snake_case("a.b/c"), "a_b_c");
        assert_eq!(snake_case("2fa"), "t_2fa");
        assert_eq!(snake_case("---"), "tool");
        assert!(thinkers::tool::is_snake_case(&snake_case("Weird Name!")));
    }
}
