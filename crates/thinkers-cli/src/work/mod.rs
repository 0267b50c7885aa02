//! `thinkers submit`, `thinkers worker` and `thinkers status`: workflows on a PostgreSQL queue,
//! run by any number of worker processes.

mod errands;
#[cfg(feature = "restate")]
mod restate;
mod workflows;

pub(crate) use workflows::registry;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use thinkers::Runtime;
use thinkers::dispatch::RedisBudgets;
use thinkers::llm::ResponseCacheService;
use thinkers::queue::{
    DEFAULT_MAX_ATTEMPTS, DEFAULT_QUEUE, QueueId, Worker, WorkerConfig, WorkflowQueue,
    WorkflowState,
};
use thinkers::store::{LlmRunFilter, PgResponseCache, PgStore};
use tokio_util::sync::CancellationToken;

use crate::simctl;

/// Where the queue is.
#[derive(Debug, clap::Args)]
pub(crate) struct QueueArgs {
    /// The PostgreSQL database of the queue and the records (`postgres://…`).
    #[arg(long, env = "THINKERS_DB")]
    db: String,
    /// The queue's name.
    #[arg(long, default_value = DEFAULT_QUEUE)]
    queue: String,
}

impl QueueArgs {
    async fn open(&self) -> anyhow::Result<(PgStore, WorkflowQueue)> {
        if !(self.db.starts_with("postgres://") || self.db.starts_with("postgresql://")) {
            bail!(
                "--db must be a postgres:// URL (the queue lives in PostgreSQL), not `{}`",
                self.db
            );
        }
        let store = PgStore::open(&self.db)
            .await
            .context("opening the PostgreSQL database of --db")?;
        let queue = WorkflowQueue::new(&store).named(self.queue.clone());
        Ok((store, queue))
    }
}

/// Which engine runs the workflows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum Engine {
    /// The PostgreSQL lease queue (`thinkers worker` processes claim rows).
    #[default]
    Postgres,
    /// A Restate server (`thinkers worker --engine restate` processes serve its workflow
    /// service; needs the `restate` feature).
    Restate,
}

/// The queue prefix of workflows on Restate (`thinkers::restate::QUEUE_PREFIX`, which only a
/// build with the `restate` feature has; a build without it still reads their rows).
const RESTATE_QUEUE_PREFIX: &str = "restate:";

#[cfg(all(test, feature = "restate"))]
#[test]
fn the_restate_prefix_is_the_engines() {
    assert_eq!(RESTATE_QUEUE_PREFIX, thinkers::restate::QUEUE_PREFIX);
}

/// Where the Restate server is, for `--engine restate`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RestateArgs {
    /// The Restate server's ingress URL (`http://host:8080`).
    #[arg(long = "restate", env = "THINKERS_RESTATE_URL")]
    pub(crate) url: Option<String>,
}

impl RestateArgs {
    #[cfg(feature = "restate")]
    pub(crate) fn ingress(&self) -> anyhow::Result<thinkers::restate::RestateIngress> {
        let url = self.url.as_deref().context(
            "the workflow runs on Restate: pass its ingress URL with --restate (or \
             THINKERS_RESTATE_URL)",
        )?;
        Ok(thinkers::restate::RestateIngress::new(url))
    }
}

#[cfg(not(feature = "restate"))]
fn no_restate() -> anyhow::Error {
    anyhow::anyhow!("--engine restate needs a thinkers built with the `restate` feature")
}

/// Options of `thinkers submit`.
#[derive(Debug, clap::Args)]
pub(crate) struct SubmitArgs {
    /// The registered workflow: `chain` (a doer) or `explain` (a thinker).
    name: String,
    /// The workflow's input as JSON.
    #[arg(long, default_value = "{}")]
    input: String,
    /// How many times the workflow may be claimed (a claim whose worker dies counts).
    #[arg(long, default_value_t = DEFAULT_MAX_ATTEMPTS)]
    max_attempts: u32,
    /// The engine that runs it.
    #[arg(long, value_enum, default_value_t = Engine::Postgres)]
    engine: Engine,
    #[command(flatten)]
    restate: RestateArgs,
    #[command(flatten)]
    queue: QueueArgs,
}

pub(crate) async fn submit(args: SubmitArgs) -> anyhow::Result<()> {
    let input: serde_json::Value = serde_json::from_str(&args.input)
        .with_context(|| format!("--input is not JSON: {}", args.input))?;
    let registry = workflows::registry();
    // Name and input are checked before connecting, so a typo fails fast.
    registry.check(&args.name, &input)?;
    let (_, queue) = args.queue.open().await?;
    let id = match args.engine {
        Engine::Postgres => {
            queue
                .max_attempts(args.max_attempts)
                .submit(&registry, &args.name, input)
                .await?
        }
        #[cfg(feature = "restate")]
        Engine::Restate => {
            args.restate
                .ingress()?
                .submit(&queue, &registry, &args.name, input)
                .await?
        }
        #[cfg(not(feature = "restate"))]
        Engine::Restate => return Err(no_restate()),
    };
    println!("{id}");
    Ok(())
}

/// Options of `thinkers worker`.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkerArgs {
    #[command(flatten)]
    queue: QueueArgs,
    #[command(flatten)]
    caps: crate::caps::CapArgs,
    /// Workflows run at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Seconds a claim holds without a heartbeat (heartbeats go every third of it).
    #[arg(long, default_value_t = 30.0)]
    lease_secs: f64,
    /// Seconds an idle worker waits before looking at the queue again.
    #[arg(long, default_value_t = 0.25)]
    poll_secs: f64,
    /// The worker's name (default: host, process id and a random suffix).
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
    /// The engine whose workflows to run: claim from the PostgreSQL queue, or serve the Restate
    /// workflow service on --listen.
    #[arg(long, value_enum, default_value_t = Engine::Postgres)]
    engine: Engine,
    /// With `--engine restate`: the address the workflow service listens on (several
    /// processes may share it; register `http://ADDR` with the Restate server).
    #[arg(long, default_value = "127.0.0.1:9080")]
    listen: std::net::SocketAddr,
    /// With `--engine restate`: write a journal entry whenever a running workflow has written
    /// none for this many seconds, so the server does not ask it to suspend (keep it well below
    /// the server's `inactivity-timeout`, 60 s by default).
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
    let lease = secs("--lease-secs", args.lease_secs)?;
    let poll = secs("--poll-secs", args.poll_secs)?;
    let (store, _) = args.queue.open().await?;
    let catalog = simctl::load_catalog(args.catalog.as_deref())?;
    let (catalog, sim) = simctl::bind_or_use(catalog, args.sim_url.as_deref()).await?;
    if let Some(sim) = &sim {
        eprintln!(
            "worker: calling an in-process simulated provider at {}",
            sim.base_url()
        );
    }
    let mut builder = args
        .caps
        .apply(Runtime::builder(catalog))
        .database(args.queue.db.clone())
        .service(Arc::new(ResponseCacheService::new(Arc::new(
            PgResponseCache::new(&store),
        ))));
    #[cfg(feature = "restate")]
    let engine = thinkers::restate::RestateEngine::new()
        .heartbeat(secs("--heartbeat-secs", args.heartbeat_secs)?);
    match args.engine {
        Engine::Postgres => {}
        #[cfg(feature = "restate")]
        Engine::Restate => {
            builder = builder
                .service(Arc::new(engine.steps(&store)))
                .service(Arc::new(engine.response_cache()));
        }
        #[cfg(not(feature = "restate"))]
        Engine::Restate => return Err(no_restate()),
    }
    if let Some(url) = &args.redis {
        let budgets = RedisBudgets::connect_with(
            url,
            &args.redis_prefix,
            thinkers::dispatch::DEFAULT_LEASE_TTL,
        )
        .await
        .with_context(|| format!("connecting to Redis at {url}"))?;
        builder = builder.budgets(Arc::new(budgets));
    }
    // Not registered with `lifecycle`: on a stop signal the worker drains (claims nothing more
    // and lets its running workflows finish), then shuts its runtime down itself.
    let runtime = builder.build().await.context("starting the runtime")?;
    #[cfg(feature = "restate")]
    if args.engine == Engine::Restate {
        restate::serve(&engine, runtime.clone(), &store, args.listen, args.name).await?;
        runtime.shutdown().await?;
        if let Some(sim) = sim {
            sim.shutdown().await.ok();
        }
        return Ok(());
    }
    let mut config = WorkerConfig {
        queue: args.queue.queue.clone(),
        concurrency: args.concurrency,
        lease,
        poll,
        ..WorkerConfig::default()
    };
    if let Some(name) = args.name {
        config.name = name;
    }
    let worker = Worker::new(&store, runtime.clone(), workflows::registry(), config);
    eprintln!(
        "worker {} claiming from queue `{}` (concurrency {}, lease {:.1} s)",
        worker.config().name,
        worker.config().queue,
        worker.config().concurrency,
        lease.as_secs_f64()
    );
    let shutdown = CancellationToken::new();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        crate::lifecycle::stop_requested().await;
        eprintln!("worker: stopping after the running workflows finish");
        on_signal.cancel();
    });
    worker.run(shutdown).await?;
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
    queue: QueueArgs,
}

pub(crate) async fn status(args: StatusArgs) -> anyhow::Result<()> {
    let id = QueueId::parse(&args.workflow)?;
    let (store, queue) = args.queue.open().await?;
    let s = queue.status(id).await?;
    let (calls, hits) = match s.run {
        Some(run) => {
            let runs = thinkers::store::Store::Postgres(store.clone())
                .records()
                .llm_runs(LlmRunFilter::new().workflow(run))
                .await?;
            (
                runs.len() as u64,
                PgResponseCache::new(&store).hits(run).await?,
            )
        }
        None => (0, 0),
    };
    // Restate retries an invocation until it ends: its rows carry no attempt limit of ours.
    let on_restate = s.queue.starts_with(RESTATE_QUEUE_PREFIX);
    if args.json {
        let state = match &s.state {
            WorkflowState::Queued => serde_json::json!({}),
            WorkflowState::Running {
                worker,
                since_ms,
                lease_expired,
            } => {
                serde_json::json!({"worker": worker, "since_ms": since_ms, "lease_expired": lease_expired})
            }
            WorkflowState::Succeeded { output } => serde_json::json!({"output": output}),
            WorkflowState::Failed { error } => serde_json::json!({"error": error}),
            WorkflowState::AwaitingApproval { waiting } => serde_json::json!({"waiting": waiting}),
        };
        let row = serde_json::json!({
            "id": s.id.to_string(), "name": s.name, "queue": s.queue, "status": s.state.name(),
            "attempt": s.attempt, "max_attempts": (!on_restate).then_some(s.max_attempts),
            "run": s.run.map(|r| r.to_string()), "model_calls": calls, "cache_hits": hits,
            "submitted_at_ms": s.submitted_at_ms, "finished_at_ms": s.finished_at_ms,
            "state": state,
        });
        println!("{row}");
        return Ok(());
    }
    println!("workflow {} ({}) on queue `{}`", s.id, s.name, s.queue);
    println!("  input:   {}", s.input);
    match &s.state {
        WorkflowState::Queued => println!("  status:  queued"),
        WorkflowState::Running {
            worker,
            since_ms,
            lease_expired,
        } => {
            let since = chrono::DateTime::from_timestamp_millis(*since_ms)
                .map_or_else(|| since_ms.to_string(), |t| t.to_rfc3339());
            println!("  status:  running on worker {worker} since {since}");
            if *lease_expired {
                println!(
                    "           (its lease has passed: the worker stopped answering; the next \
                     worker to look claims it again)"
                );
            }
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
            println!("  status:  awaiting approval (no worker holds it)");
            println!("  waiting: {waiting}");
        }
    }
    if on_restate {
        println!(
            "  attempt: {} (Restate retries the invocation until it ends)",
            s.attempt
        );
    } else {
        println!("  attempt: {} of {}", s.attempt, s.max_attempts);
    }
    if let Some(run) = s.run {
        println!("  run:     {run} ({calls} model calls, {hits} answered from the cache)");
        println!("           thinkers trace {run} --db <the same database>");
    }
    Ok(())
}
