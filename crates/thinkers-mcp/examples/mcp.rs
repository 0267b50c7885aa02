//! An MCP tool through a thinker: the reference MCP server ("everything", started over stdio)
//! lends its `echo` tool to a thinker, which calls it and answers with what it returned. MCP
//! tools are never read-only, whatever the server hints.
//!
//! Needs the server's command line in `THINKERS_MCP_EVERYTHING`
//! (`scripts/install-mcp-test-server.sh` prints it):
//!
//! ```sh
//! export THINKERS_MCP_EVERYTHING="$(bash scripts/install-mcp-test-server.sh | tail -n1)"
//! cargo run -p thinkers-mcp --example mcp
//! ```

use anyhow::{Context, Result};
use thinkers::Runtime;
use thinkers::model::{Depth, Grade, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers_mcp::{McpServer, McpToolset};

#[path = "../../thinkers/examples/support/mod.rs"]
mod support;

/// The variable holding the server's command line.
pub const SERVER_VAR: &str = "THINKERS_MCP_EVERYTHING";

/// What the run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The thinker's answer.
    pub answer: String,
    /// The conversation, with the MCP call and its result.
    pub transcript: String,
}

/// The server's program and arguments, or `None` after a loud notice on stderr.
pub fn server_command() -> Option<(String, Vec<String>)> {
    let value = std::env::var(SERVER_VAR).unwrap_or_default();
    let mut words = value.split_whitespace().map(str::to_owned);
    match words.next() {
        Some(program) => Some((program, words.collect())),
        None => {
            eprintln!(
                "\n!!! SKIPPED: the MCP example needs a server: {SERVER_VAR} is not set.\n\
                 !!! Run scripts/install-mcp-test-server.sh and export its last line as \
                 {SERVER_VAR} (scripts/test.sh does both).\n"
            );
            None
        }
    }
}

/// Connect to the server and let a thinker use its `echo` tool. `None` when no server is set.
pub async fn run(rt: &Runtime) -> Result<Option<Outcome>> {
    let Some((program, args)) = server_command() else {
        return Ok(None);
    };
    let toolset = McpToolset::connect(McpServer::stdio(program, args).named("everything")).await?;
    println!(
        "the server offers: {:?}",
        toolset
            .tools()
            .iter()
            .map(|t| t.wire_name())
            .collect::<Vec<_>>()
    );
    let echo = toolset
        .providers()
        .into_iter()
        .find(|p| p.name() == "echo")
        .context("the everything server has no `echo` tool")?;
    let thinker = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Repeat what the user says through the echo tool, then answer with what it returned.",
    )
    .provider(echo)
    .class("echo_thinker");
    let observer = thinker.observer();
    // Quick: an echo needs no reasoning budget.
    let input = ThinkerInput::query("Say hello through the tool.").with_depth(Depth::Quick);
    let answer = rt.run(thinker.ask(input)).await?;
    let transcript = observer.transcript();
    println!("{transcript}");
    println!("answer: {answer}");
    Ok(Some(Outcome { answer, transcript }))
}

/// One tool round, then the answer.
pub fn tune(config: thinkers_sim::SimConfig) -> thinkers_sim::SimConfig {
    support::one_tool_round(config)
}

#[tokio::main]
async fn main() -> Result<()> {
    let env = support::from_args(tune).await?;
    run(&env.rt).await?;
    // Cancels what still runs and writes every record before the process exits.
    env.rt.shutdown().await?;
    Ok(())
}
