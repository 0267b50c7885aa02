//! The Restate workflow `ThinkersWorkflow`: its `run` handler runs a registered workflow on the
//! service process's runtime and turns every step its jobs ask for into a journaled step of the
//! invocation; its `decide` handler resolves the durable promise an approval waits on.
//!
//! **Rounds.** The handler submits the workflow's root as a durable run keyed by the workflow
//! id. When it ends waiting for approvals, the handler awaits one durable promise per pending
//! approval (the invocation holds no job, seat or permit meanwhile, and Restate may suspend
//! it), then submits the root again: the next round, whose finished steps are answered from
//! the journal. Approval answers are journaled per round, so a replay of round 1 reads
//! "pending" as the first execution did.
//!
//! **Journal order.** Every step is an entry of the invocation's step log (`journal.rs`), read
//! back by name whatever order the jobs ask in; the handler reads a round's entries before the
//! round runs and writes its end before awaiting its approvals.

use std::sync::Arc;

use futures::future::BoxFuture;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::bridge::{Bridges, Request};
use super::journal::{self, Journal};
use crate::{WorkflowId, WorkflowRegistry};
use thinkers::Error;
use thinkers::runtime::Runtime;
use thinkers_store::PgStore;

/// What `submit` sends to the `run` handler.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Submission {
    /// The registered workflow name.
    pub(crate) name: String,
    /// Its input.
    pub(crate) input: Value,
}

/// What `decide` receives: the approval whose promise to resolve, and the decision.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DecisionMessage {
    /// The approval id.
    pub(crate) approval: String,
    /// `approved` or `denied`.
    pub(crate) status: String,
}

/// What a service process shares between its invocations.
pub(crate) struct Shared {
    pub(crate) runtime: Runtime,
    pub(crate) registry: WorkflowRegistry,
    pub(crate) store: PgStore,
    pub(crate) bridges: Arc<Bridges>,
    pub(crate) worker: String,
    /// How long a live round may go without a journal command before it writes one (below
    /// the server's inactivity timeout).
    pub(crate) heartbeat: std::time::Duration,
}

/// The workflow service.
pub(crate) struct ThinkersWorkflow {
    pub(crate) shared: Arc<Shared>,
}

// The macro generates the service's plumbing (its service definition and clients) as
// public items of this private module; they are not part of the crate's API.
#[allow(unreachable_pub, missing_docs)]
mod generated {
    use super::*;

    #[restate_sdk::workflow]
    impl ThinkersWorkflow {
        #[handler]
        async fn run(
            &self,
            ctx: WorkflowContext<'_>,
            submission: Json<Submission>,
        ) -> Result<Json<Value>, HandlerError> {
            run_workflow(&self.shared, &ctx, submission.into_inner())
                .await
                .map(Json)
        }

        #[handler]
        async fn decide(
            &self,
            ctx: SharedWorkflowContext<'_>,
            decision: Json<DecisionMessage>,
        ) -> Result<(), HandlerError> {
            let approval = decision.0.approval.clone();
            ctx.resolve_promise::<Json<DecisionMessage>>(&approval, decision);
            Ok(())
        }
    }
}

/// Run the workflow to its output, round after round while it waits for approvals.
async fn run_workflow(
    shared: &Shared,
    ctx: &WorkflowContext<'_>,
    submission: Submission,
) -> Result<Value, HandlerError> {
    let key = ctx.key().to_owned();
    let id = WorkflowId::parse(&key).map_err(|e| TerminalError::new(e.to_string()))?;
    let mut journal = Journal::new();
    let (_guard, mut requests) = shared.bridges.open(&key, journal.known());
    let mut round = 0u32;
    loop {
        round += 1;
        journal.begin_round(ctx, round).await?;
        let known = journal::summary(&journal.known());
        if !known.is_empty() {
            tracing::info!(workflow = %key, round, journaled = ?known,
                "replaying: these steps are answered from the journal");
        }
        let attempt = match shared.store.start_round(id, &shared.worker).await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(workflow = %key, error = %e, "noting the round in the workflows table failed");
                None
            }
        };
        let (root, output) = shared
            .registry
            .start_owned(
                &submission.name,
                submission.input.clone(),
                &key,
                shared.runtime.dispatcher(),
            )
            .map_err(|e| TerminalError::new(e.to_string()))?;
        tracing::info!(worker = %shared.worker, workflow = %key, round, root = %root,
            "running a Restate workflow");
        if let Some(attempt) = attempt
            && let Err(e) = shared
                .store
                .set_workflow_run(id, &shared.worker, attempt, root)
                .await
        {
            tracing::warn!(workflow = %key, error = %e, "noting the run failed");
        }
        let ended = drive(
            ctx,
            output,
            &mut requests,
            &mut journal,
            round,
            shared.heartbeat,
        )
        .await?;
        journal.end_round(ctx, round).await?;
        if let Err(e) = shared.runtime.flush().await {
            tracing::warn!(workflow = %key, error = %e, "flushing the run's records failed");
        }
        let pending = match ended {
            Err(Error::AwaitingApproval { pending }) => pending,
            other => {
                let text = match &other {
                    Ok(v) => Ok(v.to_string()),
                    Err(e) => Err(e.to_string()),
                };
                if let Some(attempt) = attempt {
                    let stored = shared
                        .store
                        .finish_workflow(
                            id,
                            &shared.worker,
                            attempt,
                            text.as_ref().map(String::as_str).map_err(String::as_str),
                        )
                        .await;
                    if let Err(e) = stored {
                        tracing::warn!(workflow = %key, error = %e, "storing the result failed");
                    }
                }
                return other.map_err(|e| TerminalError::new(e.to_string()).into());
            }
        };
        let mut ids: Vec<String> = pending.iter().map(|p| p.id.clone()).collect();
        ids.sort();
        ids.dedup();
        if let Some(attempt) = attempt {
            let waiting = Error::AwaitingApproval { pending }.to_string();
            if let Err(e) = shared
                .store
                .park_workflow(id, &shared.worker, attempt, &waiting)
                .await
            {
                tracing::warn!(workflow = %key, error = %e, "parking the workflow failed");
            }
        }
        tracing::info!(workflow = %key, waiting = ?ids,
            "waiting for a person's decision; nothing of the workflow runs meanwhile");
        for approval in &ids {
            let _decision: Json<DecisionMessage> = ctx.promise(approval).await?;
        }
    }
}

/// Serve the round's journal requests until its root ends.
async fn drive(
    ctx: &WorkflowContext<'_>,
    mut output: BoxFuture<'static, thinkers::Result<Value>>,
    requests: &mut mpsc::UnboundedReceiver<Request>,
    journal: &mut Journal,
    round: u32,
    heartbeat: std::time::Duration,
) -> Result<thinkers::Result<Value>, HandlerError> {
    loop {
        let beat = journal.next_beat(heartbeat);
        tokio::select! {
            ended = &mut output => return Ok(ended),
            Some(request) = requests.recv() => journal.handle(ctx, request, round).await?,
            () = tokio::time::sleep_until(beat) => journal.beat(ctx).await?,
        }
    }
}
