//! The tool phases of a turn: the read-only sweep of the palette, and the tool round (admission,
//! validation, parallel execution, one batch of results).
//!
//! Both run in the loop's own path, after any overridable hook: the sweep after the reconcile
//! hook returns, the admission check ([`admit_call`]) beside argument validation. The sweep is a
//! courtesy (the model is not offered what it may not run); the admission check is the
//! guarantee (a call is refused whatever the palette offered).

use std::sync::Arc;

use serde_json::Value;

use crate::PendingCall;
use crate::conversation::ContentBlock;
use crate::durable::{
    self, Approval, ApprovalKind, ApprovalPolicy, ApprovalRequest, ApprovalStatus, DurableSteps,
    Journaled, StepKey, StepOutcome, StepStore,
};
use crate::job::{BoxJob, FanOut, JobContext, ScopeGuard};
use crate::llm::{ToolCallView, ToolSpec};
use crate::model::{Depth, Grade};
use crate::thinker::artifacts::{self, Artifacts};
use crate::thinker::state::{RefusedCall, Withheld};
use crate::tool::{ToolCallContext, ToolOutput, ToolProvider, ToolRegistry, admit_call};
use crate::{Error, ErrorKind, Result};

/// The palette offered in one turn and the tools withheld from it.
#[derive(Debug, Default)]
pub(crate) struct Palette {
    pub(crate) specs: Vec<ToolSpec>,
    pub(crate) withheld: Vec<Withheld>,
}

/// The read-only sweep: under a read-only scope every tool that is not read-only — including
/// ones the thinker declared itself — is withheld from the palette, and each is logged.
pub(crate) fn sweep(registry: &ToolRegistry, scope: &ScopeGuard, turn: u32) -> Palette {
    let mut palette = Palette {
        specs: Vec::with_capacity(registry.len()),
        withheld: Vec::new(),
    };
    for p in registry.iter() {
        if !offers(scope, p.as_ref()) {
            tracing::warn!(
                tool = p.name(),
                turn,
                "withheld a tool that is not read-only from the palette of a read-only scope"
            );
            palette.withheld.push(Withheld {
                turn,
                tool: p.name().to_owned(),
            });
            continue;
        }
        palette.specs.push(p.spec());
    }
    palette
}

/// Whether the palette of a turn in `scope` offers `tool`: everything, except under a read-only
/// scope, where only read-only tools. The sweep and every refusal's list of tools read this one
/// rule, so a refusal never names a tool the palette withheld.
fn offers(scope: &ScopeGuard, tool: &dyn ToolProvider) -> bool {
    !scope.is_read_only() || tool.read_only()
}

/// The tools a model may call in `scope`, for a refusal to list: the ones the palette offered,
/// in registry order.
fn offered_list(registry: &ToolRegistry, scope: &ScopeGuard) -> String {
    let names: Vec<&str> = registry
        .iter()
        .filter(|p| offers(scope, p.as_ref()))
        .map(|p| p.name())
        .collect();
    if names.is_empty() {
        "no tool may be called here".to_owned()
    } else {
        format!("the tools are: {}", names.join(", "))
    }
}

/// What a tool round needs from the thinker.
pub(crate) struct Round<'a> {
    pub(crate) registry: &'a ToolRegistry,
    pub(crate) cx: &'a JobContext,
    /// The turn's step, in which every admitted call runs.
    pub(crate) step: &'a FanOut,
    pub(crate) grade: Grade,
    pub(crate) pin: Option<Arc<str>>,
    /// The run's depth, handed to the tools as their caller's.
    pub(crate) depth: Depth,
    pub(crate) max_calls: usize,
    /// The index of the message holding the calls in the conversation: with the calling job's
    /// place and the call id it keys a call in the journal, so a model that reuses call ids
    /// (`call_0` every turn) never has a later call answered with an earlier one's result.
    pub(crate) message: usize,
}

/// The outcome of a tool round: one result per call, in call order, the refusals, the calls
/// left waiting for a person (their calls have no result: the turn stops there), and the error
/// of a call a person failed the run on (the turn ends with it).
pub(crate) struct RoundOutcome {
    pub(crate) results: Vec<ContentBlock>,
    pub(crate) refused: Vec<RefusedCall>,
    pub(crate) pending: Vec<PendingCall>,
    pub(crate) failed: Option<Error>,
}

enum Slot {
    Done(ContentBlock),
    /// Running: the call id, the tool, and where its end is journaled in a durable run.
    Running(String, String, Option<Ending>),
    /// Answered from the journal of a durable run: registered like a fresh output.
    Journaled(String, String, ToolOutput),
    Pending,
}

/// Where a running call's end is journaled when the call's job could not journal it itself (it
/// timed out, or ran out of attempts): the model read that error, so a replay reads it too.
struct Ending {
    store: Arc<dyn StepStore>,
    key: StepKey,
    tool: String,
    arguments_hash: String,
}

impl Ending {
    /// Journal `e` as the call's end if it is one the job never saw. A cancelled call is not
    /// journaled: its outcome is unknown, and a replay finds it started.
    async fn journal(&self, e: &Error) {
        if !matches!(e.kind(), ErrorKind::Timeout | ErrorKind::AttemptsExhausted) {
            return;
        }
        let entry = durable::JournalEntry {
            tool: self.tool.clone(),
            arguments_hash: self.arguments_hash.clone(),
            outcome: StepOutcome::Error(e.for_model()),
            job: String::new(),
        };
        if let Err(err) = self.store.journal(&self.key, &entry).await {
            tracing::warn!(tool = %self.tool, run = %self.key.run, error = %err,
                "journaling how a tool call ended failed; a replay of this run will find it \
                unfinished");
        }
    }
}

/// Where one admitted call goes.
enum Prepared {
    Run(BoxJob<ToolOutput>, Option<Ending>),
    Slot(Slot),
    Pending(PendingCall),
    /// A person failed the run on this call.
    Fail(Error),
}

/// Run one turn's tool calls: admit and validate each, run every admitted call in parallel as a
/// child in the turn's step, and answer every call id — with its result, or with a correctable
/// error saying why it was refused or failed. In a durable run (see [`crate::durable`]) a call
/// already journaled is answered from the journal, a call that needs approval runs only once a
/// person approved it (a denial is its result; an undecided one is left pending), and every call
/// that runs is journaled.
pub(crate) async fn run_round(
    round: Round<'_>,
    calls: &[ToolCallView<'_>],
    register: &mut (dyn FnMut(&str, ToolOutput) -> String + Send),
) -> RoundOutcome {
    let tcx = ToolCallContext::of_caller(
        round.grade,
        round.pin.as_deref().map(str::to_owned),
        Some(round.depth),
    );
    let steps = Steps::of(round.cx, round.message);
    let mut slots = Vec::with_capacity(calls.len());
    let mut jobs = Vec::new();
    let mut refused = Vec::new();
    let mut pending = Vec::new();
    let mut failed = None;
    for (i, call) in calls.iter().enumerate() {
        let admitted = if i >= round.max_calls {
            Err(Error::invalid_input(
                "tool_calls",
                None,
                format!(
                    "at most {} tool calls run in one turn; this call was not run — make it \
                     again in a later turn if it is still needed",
                    round.max_calls
                ),
            ))
        } else {
            admit(
                round.registry,
                call,
                round.cx.scope(),
                &tcx,
                steps.policy.as_deref(),
            )
        };
        let prepared = match admitted {
            Ok(admitted) => steps.prepare(call, admitted, round.cx).await,
            Err(e) => Err(e),
        };
        match prepared {
            Ok(Prepared::Run(job, ending)) => {
                jobs.push(job);
                slots.push(Slot::Running(
                    call.id.to_owned(),
                    call.name.to_owned(),
                    ending,
                ));
            }
            Ok(Prepared::Slot(slot)) => slots.push(slot),
            Ok(Prepared::Fail(e)) => {
                slots.push(Slot::Done(ContentBlock::tool_error(
                    call.id,
                    call.name,
                    e.for_model(),
                )));
                failed.get_or_insert(e);
            }
            Ok(Prepared::Pending(p)) => {
                // The pause is a job of the tool's class in the trajectory, recorded
                // `awaiting_approval`; it holds nothing and ends at once.
                jobs.push(BoxJob::new(durable::PausedCall::new(p.clone())));
                pending.push(p);
                slots.push(Slot::Pending);
            }
            Err(e) => {
                let reason = e.for_model();
                refused.push(RefusedCall {
                    turn: round.step.ordinal(),
                    call_id: call.id.to_owned(),
                    tool: call.name.to_owned(),
                    reason: reason.clone(),
                });
                slots.push(Slot::Done(ContentBlock::tool_error(
                    call.id, call.name, reason,
                )));
            }
        }
    }
    // Every admitted call runs as a child in the turn's step: several in parallel, each on its
    // own task; a lone one in this task, as nothing runs beside it.
    let outputs = match <[_; 1]>::try_from(jobs) {
        Ok([job]) => vec![round.step.run(job).await],
        Err(jobs) => {
            let handles: Vec<_> = jobs.into_iter().map(|job| round.step.submit(job)).collect();
            futures::future::join_all(handles).await
        }
    };
    let mut outputs = outputs.into_iter();
    let mut results = Vec::with_capacity(slots.len());
    for slot in slots {
        match slot {
            Slot::Done(block) => results.push(block),
            Slot::Pending => drop(outputs.next()),
            Slot::Journaled(id, name, out) => {
                let summary = register(&name, out);
                results.push(ContentBlock::tool_result(id, name, summary));
            }
            Slot::Running(id, name, ending) => match outputs.next() {
                Some(Ok(out)) => {
                    let summary = register(&name, out);
                    results.push(ContentBlock::tool_result(id, name, summary));
                }
                Some(Err(e)) => {
                    if let Some(ending) = ending {
                        ending.journal(&e).await;
                    }
                    results.push(ContentBlock::tool_error(id, name, e.for_model()));
                }
                None => results.push(ContentBlock::tool_error(
                    id,
                    name,
                    Error::system("tool round", "a call produced no result").for_model(),
                )),
            },
        }
    }
    RoundOutcome {
        results,
        refused,
        pending,
        failed,
    }
}

/// What the round reads from the dispatcher's services for durable steps and approval.
struct Steps {
    store: Option<Arc<dyn StepStore>>,
    policy: Option<Arc<ApprovalPolicy>>,
    run: String,
    place: String,
    durable: bool,
}

impl Steps {
    fn of(cx: &JobContext, message: usize) -> Self {
        let store = cx
            .services()
            .get::<DurableSteps>()
            .map(|d| Arc::clone(d.store()));
        let policy = cx.services().get::<ApprovalPolicy>();
        let durable = durable::journals(cx);
        let (run, place) = durable::run_key_of(cx);
        let place = format!("{place}#{message}");
        Self {
            store,
            policy,
            run,
            place,
            durable,
        }
    }

    fn key(&self, call: &ToolCallView<'_>) -> StepKey {
        StepKey {
            run: self.run.clone(),
            place: self.place.clone(),
            call_id: call.id.to_owned(),
        }
    }

    /// Journal lookup, then a person's decision where one is needed, then the job: journaled in
    /// a durable run (a call that is not read-only before it runs as well as after), and given
    /// its idempotency key in every run. A store that cannot be read refuses the call rather
    /// than risk running it twice or unapproved.
    async fn prepare(
        &self,
        call: &ToolCallView<'_>,
        admitted: Admitted,
        cx: &JobContext,
    ) -> Result<Prepared> {
        let Admitted {
            job,
            needs_approval,
            effect,
            idempotent,
            arguments_hash,
            arguments,
        } = admitted;
        let key = self.key(call);
        let call_job = |job, store: Option<&Arc<dyn StepStore>>, approval| {
            let ending = store.map(|store| Ending {
                store: Arc::clone(store),
                key: key.clone(),
                tool: call.name.to_owned(),
                arguments_hash: arguments_hash.clone(),
            });
            let job = BoxJob::new(Journaled {
                inner: job,
                store: store.map(Arc::clone),
                idempotency_key: durable::idempotency_key(&key),
                key: key.clone(),
                tool: call.name.to_owned(),
                arguments_hash: arguments_hash.clone(),
                effect,
                approval,
            });
            Prepared::Run(job, ending)
        };
        let store = match (&self.store, self.durable || needs_approval) {
            (Some(store), true) => store,
            (None, true) if needs_approval => {
                tracing::warn!(
                    tool = call.name,
                    "a tool call needs approval, but this runtime \
                    keeps no store to wait in; the call was refused"
                );
                return Err(Error::invalid_input(
                    "tool",
                    Some(call.name.to_owned()),
                    "this call needs a person's approval and none can be asked here; do not \
                     make it again",
                ));
            }
            _ => return Ok(call_job(job, None, None)),
        };
        let journaled = if self.durable {
            store.journaled(&key).await?
        } else {
            None
        };
        let ask = |kind| ApprovalRequest {
            key: key.clone(),
            kind,
            tool: call.name.to_owned(),
            arguments: arguments.clone(),
            arguments_hash: arguments_hash.clone(),
            job: cx.id().to_string(),
            workflow: cx.workflow().to_string(),
            read_only_scope: cx.scope().is_read_only(),
        };
        let mut approval = None;
        match journaled {
            Some(entry) if entry.tool == call.name && entry.arguments_hash == arguments_hash => {
                match entry.outcome {
                    StepOutcome::Output(json) => {
                        return Ok(Prepared::Slot(Slot::Journaled(
                            call.id.to_owned(),
                            call.name.to_owned(),
                            ToolOutput {
                                typed: Arc::new(json.clone()),
                                json,
                            },
                        )));
                    }
                    StepOutcome::Error(text) => {
                        return Ok(Prepared::Slot(Slot::Done(ContentBlock::tool_error(
                            call.id, call.name, text,
                        ))));
                    }
                    StepOutcome::Started if idempotent => {
                        tracing::info!(tool = call.name, run = %key.run, place = %key.place,
                            call = %key.call_id, "a call that started and never finished runs \
                            again with the same idempotency key (the tool is idempotent)");
                    }
                    StepOutcome::Started => {
                        tracing::warn!(tool = call.name, run = %key.run, place = %key.place,
                            call = %key.call_id, "a call started and never finished: its \
                            outcome is unknown, and it runs again only if a person decides so");
                        let asked = store.ask(&ask(ApprovalKind::OutcomeUnknown)).await?;
                        match decided(store, &key, call, &arguments_hash, asked).await? {
                            Decided::Run(a) => approval = Some(a),
                            Decided::Answer(prepared) => return Ok(prepared),
                        }
                    }
                }
            }
            Some(_) => {
                tracing::warn!(tool = call.name, run = %key.run, place = %key.place,
                    call = %key.call_id, "the journal holds another call at this place (the \
                    replay diverged); the call runs");
            }
            None => {}
        }
        if needs_approval {
            let asked = store.ask(&ask(ApprovalKind::Approval)).await?;
            match decided(store, &key, call, &arguments_hash, asked).await? {
                Decided::Run(a) => approval = approval.or(Some(a)),
                Decided::Answer(prepared) => return Ok(prepared),
            }
        }
        if !self.durable && approval.is_none() {
            return Ok(call_job(job, None, None));
        }
        Ok(call_job(job, Some(store), approval))
    }
}

/// What a person's decision on a call leads to.
enum Decided {
    /// The call runs (approved).
    Run(Approval),
    /// The call does not run: it waits, is answered, or fails the run.
    Answer(Prepared),
}

/// What `asked`'s status means for `call`. A skipped call is journaled with the result the
/// person stated, so every later replay reads it from the journal.
async fn decided(
    store: &Arc<dyn StepStore>,
    key: &StepKey,
    call: &ToolCallView<'_>,
    arguments_hash: &str,
    asked: Approval,
) -> Result<Decided> {
    let answer = |slot| Ok(Decided::Answer(Prepared::Slot(slot)));
    match asked.status {
        ApprovalStatus::Approved => Ok(Decided::Run(asked)),
        ApprovalStatus::Pending => {
            tracing::info!(tool = call.name, approval = %asked.id, kind = asked.kind.as_str(),
                "a tool call waits for a person's decision");
            Ok(Decided::Answer(Prepared::Pending(PendingCall {
                id: asked.id,
                tool: call.name.to_owned(),
                call_id: call.id.to_owned(),
            })))
        }
        ApprovalStatus::Denied => answer(Slot::Done(ContentBlock::tool_error(
            call.id,
            call.name,
            durable::denial_text(asked.reason.as_deref()),
        ))),
        ApprovalStatus::Skipped => {
            let json = Value::String(asked.reason.unwrap_or_default());
            let entry = durable::JournalEntry {
                tool: call.name.to_owned(),
                arguments_hash: arguments_hash.to_owned(),
                outcome: StepOutcome::Output(json.clone()),
                job: format!("approval:{}", asked.id),
            };
            store.journal(key, &entry).await?;
            answer(Slot::Journaled(
                call.id.to_owned(),
                call.name.to_owned(),
                ToolOutput {
                    typed: Arc::new(json.clone()),
                    json,
                },
            ))
        }
        ApprovalStatus::Failed => Ok(Decided::Answer(Prepared::Fail(Error::external(
            call.name,
            "a person's decision",
            format!(
                "a person failed the run on this call (approval {}): {}",
                asked.id,
                asked.reason.as_deref().unwrap_or("no reason given")
            ),
        )))),
    }
}

/// Register an output as an artifact and return what the model reads for it.
pub(crate) fn register_artifact(artifacts: &mut Artifacts, tool: &str, out: ToolOutput) -> String {
    let reference = artifacts.register(tool, out);
    match artifacts.get(&reference) {
        Some(artifact) => artifacts::summary(&reference, &artifact.output),
        // `register` just stored it; should that ever not hold, the model still gets the ref.
        None => format!("[artifact {reference}]"),
    }
}

/// An admitted call: its job, whether it needs a person's approval, whether it has effects
/// (the tool is not read-only) and whether they may be repeated with the same key, and its
/// arguments.
struct Admitted {
    job: BoxJob<ToolOutput>,
    needs_approval: bool,
    effect: bool,
    idempotent: bool,
    arguments_hash: String,
    arguments: Value,
}

/// The admission check, then validation: an unknown tool, a tool the scope forbids, or arguments
/// that do not fit are refused before anything runs. Then whether the call needs approval: the
/// tool's own say, or the deployment's policy.
fn admit(
    registry: &ToolRegistry,
    call: &ToolCallView<'_>,
    scope: &ScopeGuard,
    tcx: &ToolCallContext,
    policy: Option<&ApprovalPolicy>,
) -> Result<Admitted> {
    // Neither refusal repeats the name the model wrote (the call's id pairs the refusal with the
    // call), and each lists only the tools the palette offered in this scope.
    let provider: &Arc<dyn ToolProvider> = registry.get(call.name).ok_or_else(|| {
        Error::invalid_input(
            "tool",
            None,
            format!("no such tool; {}", offered_list(registry, scope)),
        )
    })?;
    // The admission check is the guarantee (and logs the refusal); for a tool the sweep
    // withheld, the model reads which tools it may use instead of the name of one it may not.
    admit_call(provider.as_ref(), scope).map_err(|refused| {
        if offers(scope, provider.as_ref()) {
            return refused;
        }
        Error::invalid_input(
            "tool",
            None,
            format!(
                "this tool has side effects and the current scope is read-only; {}",
                offered_list(registry, scope)
            ),
        )
        .with_source(refused)
    })?;
    let parsed;
    let arguments = match call.arguments {
        Value::String(s) => {
            parsed = serde_json::from_str(s).map_err(|_| {
                Error::invalid_input(
                    "arguments",
                    None,
                    "the arguments were not a JSON object; send them as an object matching the \
                     tool's schema",
                )
            })?;
            &parsed
        }
        other => other,
    };
    let job = provider.instantiate(arguments, tcx)?;
    let needs_approval = provider.needs_approval(arguments)
        || policy.is_some_and(|p| p.requires(provider.name(), arguments, provider.read_only()));
    Ok(Admitted {
        job,
        needs_approval,
        effect: !provider.read_only(),
        idempotent: provider.idempotent(),
        arguments_hash: durable::arguments_hash(call.arguments),
        arguments: arguments.clone(),
    })
}
