//! The `thinkers` command line: the demo, trajectory traces and more.

mod catalog;
mod demo;
mod simctl;
mod trace;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// thinkers: a runtime for LLM-driven software.
#[derive(Debug, Parser)]
#[command(name = "thinkers", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the demo workflow offline and print what it did.
    Demo(demo::DemoArgs),
    /// List the model catalog by grade; `--check` calls every open entry.
    Catalog(catalog::CatalogArgs),
    /// Run the simulated provider (OpenAI and Anthropic wire formats) on a local port.
    Sim(simctl::SimArgs),
    /// Print the trajectory of a stored workflow as a tree.
    Trace {
        /// The workflow id (the root job's id). Omit with --list.
        workflow: Option<String>,
        /// List recent workflows instead.
        #[arg(long)]
        list: bool,
        /// The database file.
        #[arg(long, default_value = "thinkers.db", env = "THINKERS_DB")]
        db: PathBuf,
    },
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("THINKERS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    init_tracing();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(args).await,
        Command::Catalog(args) => catalog::run(args).await,
        Command::Sim(args) => simctl::serve(args).await,
        Command::Trace { workflow, list, db } => trace::run(workflow.as_deref(), list, &db).await,
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
