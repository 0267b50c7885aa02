//! MCP servers as tool providers, against the real reference server ("everything", from npm).
//!
//! The server is installed by `scripts/install-mcp-test-server.sh`, whose last line — the command
//! that starts it — `scripts/test.sh` exports as `THINKERS_MCP_EVERYTHING`. Without that variable
//! the tests that need the server skip with a loud message (CI always sets it).

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use thinkers::job::ScopeGuard;
use thinkers::tool::{ToolCallContext, ToolProvider, admit_call};
use thinkers::{Dispatcher, Error, ErrorKind};
use thinkers_mcp::{McpServer, McpToolset};

use crate::support::{assert_external, assert_invalid, closed_port};

const VAR: &str = "THINKERS_MCP_EVERYTHING";

/// The server's command and arguments, or `None` after a loud notice.
pub fn everything() -> Option<(String, Vec<String>)> {
    let value = std::env::var(VAR).unwrap_or_default();
    let mut words = value.split_whitespace().map(str::to_owned);
    if let Some(program) = words.next() {
        return Some((program, words.collect()));
    }
    // Written past the test harness's capture, so a skip is seen even when the test passes.
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
         !!! SKIPPED: MCP test against a real server: {VAR} is not set.\n\
         !!! Run scripts/install-mcp-test-server.sh and export its last line as {VAR}\n\
         !!! (scripts/test.sh does both).\n\
         !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
    );
    None
}

#[tokio::test]
async fn a_stdio_server_lists_calls_maps_errors_and_is_never_read_only() {
    let Some((program, args)) = everything() else {
        return;
    };
    let toolset = McpToolset::connect(McpServer::stdio(program, args).named("everything"))
        .await
        .unwrap();
    assert_eq!(toolset.server(), "everything");

    // Listing: the server's tools, offered under snake_case names.
    let names: Vec<&str> = toolset.tools().iter().map(|t| t.name()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(names.contains(&"get_sum"), "{names:?}");
    assert!(
        names.iter().all(|n| thinkers::tool::is_snake_case(n)),
        "{names:?}"
    );
    let echo = toolset.get("echo").unwrap();
    assert_eq!(echo.description(), "Echoes back the input string");
    assert_eq!(
        echo.input_schema()["properties"]["message"]["type"],
        "string"
    );
    let sum = toolset.get("get_sum").unwrap();
    assert_eq!(sum.wire_name(), "get-sum");

    // Calls run through the dispatcher; text content becomes the JSON the model reads.
    let d = Dispatcher::builder().build();
    let job = echo
        .instantiate(
            &json!({"message": "hello, seat"}),
            &ToolCallContext::default(),
        )
        .unwrap();
    let out = d.run(job).await.unwrap();
    assert_eq!(out.json, json!("Echo: hello, seat"));
    let raw = out.downcast::<rmcp::model::CallToolResult>().unwrap();
    assert_eq!(raw.is_error, None);
    let job = sum
        .instantiate(&json!({"a": 2, "b": 40}), &ToolCallContext::default())
        .unwrap();
    let out = d.run(job).await.unwrap();
    assert_eq!(out.json, json!("The sum of 2 and 40 is 42."));

    // Errors: the server's `isError` result is correctable and carries its text; arguments that
    // are not an object are refused before any request.
    let job = echo
        .instantiate(&json!({"message": 5}), &ToolCallContext::default())
        .unwrap();
    let err = d.run(job).await.unwrap_err();
    assert_invalid(&err, "arguments", "5");
    assert!(err.is_correctable());
    assert!(err.to_string().contains("Input validation error"), "{err}");
    let err = echo
        .instantiate(&json!(["hello"]), &ToolCallContext::default())
        .unwrap_err();
    assert_invalid(&err, "arguments", "hello");

    // Read-only: never, whatever the server's annotations claim, so a read-only scope refuses it.
    assert_eq!(
        echo.read_only_hint(),
        Some(true),
        "the server does claim it"
    );
    for tool in toolset.providers() {
        assert!(!tool.read_only(), "{} claims read-only", tool.name());
    }
    let err = admit_call(echo.as_ref(), &ScopeGuard::unbound().read_only()).unwrap_err();
    assert_invalid(&err, "tool", "echo");
    admit_call(echo.as_ref(), &ScopeGuard::unbound()).unwrap();
}

#[tokio::test]
async fn a_streamable_http_server_works_and_its_loss_is_a_service_failure() {
    let Some((program, args)) = everything() else {
        return;
    };
    let port = closed_port();
    let mut server = tokio::process::Command::new(&program)
        .args(&args)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_for_port(port).await;

    let url = format!("http://127.0.0.1:{port}/mcp");
    let toolset = McpToolset::connect(McpServer::http(&url)).await.unwrap();
    let server_name = format!("127.0.0.1:{port}");
    assert_eq!(toolset.server(), server_name);
    let echo = toolset.get("echo").unwrap();
    // A call goes through the dispatcher (there is no other way to one).
    let d = Dispatcher::builder().build();
    let call = |message: &str| {
        echo.instantiate(&json!({ "message": message }), &ToolCallContext::default())
            .unwrap()
    };
    let out = d.run(call("over http")).await.unwrap();
    assert_eq!(out.json, json!("Echo: over http"));

    // The server goes away: the call fails as the server's failure at tools/call.
    server.kill().await.unwrap();
    server.wait().await.unwrap();
    let err = d.run(call("anyone?")).await.unwrap_err();
    assert_external(&err, &server_name, "tools/call");
}

#[tokio::test]
async fn a_server_that_cannot_be_reached_fails_at_initialize() {
    let err = McpToolset::connect(McpServer::stdio(
        "/nonexistent/thinkers-mcp-server",
        Vec::<String>::new(),
    ))
    .await
    .unwrap_err();
    assert_external(&err, "thinkers-mcp-server", "initialize");

    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let err = McpToolset::connect(McpServer::http(url).named("gone"))
        .await
        .unwrap_err();
    assert_external(&err, "gone", "initialize");
    assert_eq!(err.kind(), ErrorKind::ExternalService);
    assert!(!matches!(err, Error::System { .. }));
}

async fn wait_for_port(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the MCP server did not open port {port} within 10 s");
}
