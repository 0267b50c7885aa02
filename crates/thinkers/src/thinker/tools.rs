//! The tool phases of a turn: the read-only sweep of the palette, and the tool round (admission,
//! validation, parallel execution, one batch of results).
//!
//! Both run in the loop's own path, after any overridable hook: the sweep after the reconcile
//! hook returns, the admission check ([`admit_call`]) beside argument validation. The sweep is a
//! courtesy (the model is not offered what it may not run); the admission check is the
//! guarantee (a call is refused whatever the palette offered).

use std::sync::Arc;

use serde_json::Value;

use super::artifacts::{self, Artifacts};
use super::state::{RefusedCall, Withheld};
use crate::conversation::ContentBlock;
use crate::job::{BoxJob, JobContext, ScopeGuard};
use crate::llm::{ToolCallView, ToolSpec};
use crate::model::{Depth, Grade};
use crate::tool::{ToolCallContext, ToolOutput, ToolProvider, ToolRegistry, admit_call};
use crate::{Error, Result};

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
        if scope.is_read_only() && !p.read_only() {
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

/// What a tool round needs from the thinker.
pub(crate) struct Round<'a> {
    pub(crate) registry: &'a ToolRegistry,
    pub(crate) cx: &'a JobContext,
    pub(crate) turn: u32,
    pub(crate) grade: Grade,
    pub(crate) pin: Option<Arc<str>>,
    /// The run's depth, handed to the tools as their caller's.
    pub(crate) depth: Depth,
    pub(crate) max_calls: usize,
}

/// The outcome of a tool round: one result per call, in call order, and the refusals.
pub(crate) struct RoundOutcome {
    pub(crate) results: Vec<ContentBlock>,
    pub(crate) refused: Vec<RefusedCall>,
}

enum Slot {
    Done(ContentBlock),
    Running(String, String),
}

/// Run one turn's tool calls: admit and validate each, run every admitted call in parallel as a
/// child in the turn's step, and answer every call id — with its result, or with a correctable
/// error saying why it was refused or failed.
pub(crate) async fn run_round(
    round: Round<'_>,
    calls: &[ToolCallView<'_>],
    register: &mut (dyn FnMut(&str, ToolOutput) -> String + Send),
) -> RoundOutcome {
    let tcx = ToolCallContext {
        parent_grade: Some(round.grade),
        parent_pin: round.pin.as_deref().map(str::to_owned),
        parent_depth: Some(round.depth),
    };
    let mut slots = Vec::with_capacity(calls.len());
    let mut jobs = Vec::new();
    let mut refused = Vec::new();
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
            admit(round.registry, call, round.cx.scope(), &tcx)
        };
        match admitted {
            Ok(job) => {
                jobs.push(job);
                slots.push(Slot::Running(call.id.to_owned(), call.name.to_owned()));
            }
            Err(e) => {
                let reason = e.for_model();
                refused.push(RefusedCall {
                    turn: round.turn,
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
        Ok([job]) => vec![round.cx.run_in_current_step(job).await],
        Err(jobs) => {
            let handles: Vec<_> = jobs
                .into_iter()
                .map(|job| round.cx.submit_in_current_step(job))
                .collect();
            futures::future::join_all(handles).await
        }
    };
    let mut outputs = outputs.into_iter();
    let mut results = Vec::with_capacity(slots.len());
    for slot in slots {
        match slot {
            Slot::Done(block) => results.push(block),
            Slot::Running(id, name) => match outputs.next() {
                Some(Ok(out)) => {
                    let summary = register(&name, out);
                    results.push(ContentBlock::tool_result(id, name, summary));
                }
                Some(Err(e)) => results.push(ContentBlock::tool_error(id, name, e.for_model())),
                None => results.push(ContentBlock::tool_error(
                    id,
                    name,
                    Error::system("tool round", "a call produced no result").for_model(),
                )),
            },
        }
    }
    RoundOutcome { results, refused }
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

/// The admission check, then validation: an unknown tool, a tool the scope forbids, or arguments
/// that do not fit are refused before anything runs.
fn admit(
    registry: &ToolRegistry,
    call: &ToolCallView<'_>,
    scope: &ScopeGuard,
    tcx: &ToolCallContext,
) -> Result<BoxJob<ToolOutput>> {
    let provider: &Arc<dyn ToolProvider> = registry.get(call.name).ok_or_else(|| {
        let known: Vec<&str> = registry.iter().map(|p| p.name()).collect();
        // The name the model wrote is not repeated; the call's id already pairs this refusal
        // with the call.
        Error::invalid_input(
            "tool",
            None,
            format!("no such tool; the tools are: {}", known.join(", ")),
        )
    })?;
    admit_call(provider.as_ref(), scope)?;
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
    provider.instantiate(arguments, tcx)
}
