//! The MCP example (`cargo run -p thinkers-mcp --example mcp`) against an in-process thinkers-sim
//! and the real "everything" server. The example holds its own copy of the examples' support
//! module, so that it also runs on its own.
#![allow(clippy::duplicate_mod)]

#[path = "../../../thinkers/examples/support/mod.rs"]
mod example_support;

#[allow(dead_code)]
#[path = "../../examples/mcp.rs"]
mod mcp;

use example_support as support;

#[tokio::test]
async fn mcp_example_calls_the_servers_echo_tool() {
    let env = support::offline(mcp::tune).await.unwrap();
    let Some(out) = mcp::run(&env.rt).await.unwrap() else {
        return; // `server_command` printed the skip loudly.
    };
    assert!(!out.answer.is_empty());
    assert!(
        out.transcript.contains("[tool call echo"),
        "{}",
        out.transcript
    );
    assert!(out.transcript.contains("Echo: "), "{}", out.transcript);
    assert_eq!(env.sim.unwrap().requests().len(), 2);
}
