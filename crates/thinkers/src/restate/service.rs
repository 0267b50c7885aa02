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
//! **Journal order.** Restate replays a journal in the order its commands were created, and
//! checks each command's name (the step: `model <hash>`, `tool <place> <call id>`, `round <n>
//! ask …`). A step is created when a job first asks for it; within one execution a step already
//! journaled (an earlier round) is answered from memory without a new command.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt as _;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::bridge::{Bridges, Request};
use crate::Error;
use crate::queue::{QueueId, WorkflowRegistry};
use crate::runtime::Runtime;
use crate::store::PgStore;

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

/// How a fresh step's body gets its value: from the job that runs it, or computed here.
enum Body {
    Await(oneshot::Receiver<Option<Value>>),
    Compute(BoxFuture<'static, crate::Result<Value>>),
}

/// Who waits for a step's journal entry.
enum Waiter {
    /// A lookup: answered `None` by the step's body when it runs fresh (the slot is then
    /// empty), or the journaled value when the step is replayed.
    Lookup(Arc<Mutex<Option<oneshot::Sender<Option<Value>>>>>),
    /// A completion: told once the entry is journaled.
    Done(oneshot::Sender<()>),
    /// A recorded step's caller: gets the value.
    Record(oneshot::Sender<Value>),
}

type Finished = (String, Result<Json<Option<Value>>, TerminalError>);

/// The journaled steps of one invocation.
struct Journal<'c> {
    runs: FuturesUnordered<BoxFuture<'c, Finished>>,
    /// Fresh steps waiting for their job's value.
    open: HashMap<String, oneshot::Sender<Option<Value>>>,
    waiters: HashMap<String, Vec<Waiter>>,
    /// Every journaled value seen by this execution (`None`: the step was abandoned).
    known: HashMap<String, Option<Value>>,
}

impl<'c> Journal<'c> {
    fn new() -> Self {
        Self {
            runs: FuturesUnordered::new(),
            open: HashMap::new(),
            waiters: HashMap::new(),
            known: HashMap::new(),
        }
    }

    fn start(&mut self, ctx: &'c WorkflowContext<'_>, step: String, body: Body, first: Waiter) {
        let slot = match &first {
            Waiter::Lookup(slot) => Some(Arc::clone(slot)),
            _ => None,
        };
        self.waiters.entry(step.clone()).or_default().push(first);
        let run = ctx
            .run(move || async move {
                // Running the body means the journal does not hold the step: a lookup is told
                // to run it.
                if let Some(reply) =
                    slot.and_then(|s| s.lock().unwrap_or_else(PoisonError::into_inner).take())
                {
                    let _ = reply.send(None);
                }
                match body {
                    Body::Await(value) => Ok(Json(value.await.ok().flatten())),
                    Body::Compute(compute) => Ok(Json(Some(compute.await?))),
                }
            })
            .name(step.clone());
        self.runs.push(Box::pin(async move { (step, run.await) }));
    }

    fn handle(&mut self, ctx: &'c WorkflowContext<'_>, request: Request, round: u32) {
        match request {
            Request::Lookup { step, reply } => {
                if let Some(Some(value)) = self.known.get(&step) {
                    let _ = reply.send(Some(value.clone()));
                } else if self.open.contains_key(&step) {
                    // Its job retries (a failed attempt): the open step waits for its value.
                    let _ = reply.send(None);
                } else {
                    let (tx, rx) = oneshot::channel();
                    self.open.insert(step.clone(), tx);
                    let slot = Arc::new(Mutex::new(Some(reply)));
                    self.start(ctx, step, Body::Await(rx), Waiter::Lookup(slot));
                }
            }
            Request::Complete { step, value, done } => {
                if let Some(tx) = self.open.remove(&step) {
                    let _ = tx.send(Some(value));
                    self.waiters
                        .entry(step)
                        .or_default()
                        .push(Waiter::Done(done));
                } else if let Some(Some(_)) = self.known.get(&step) {
                    let _ = done.send(());
                } else {
                    let compute = Box::pin(async move { Ok(value) });
                    self.start(ctx, step, Body::Compute(compute), Waiter::Done(done));
                }
            }
            Request::Record {
                step,
                compute,
                reply,
            } => {
                let step = format!("round {round} {step}");
                if let Some(Some(value)) = self.known.get(&step) {
                    let _ = reply.send(value.clone());
                } else {
                    self.start(ctx, step, Body::Compute(compute), Waiter::Record(reply));
                }
            }
        }
    }

    fn finished(&mut self, (step, result): Finished) -> Result<(), HandlerError> {
        let value = result?.into_inner();
        self.open.remove(&step);
        for waiter in self.waiters.remove(&step).unwrap_or_default() {
            match waiter {
                Waiter::Lookup(slot) => {
                    // Still there: the body did not run, so the journal answered (a replay).
                    if let Some(reply) = slot.lock().unwrap_or_else(PoisonError::into_inner).take()
                    {
                        let _ = reply.send(value.clone());
                    }
                }
                Waiter::Done(done) => {
                    let _ = done.send(());
                }
                Waiter::Record(reply) => {
                    if let Some(v) = &value {
                        let _ = reply.send(v.clone());
                    }
                }
            }
        }
        self.known.insert(step, value);
        Ok(())
    }

    /// End the round: steps still open (their job was cancelled or never ran) are journaled
    /// as abandoned, and every step is awaited, so the journal is the same on every replay.
    async fn settle(&mut self) -> Result<(), HandlerError> {
        for (_, tx) in self.open.drain() {
            let _ = tx.send(None);
        }
        while let Some(done) = self.runs.next().await {
            self.finished(done)?;
        }
        Ok(())
    }
}

/// Run the workflow to its output, round after round while it waits for approvals.
async fn run_workflow(
    shared: &Shared,
    ctx: &WorkflowContext<'_>,
    submission: Submission,
) -> Result<Value, HandlerError> {
    let key = ctx.key().to_owned();
    let id = QueueId::parse(&key).map_err(|e| TerminalError::new(e.to_string()))?;
    let (_guard, mut requests) = shared.bridges.open(&key);
    let mut journal = Journal::new();
    let mut round = 0u32;
    loop {
        round += 1;
        let attempt = match shared.store.engine_claim(id, &shared.worker).await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(workflow = %key, error = %e, "noting the run in the queue table failed");
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
        let ended = drive(ctx, output, &mut requests, &mut journal, round).await?;
        journal.settle().await?;
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
async fn drive<'c>(
    ctx: &'c WorkflowContext<'_>,
    mut output: BoxFuture<'static, crate::Result<Value>>,
    requests: &mut mpsc::UnboundedReceiver<Request>,
    journal: &mut Journal<'c>,
    round: u32,
) -> Result<crate::Result<Value>, HandlerError> {
    loop {
        tokio::select! {
            ended = &mut output => return Ok(ended),
            Some(request) = requests.recv() => journal.handle(ctx, request, round),
            Some(done) = journal.runs.next(), if !journal.runs.is_empty() => {
                journal.finished(done)?;
            }
        }
    }
}
