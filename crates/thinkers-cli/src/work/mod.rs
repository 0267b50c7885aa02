//! `thinkers submit`, `thinkers worker` and `thinkers status`: registered workflows run on a
//! Restate server by any number of `thinkers worker` service processes, recorded in PostgreSQL.

mod errands;
mod restate;
mod workflows;

pub(crate) use workflows::registry;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use thinkers::Runtime;
use thinkers_redis::RedisBudgets;
use thinkers_store::RuntimeBuilderExt as _;
use thinkers_store::{LlmRunFilter, PgStore};
use thinkers_workflows::restate::{RestateEngine, RestateIngress};
use thinkers_workflows::{WorkflowId, WorkflowState, Workflows};

use crate::simctl;

/// Where the workflows' record is.
#[derive(Debug, clap::Args)]
pub(crate) struct DbArgs {
    /// The PostgreSQL database of the workflows' record, the journal's approvals and the runs
    /// (`postgres://…`).
    #[arg(long, env = "THINKERS_DB")]
    db: String,
}

impl DbArgs {
    async fn open(&self) -> anyhow::Result<(PgStore, Workflows)> {
        if !(self.db.starts_with("postgres://") || self.db.starts_with("postgresql://")) {
            bail!(
                "--db must be a postgres:// URL (the workflows' record lives in PostgreSQL), \
                 not `{}`",
                self.db
            );
        }
        let store = PgStore::open(&self.db)
            .await
            .context("opening the PostgreSQL database of --db")?;
        let workflows = Workflows::new(&store);
        Ok((store, workflows))
    }
}

/// Where the Restate server is.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RestateArgs {
    /// The Restate server's ingress URL (`http://host:8080`).
    #[arg(long = "restate", env = "THINKERS_RESTATE_URL")]
    pub(crate) url: Option<String>,
}

impl RestateArgs {
    pub(crate) fn ingress(&self) -> anyhow::Result<RestateIngress> {
        let url = self.url.as_deref().context(
            "the workflow runs on Restate: pass its ingress URL with --restate (or \
             THINKERS_RESTATE_URL)",
        )?;
        Ok(RestateIngress::new(url))
    }
}

/// Options of `thinkers submit`.
#[derive(Debug, clap::Args)]
pub(crate) struct SubmitArgs {
    /// The registered workflow: `chain` (a doer), `fanout` (calls at once), `explain` (a
    /// thinker) or `errands` (a thinker whose tool calls wait for approval).
    name: String,
    /// The workflow's input as JSON.
    #[arg(long, default_value = "{}")]
    input: String,
    #[command(flatten)]
    restate: RestateArgs,
    #[command(flatten)]
    db: DbArgs,
}

pub(crate) async fn submit(args: SubmitArgs) -> anyhow::Result<()> {
    let input: serde_json::Value = serde_json::from_str(&args.input)
        .with_context(|| format!("--input is not JSON: {}", args.input))?;
    let registry = workflows::registry();
    // Name and input are checked before connecting, so a typo fails fast.
    registry.check(&args.name, &input)?;
    let ingress = args.restate.ingress()?;
    let (_, workflows) = args.db.open().await?;
    let id = ingress
        .submit(&workflows, &registry, &args.name, input)
        .await?;
    println!("{id}");
    Ok(())
}

/// Options of `thinkers worker`.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkerArgs {
    #[command(flatten)]
    db: DbArgs,
    #[command(flatten)]
    caps: crate::caps::CapArgs,
    /// The service process's name (default: the port and the process id).
    #[arg(long)]
    name: Option<String>,
    /// A model catalog (its providers' API keys from the variables it names); the bundled
    /// catalog when omitted.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// The simulated provider to call when the catalog points at one; without it the worker
    /// starts its own in-process.
    #[arg(long, env = "THINKERS_SIM_URL")]
    sim_url: Option<String>,
    /// Share admission budgets with other workers through this Redis (`redis://…`); in-process
    /// budgets when omitted.
    #[arg(long, env = "THINKERS_REDIS_URL")]
    redis: Option<String>,
    /// The key prefix of the shared budgets in Redis.
    #[arg(long, default_value = "thinkers:budget")]
    redis_prefix: String,
    /// The address the workflow service listens on (several processes may share it; register
    /// `http://ADDR` with the Restate server).
    #[arg(long, default_value = "127.0.0.1:9080")]
    listen: std::net::SocketAddr,
    /// Write a journal entry whenever a running workflow has written none for this many
    /// seconds, so the server does not ask it to suspend (keep it well below the server's
    /// `inactivity-timeout`, 60 s by default).
    #[arg(long, default_value_t = 20.0)]
    heartbeat_secs: f64,
}

fn secs(flag: &str, s: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("{flag} must be a positive number of seconds, not {s}"))
}

pub(crate) async fn worker(args: WorkerArgs) -> anyhow::Result<()> {
    let heartbeat = secs("--heartbeat-secs", args.heartbeat_secs)?;
    let (store, _) = args.db.open().await?;
    let catalog = simctl::load_catalog(args.catalog.as_deref())?;
    let (catalog, sim) = simctl::bind_or_use(catalog, args.sim_url.as_deref()).await?;
    if let Some(sim) = &sim {
        eprintln!(
            "worker: calling an in-process simulated provider at {}",
            sim.base_url()
        );
    }
    let engine = RestateEngine::new().heartbeat(heartbeat);
    let mut builder = args
        .caps
        .apply(Runtime::builder(catalog))
        .database(args.db.db.clone())
        .service(Arc::new(engine.steps(&store)))
        .service(Arc::new(engine.response_cache()));
    if let Some(url) = &args.redis {
        let budgets =
            RedisBudgets::connect_with(url, &args.redis_prefix, thinkers_redis::DEFAULT_LEASE_TTL)
                .await
                .with_context(|| format!("connecting to Redis at {url}"))?;
        builder = builder.budgets(Arc::new(budgets));
    }
    // Not registered with `lifecycle`: on a stop signal the service stops, and its runtime is
    // shut down here.
    let runtime = builder.build().await.context("starting the runtime")?;
    restate::serve(&engine, runtime.clone(), &store, args.listen, args.name).await?;
    runtime.shutdown().await?;
    if let Some(sim) = sim {
        sim.shutdown().await.ok();
    }
    Ok(())
}

/// Options of `thinkers status`.
#[derive(Debug, clap::Args)]
pub(crate) struct StatusArgs {
    /// The workflow id `thinkers submit` printed.
    workflow: String,
    /// Print the row as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArgs,
}

pub(crate) async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let id = WorkflowId::parse(&args.workflow)?;
    let (store, workflows) = args.db.open().await?;
    let s = workflows.status(id).await?;
    let calls = match s.run {
        Some(run) => thinkers_store::Store::Postgres(store.clone())
            .records()
            .llm_runs(LlmRunFilter::new().workflow(run))
            .await?
            .len() as u64,
        None => 0,
    };
    if args.json {
        let state = match &s.state {
            WorkflowState::Queued => serde_json::json!({}),
            WorkflowState::Running { worker, since_ms } => {
                serde_json::json!({"worker": worker, "since_ms": since_ms})
            }
            WorkflowState::Succeeded { output } => serde_json::json!({"output": output}),
            WorkflowState::Failed { error } => serde_json::json!({"error": error}),
            WorkflowState::AwaitingApproval { waiting } => serde_json::json!({"waiting": waiting}),
        };
        let row = serde_json::json!({
            "id": s.id.to_string(), "name": s.name, "status": s.state.name(),
            "attempt": s.attempt,
            "run": s.run.map(|r| r.to_string()), "model_calls": calls,
            "submitted_at_ms": s.submitted_at_ms, "finished_at_ms": s.finished_at_ms,
            "state": state,
        });
        println!("{row}");
        return Ok(());
    }
    println!("workflow {} ({})", s.id, s.name);
    println!("  input:   {}", s.input);
    match &s.state {
        WorkflowState::Queued => println!("  status:  queued (no service process runs it yet)"),
        WorkflowState::Running { worker, since_ms } => {
            let since = chrono::DateTime::from_timestamp_millis(*since_ms)
                .map_or_else(|| since_ms.to_string(), |t| t.to_rfc3339());
            println!("  status:  running on worker {worker} since {since}");
        }
        WorkflowState::Succeeded { output } => {
            println!("  status:  succeeded");
            println!("  output:  {output}");
        }
        WorkflowState::Failed { error } => {
            println!("  status:  failed");
            println!("  error:   {error}");
        }
        WorkflowState::AwaitingApproval { waiting } => {
            println!("  status:  awaiting approval (it holds no seat or permit meanwhile)");
            println!("  waiting: {waiting}");
        }
    }
    println!(
        "  rounds:  {} (a round starts on every start, resumption and replay; Restate retries \
         the invocation until it ends)",
        s.attempt
    );
    if let Some(run) = s.run {
        println!("  run:     {run} ({calls} model calls on record)");
        println!("           thinkers trace {run} --db <the same database>");
    }
    Ok(())
}
