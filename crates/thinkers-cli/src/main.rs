//! The `thinkers` command line: the demo, trajectory traces and more.

mod approvals;
mod bench;
mod caps;
mod catalog;
mod chat;
mod cost;
mod demo;
mod lifecycle;
mod logging;
mod run;
mod serve;
mod simctl;
mod sizing;
mod trace;
mod work;

use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Run the simulated provider (OpenAI, Anthropic, Gemini and Bedrock Converse wire formats)
    /// on a local port.
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
    /// Run a registered workflow (`chain`, `fanout`, `explain`, `errands`) in this process,
    /// recorded in the database; prints its JSON output (`--key`: as a durable run it resumes).
    Run(run::RunArgs),
    /// Start a workflow (by registered name, with JSON input) on the Restate server.
    Submit(work::SubmitArgs),
    /// Serve the Restate workflow service: run the workflows the Restate server invokes.
    Worker(work::WorkerArgs),
    /// Where a submitted workflow is: queued, running (where), succeeded, failed or awaiting
    /// approval.
    Status(work::StatusArgs),
    /// List the tool calls waiting for a person's approval (`--all`: decided ones too).
    Approvals(approvals::ListArgs),
    /// Approve a pending tool call: its run goes on.
    Approve(approvals::ApproveArgs),
    /// Deny a pending tool call: the model reads the reason and goes on without it.
    Deny(approvals::DenyArgs),
    /// Answer a pending tool call with a stated result instead of running it (for a call whose
    /// outcome is unknown: what its effect was found to be).
    Skip(approvals::SkipArgs),
    /// Fail the run of a pending tool call, with a reason.
    Fail(approvals::FailArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let _log = match logging::init(&cli.log) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let mut command = std::pin::pin!(run_command(cli.command));
    let signal = tokio::select! {
        result = &mut command => {
            // Whatever the outcome, what the runtimes hold is recorded before the exit.
            let closed = lifecycle::shutdown_all("the command ended").await;
            return match (result, closed) {
                (Ok(()), Ok(())) => ExitCode::SUCCESS,
                (Err(e), _) | (Ok(()), Err(e)) => {
                    eprintln!("error: {e:#}");
                    ExitCode::FAILURE
                }
            };
        }
        signal = lifecycle::next_signal() => signal,
    };
    eprintln!(
        "{}: stopping; running work is cancelled and recorded",
        signal.name
    );
    lifecycle::request_stop();
    let reason = format!("the process was stopped by {}", signal.name);
    let stopping = async {
        let _ = lifecycle::shutdown_all(&reason).await;
        // The command finishes what it does on a stop (the chat host marks the turns it cut).
        if tokio::time::timeout(lifecycle::GRACE, &mut command)
            .await
            .is_err()
        {
            eprintln!("{}: the command did not finish in time", signal.name);
        }
        // A runtime the command built while stopping.
        let _ = lifecycle::shutdown_all(&reason).await;
    };
    tokio::select! {
        () = stopping => {}
        again = lifecycle::next_signal() => eprintln!("{}: exiting at once", again.name),
    }
    ExitCode::from(signal.code)
}

async fn run_command(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Demo(args) => demo::run(args).await,
        Command::Catalog(args) => catalog::run(args).await,
        Command::Sim(args) => simctl::serve(args).await,
        Command::Trace { workflow, list, db } => trace::run(workflow.as_deref(), list, &db).await,
        Command::Sizing(args) => sizing::run(args).await,
        Command::Cost(args) => cost::run(args).await,
        Command::Serve(args) => serve::run(args).await,
        Command::Chat(args) => chat::run(args).await,
        Command::Bench(args) => bench::run(args).await,
        Command::Run(args) => run::run(args).await,
        Command::Submit(args) => work::submit(args).await,
        Command::Worker(args) => work::worker(args).await,
        Command::Status(args) => work::status(args).await,
        Command::Approvals(args) => approvals::list(args).await,
        Command::Approve(args) => approvals::approve(args).await,
        Command::Deny(args) => approvals::deny(args).await,
        Command::Skip(args) => approvals::skip(args).await,
        Command::Fail(args) => approvals::fail(args).await,
    }
}
