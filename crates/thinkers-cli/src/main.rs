//! The `thinkers` command line: the demo, trajectory traces and more.

mod bench;
mod catalog;
mod chat;
mod cost;
mod demo;
mod logging;
mod serve;
mod simctl;
mod sizing;
mod trace;
mod work;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// thinkers: a runtime for LLM-driven software.
#[derive(Debug, Parser)]
#[command(name = "thinkers", version, about)]
struct Cli {
    #[command(flatten)]
    log: logging::LogArgs,
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
        /// The database file, or a `postgres://` URL.
        #[arg(long, default_value = "thinkers.db", env = "THINKERS_DB")]
        db: PathBuf,
    },
    /// Recommend each job class's output size from its recorded model calls.
    Sizing(sizing::SizingArgs),
    /// Tokens, calls, latency and spend of recorded model calls.
    Cost(cost::CostArgs),
    /// Serve chats over HTTP: a JSON API, server-sent events and a web page at `/`.
    Serve(serve::ServeArgs),
    /// Chat in the terminal: lines from stdin are messages, answers stream to stdout.
    Chat(chat::ChatArgs),
    /// Race a task across every model of a grade, judged blind; print and write the report.
    Bench(bench::BenchArgs),
    /// Put a workflow (by registered name, with JSON input) on the PostgreSQL queue.
    Submit(work::SubmitArgs),
    /// Claim workflows from the PostgreSQL queue and run them (lease with heartbeats).
    Worker(work::WorkerArgs),
    /// Where a submitted workflow is: queued, running (where), succeeded or failed.
    Status(work::StatusArgs),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let _log = match logging::init(&cli.log) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("error: {e:#}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = match cli.command {
        Command::Demo(args) => demo::run(args).await,
        Command::Catalog(args) => catalog::run(args).await,
        Command::Sim(args) => simctl::serve(args).await,
        Command::Trace { workflow, list, db } => trace::run(workflow.as_deref(), list, &db).await,
        Command::Sizing(args) => sizing::run(args).await,
        Command::Cost(args) => cost::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Chat(args) => chat::run(args).await,
        Command::Bench(args) => bench::run(args).await,
        Command::Submit(args) => work::submit(args).await,
        Command::Worker(args) => work::worker(args).await,
        Command::Status(args) => work::status(args).await,
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
