//! Workflows on Restate: a registered workflow
//! ([`crate::WorkflowRegistry`]) runs as a Restate workflow, whose journal makes every
//! model call and every tool call a durable step.
//!
//! A **service process** ([`RestateEngine::serve`], `thinkers worker`) serves
//! the Restate workflow service [`SERVICE`] over HTTP/2; the Restate server invokes it, and any
//! number of processes may serve the same deployment URL (they bind it with `SO_REUSEPORT`,
//! [`reuse_port_listener`], or sit behind a load balancer). Each invocation runs the workflow on
//! the process's [`Runtime`] — its dispatcher, budgets (Redis for shared limits) and PostgreSQL
//! recorder — as a durable run keyed by the workflow id, with two seams pointed at the
//! invocation ([`RestateEngine::steps`] and [`RestateEngine::response_cache`], registered on
//! the runtime):
//!
//! * every **model call** is a journaled step (`ctx.run`) whose value is the provider's answer:
//!   a replay (the process died, the invocation was suspended) is answered from the journal and
//!   sends nothing;
//! * every **tool call** is a journaled step whose value is the journal entry the in-process
//!   durable run keeps (see [`thinkers::durable`]): a finished call never runs again. Sub-thinkers
//!   and doers' children are jobs of the same run, so their calls are steps of the same
//!   invocation and the trajectory's ordinals are those of an in-process run.
//! * a tool call that **needs approval** is asked once per round in the PostgreSQL store (so
//!   `thinkers approvals` lists it; the answer is journaled); a pending one ends the round, and
//!   the invocation awaits a Restate durable promise named by the approval id, holding no job,
//!   seat or permit. `thinkers approve`/`deny` decide in the store and resolve the promise
//!   ([`RestateIngress::decide`]); the next round replays from the journal.
//!
//! Admission is the runtime's: a fresh step's job is admitted (Redis budgets when configured)
//! before it runs; a step answered from the journal takes no permit. A round's journaled steps
//! are read before any of its jobs runs, so a replayed model call knows at admission that its
//! answer is journaled and asks for no seat ([`thinkers::llm::ResponseCache::holds`]).
//!
//! The record: [`RestateIngress::submit`] notes the workflow in the PostgreSQL `workflows`
//! table ([`crate::Workflows`]), and each round notes there where it runs and its
//! root job, so `thinkers status`, `trace` and `cost` read it.
//!
//! Guarantees: only a step in flight when a process died can run twice. Steps are journaled as
//! entries of one log that names them (see `journal.rs`), so a replay answers each job by its
//! step whatever order parallel jobs (a fan-out doer, parallel sub-thinkers) ask in.

mod bridge;
mod client;
mod journal;
mod service;

pub use client::{RestateIngress, register_deployment, reuse_port_listener};

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::WorkflowRegistry;
use thinkers::durable::DurableSteps;
use thinkers::llm::ResponseCacheService;
use thinkers::runtime::Runtime;
use thinkers_store::{PgSteps, PgStore};

/// The Restate service's name (the path segment of its ingress URLs).
pub const SERVICE: &str = "ThinkersWorkflow";

/// The seams a service process registers on its runtime, and the server that serves the
/// workflow service from it.
#[derive(Clone)]
pub struct RestateEngine {
    bridges: Arc<bridge::Bridges>,
    heartbeat: std::time::Duration,
}

/// How long a live round goes without a journal command before it writes one, by default: a
/// third of the Restate server's default inactivity timeout (1 minute).
pub const DEFAULT_HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(20);

impl Default for RestateEngine {
    fn default() -> Self {
        Self {
            bridges: Arc::default(),
            heartbeat: DEFAULT_HEARTBEAT,
        }
    }
}

impl std::fmt::Debug for RestateEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestateEngine")
            .field("heartbeat", &self.heartbeat)
            .finish_non_exhaustive()
    }
}

impl RestateEngine {
    /// A fresh engine (one per service process).
    pub fn new() -> Self {
        Self::default()
    }

    /// Write a journal entry whenever a live round has written none for `every` (default
    /// [`DEFAULT_HEARTBEAT`]). The Restate server asks an invocation that sends nothing for its
    /// inactivity timeout (`[worker.invoker] inactivity-timeout`, 1 minute by default) to
    /// suspend, which cancels the model calls it has in flight (they are sent again when it
    /// resumes); keep `every` well below that timeout.
    pub fn heartbeat(mut self, every: std::time::Duration) -> Self {
        self.heartbeat = every.max(std::time::Duration::from_millis(100));
        self
    }

    /// The journal and approvals to register on the runtime: tool calls of the workflows this
    /// process serves are journaled in their invocation; approvals live in `store`.
    pub fn steps(&self, store: &PgStore) -> DurableSteps {
        DurableSteps::new(Arc::new(bridge::RestateSteps {
            bridges: Arc::clone(&self.bridges),
            store: Arc::new(PgSteps::new(store)),
        }))
    }

    /// The response cache to register on the runtime: model calls of the workflows this
    /// process serves are journaled in their invocation.
    pub fn response_cache(&self) -> ResponseCacheService {
        ResponseCacheService::for_durable_runs(Arc::new(bridge::RestateCache {
            bridges: Arc::clone(&self.bridges),
        }))
    }

    /// Serve the workflow service on `listener` until `shutdown` is cancelled. `runtime` must
    /// have [`RestateEngine::steps`] and [`RestateEngine::response_cache`] of this engine among
    /// its services and record to `store`; `worker` names this process in `thinkers status`.
    pub async fn serve(
        &self,
        runtime: Runtime,
        registry: WorkflowRegistry,
        store: &PgStore,
        worker: impl Into<String>,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) {
        use restate_sdk::prelude::{Endpoint, HttpServer};
        let workflow = service::ThinkersWorkflow {
            shared: Arc::new(service::Shared {
                runtime,
                registry,
                store: store.clone(),
                bridges: Arc::clone(&self.bridges),
                worker: worker.into(),
                heartbeat: self.heartbeat,
            }),
        };
        let endpoint = Endpoint::builder().bind(workflow).build();
        HttpServer::new(endpoint)
            .serve_with_cancel(listener, shutdown.cancelled_owned())
            .await;
    }
}
