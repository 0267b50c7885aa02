// An MCP tool is called only as a job the dispatcher admitted (`ToolProvider::instantiate`, whose
// requirements check the scope's read-only binding): the call itself is private to the crate.
use thinkers_mcp::McpTool;

async fn unadmitted(tool: &McpTool) {
    let _ = McpTool::call(tool, serde_json::json!({})).await;
}

fn main() {}
