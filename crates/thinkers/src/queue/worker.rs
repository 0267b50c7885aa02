//! [`Worker`]: claims workflows from the queue and runs them on a local runtime.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{Claim, DEFAULT_QUEUE, WorkflowRegistry};
use crate::runtime::Runtime;
use crate::store::PgStore;
use crate::{Error, Result};

/// How a [`Worker`] claims and holds workflows.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The worker's name, shown by `thinkers status`; unique per process (the default is the
    /// host name, the process id and a random suffix).
    pub name: String,
    /// The queue to claim from.
    pub queue: String,
    /// Workflows run at once.
    pub concurrency: usize,
    /// How long a claim holds without a heartbeat; heartbeats go every third of it. A workflow
    /// of a worker that died is claimed again this long after its last heartbeat.
    pub lease: Duration,
    /// How long an idle worker waits before looking at the queue again.
    pub poll: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        let host = std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "worker".to_owned());
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        Self {
            name: format!("{host}-{}-{}", std::process::id(), &suffix[..6]),
            queue: DEFAULT_QUEUE.to_owned(),
            concurrency: 1,
            lease: Duration::from_secs(30),
            poll: Duration::from_millis(250),
        }
    }
}

/// Claims workflows from a queue and runs them on its runtime (whose recorder should write to
/// the same PostgreSQL database and whose services should include the response cache; see the
/// [module docs](super)).
#[derive(Clone)]
pub struct Worker {
    inner: Arc<Inner>,
}

struct Inner {
    store: PgStore,
    runtime: Runtime,
    registry: WorkflowRegistry,
    config: WorkerConfig,
    finished: AtomicU64,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("config", &self.inner.config)
            .field("registry", &self.inner.registry)
            .finish_non_exhaustive()
    }
}

/// How a claimed workflow's run ended, locally.
enum Ended {
    Finished(std::result::Result<String, String>),
    /// Stopped for a person's decision; what it waits for.
    Paused(String),
    LeaseLost,
}

impl Worker {
    /// A worker over `store`'s queue running `registry`'s workflows on `runtime`.
    pub fn new(
        store: &PgStore,
        runtime: Runtime,
        registry: WorkflowRegistry,
        config: WorkerConfig,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                store: store.clone(),
                runtime,
                registry,
                config: WorkerConfig {
                    concurrency: config.concurrency.max(1),
                    lease: config.lease.max(Duration::from_millis(300)),
                    ..config
                },
                finished: AtomicU64::new(0),
            }),
        }
    }

    /// The worker's configuration.
    pub fn config(&self) -> &WorkerConfig {
        &self.inner.config
    }

    /// Workflows this worker has finished (succeeded or failed) so far.
    pub fn finished(&self) -> u64 {
        self.inner.finished.load(Ordering::Relaxed)
    }

    /// Claim and run workflows until `shutdown` is cancelled, then wait for the running ones to
    /// finish. Database errors while claiming are logged and retried after the poll interval.
    pub async fn run(&self, shutdown: CancellationToken) -> Result<()> {
        let cfg = &self.inner.config;
        tracing::info!(worker = %cfg.name, queue = %cfg.queue, concurrency = cfg.concurrency,
            lease_ms = cfg.lease.as_millis() as u64, "worker started");
        let slots = Arc::new(Semaphore::new(cfg.concurrency));
        let mut running = JoinSet::new();
        loop {
            while running.try_join_next().is_some() {}
            let permit = tokio::select! {
                p = Arc::clone(&slots).acquire_owned() => p.map_err(|_| {
                    Error::system("worker", "the slot semaphore closed")
                })?,
                () = shutdown.cancelled() => break,
            };
            let claimed = self
                .inner
                .store
                .claim_workflow(&cfg.queue, &cfg.name, cfg.lease)
                .await;
            match claimed {
                Ok(Some(claim)) => {
                    let worker = self.clone();
                    running.spawn(async move {
                        worker.run_claim(claim).await;
                        drop(permit);
                    });
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(worker = %cfg.name, error = %e, "claiming failed"),
            }
            drop(permit);
            tokio::select! {
                () = tokio::time::sleep(cfg.poll) => {}
                () = shutdown.cancelled() => break,
            }
        }
        while running.join_next().await.is_some() {}
        tracing::info!(worker = %cfg.name, "worker stopped");
        Ok(())
    }

    async fn run_claim(&self, claim: Claim) {
        let cfg = &self.inner.config;
        tracing::info!(worker = %cfg.name, workflow = %claim.id, name = %claim.name,
            attempt = claim.attempt, "claimed");
        let ended = tokio::select! {
            ended = self.execute(&claim) => ended,
            () = self.hold_lease(&claim) => Ended::LeaseLost,
        };
        let result = match ended {
            Ended::Finished(r) => r,
            Ended::Paused(waiting) => {
                if let Err(e) = self.inner.runtime.flush().await {
                    tracing::warn!(workflow = %claim.id, error = %e,
                        "flushing the run's records failed");
                }
                match self
                    .inner
                    .store
                    .park_workflow(claim.id, &cfg.name, claim.attempt, &waiting)
                    .await
                {
                    Ok(true) => tracing::info!(worker = %cfg.name, workflow = %claim.id,
                        "stopped to wait for a person's approval; no worker holds it now"),
                    Ok(false) => tracing::warn!(workflow = %claim.id,
                        "paused after losing the lease; nothing was stored"),
                    Err(e) => tracing::warn!(workflow = %claim.id, error = %e,
                        "parking the workflow failed; it will be claimed again"),
                }
                return;
            }
            Ended::LeaseLost => {
                tracing::warn!(worker = %cfg.name, workflow = %claim.id,
                    "lost the lease (another worker claimed the workflow); abandoning this run");
                return;
            }
        };
        // The records of the run are in the database before the queue says it finished.
        if let Err(e) = self.inner.runtime.flush().await {
            tracing::warn!(workflow = %claim.id, error = %e, "flushing the run's records failed");
        }
        let stored = self
            .inner
            .store
            .finish_workflow(
                claim.id,
                &cfg.name,
                claim.attempt,
                result.as_ref().map(String::as_str).map_err(String::as_str),
            )
            .await;
        match stored {
            Ok(true) => {
                self.inner.finished.fetch_add(1, Ordering::Relaxed);
                tracing::info!(worker = %cfg.name, workflow = %claim.id,
                    ok = result.is_ok(), "finished");
            }
            Ok(false) => tracing::warn!(workflow = %claim.id,
                "finished after losing the lease; the result was not stored"),
            Err(e) => tracing::warn!(workflow = %claim.id, error = %e,
                "storing the result failed; the workflow will be claimed again"),
        }
    }

    /// Run the claimed workflow to its JSON output or error text.
    async fn execute(&self, claim: &Claim) -> Ended {
        let cfg = &self.inner.config;
        let input: Value = match serde_json::from_str(&claim.input) {
            Ok(v) => v,
            Err(e) => {
                return Ended::Finished(Err(format!("the stored input is not JSON: {e}")));
            }
        };
        // Every workflow is a durable run keyed by its queue id: a replay (a lost lease, a
        // resumed approval) answers finished tool calls from the journal.
        let key = claim.id.to_string();
        let (run, output) = match self.inner.registry.start_durable(
            &claim.name,
            input,
            &key,
            self.inner.runtime.dispatcher(),
        ) {
            Ok(started) => started,
            Err(e) => return Ended::Finished(Err(e.to_string())),
        };
        match self
            .inner
            .store
            .set_workflow_run(claim.id, &cfg.name, claim.attempt, run)
            .await
        {
            Ok(true) => {}
            Ok(false) => return Ended::LeaseLost,
            Err(e) => tracing::warn!(workflow = %claim.id, error = %e, "noting the run failed"),
        }
        match output.await {
            Ok(v) => Ended::Finished(Ok(v.to_string())),
            Err(e @ Error::AwaitingApproval { .. }) => Ended::Paused(e.to_string()),
            Err(e) => Ended::Finished(Err(e.to_string())),
        }
    }

    /// Extend the lease every third of it; returns once the lease is lost.
    async fn hold_lease(&self, claim: &Claim) {
        let cfg = &self.inner.config;
        let mut tick = tokio::time::interval(cfg.lease / 3);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            match self
                .inner
                .store
                .heartbeat_workflow(claim.id, &cfg.name, claim.attempt, cfg.lease)
                .await
            {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => tracing::warn!(workflow = %claim.id, error = %e, "heartbeat failed"),
            }
        }
    }
}
