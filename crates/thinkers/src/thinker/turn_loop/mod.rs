//! The thinker loop, implemented once. Families (single-objective today) supply hooks and an
//! answer type; the phases below are the framework's own path:
//!
//! 1. **reconcile** — the family's [`ThinkerHooks::reconcile_tools`] (idempotent, state-based),
//!    then the built-in orchestrators (`thinker::doors`; the catalog doors need a hub);
//! 2. **sweep** — the read-only sweep of the palette (not overridable);
//! 3. **render** — objective, messages, palette and the answer schema (none for a text answer)
//!    into one request;
//! 4. **call** — one model turn through the [`TurnSource`](turn::TurnSource) seam, stamped with the turn ordinal;
//! 5. **tool round** — admission, validation, parallel execution, one batch of results;
//! 6. **final answer** — the answer-shape boundary, artifact refs, guardrails
//!    (for a single-objective thinker: its final-answer phase, `thinker::finish`).

pub(crate) mod conversing;
pub(crate) mod finish;
pub(crate) mod reactive_phase;
mod thinker_core;
pub(crate) mod tool_round;
pub(crate) mod turn;

pub(crate) use thinker_core::ThinkerCore;
pub use thinker_core::{DefaultHooks, ThinkerHooks, ThinkerLimits};

use std::sync::Arc;

use crate::conversation::{
    ContentBlock, Conversation, ConversationId, ConversationService, Message,
};
use crate::job::{FanOut, JobContext};
use crate::llm::call::reasoning_for;
use crate::llm::{ChatResponse, ModelServices, ResponseSchema, ToolCallView, ToolChoice};
use crate::model::{Depth, Grade, Reasoning};
use crate::thinker::declaration::{ThinkerInput, effective_depth};
use crate::thinker::doors;
use crate::thinker::state::ThinkerObserver;
use crate::thinker::tool_round::{Palette, Round, register_artifact, run_round, sweep};
use crate::thinker::turn::TurnRequest;
use crate::tool::ToolRegistry;
use crate::{Error, Result};

/// The answer side of a family: what schema to ask for and what to do with a final answer.
pub(crate) trait AnswerPhase: Send {
    /// What the loop produces.
    type Output: Send;
    /// The answer schema put on this turn's request; `None` asks for plain text (a text
    /// answer, a chat's answer).
    fn response_schema(&self, native_thinking: bool) -> Option<ResponseSchema>;
    /// Whether the schema names artifact refs (the `@` legend is then rendered).
    fn uses_refs(&self) -> bool;
    /// Judge a final answer. `Ok(Some)` ends the run; `Ok(None)` means a correction or nudge
    /// was appended and the loop goes on; `Err` ends the run with a failure.
    fn finish(
        &mut self,
        response: &ChatResponse,
        native_thinking: bool,
        observer: &ThinkerObserver,
        cx: &JobContext,
    ) -> Result<Option<Self::Output>>;

    /// Called at the start of every step, before the request is rendered: a family may add
    /// messages that arrived meanwhile, and may ask for an answer without tools this step.
    /// Whether a step stopped for a person keeps its answer (with the calls) in the
    /// conversation, for the next run to answer (see `answer_calls`). Default: no.
    fn keeps_paused_calls(&self) -> bool {
        false
    }

    fn begin_step(&mut self, observer: &ThinkerObserver) -> StepPlan {
        let _ = observer;
        StepPlan::default()
    }

    /// Called before a tool round with the turn's calls, in call order.
    fn before_round(&mut self, calls: &[ToolCallView<'_>]) {
        let _ = calls;
    }

    /// Called after a tool round with the turn's calls and their results, in call order.
    fn after_round(&mut self, calls: &[ToolCallView<'_>], results: &[ContentBlock]) {
        let _ = (calls, results);
    }
}

/// What a family asks of one step (see [`AnswerPhase::begin_step`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StepPlan {
    /// Answer now: the palette stays on the request (providers want the tools that earlier
    /// calls named) but the model is told not to call any, and calls it makes anyway are not
    /// run; the response goes to [`AnswerPhase::finish`].
    pub(crate) answer_now: bool,
    /// Messages from a person joined the conversation this step: it is saved before the model
    /// is called, so a host that dies during the call still has them.
    pub(crate) arrived: bool,
}

/// One run of the loop over `input`, appending to the observer's conversation (or to the
/// conversation saved under `resume`).
pub(crate) async fn run_loop<P: AnswerPhase>(
    core: &ThinkerCore,
    mut phase: P,
    input: &ThinkerInput,
    resume: Option<&ConversationId>,
    observer: &ThinkerObserver,
    cx: &JobContext,
) -> Result<P::Output> {
    let depth = effective_depth(input.depth, cx);
    let service = conversing::service_for(core, cx);
    conversing::open(core, input, depth, resume, &service, observer).await?;
    let outcome = turns(core, &mut phase, depth, &service, observer, cx).await;
    // Whatever the outcome, what the run added is kept.
    let saved = conversing::save_if_durable(&service, observer).await;
    let out = outcome?;
    saved?;
    Ok(out)
}

pub(crate) async fn turns<P: AnswerPhase>(
    core: &ThinkerCore,
    phase: &mut P,
    depth: Depth,
    service: &ConversationService,
    observer: &ThinkerObserver,
    cx: &JobContext,
) -> Result<P::Output> {
    let mut registry = core.registry.clone();
    let turn_class: std::borrow::Cow<'static, str> = format!("{}.turn", core.class).into();
    let mut door = None;
    // A run that stopped for a person kept its step's calls (a chat): answer them first, the
    // decided ones now decided and the finished ones from the journal.
    if conversing::has_open_calls(observer) {
        core.hooks.reconcile_tools(&mut registry, depth);
        doors::reconcile(core, &mut registry, depth, observer, cx, &mut door);
        let grade = {
            let st = observer.lock();
            st.conversation
                .as_ref()
                .map_or(core.declaration.grade(), |c| c.stamps().grade)
        };
        let before = {
            let st = observer.lock();
            st.conversation
                .as_ref()
                .map_or(0, |c| c.messages().len() - 1)
        };
        let step = Step {
            registry: &registry,
            fan: cx.fan_out(),
            grade,
            depth,
            before,
        };
        answer_calls(core, phase, step, service, observer, cx).await?;
    }
    for _ in 0..core.limits.max_iterations {
        // Phase 1 (overridable), then phase 2 (the framework's own): reconcile, then sweep.
        core.hooks.reconcile_tools(&mut registry, depth);
        doors::reconcile(core, &mut registry, depth, observer, cx, &mut door);
        let plan = phase.begin_step(observer);
        if plan.arrived {
            conversing::save_if_durable(service, observer).await?;
        }
        let fan = cx.fan_out();
        let turn = fan.ordinal();
        let Palette { specs, withheld } = sweep(&registry, cx.scope(), turn);
        // The seat of this turn is what the conversation was stamped with, not the declaration:
        // a conversation keeps the grade and output size it was obtained with.
        let stamps = {
            let st = observer.lock();
            let Some(conv) = st.conversation.as_ref() else {
                return Err(Error::system("thinker loop", "no conversation is open"));
            };
            *conv.stamps()
        };
        let native = native_thinking(core, stamps.grade, stamps.depth, cx);
        let schema = phase.response_schema(native.is_some());
        conversing::compact_if_needed(core, service, observer, &specs, schema.as_ref(), cx).await?;
        let request = {
            let mut st = observer.lock();
            st.withheld.extend(withheld);
            st.turns += 1;
            let Some(conv) = st.conversation.as_ref() else {
                return Err(Error::system("thinker loop", "no conversation is open"));
            };
            let mut request = conversing::render(conv, depth, phase.uses_refs(), &specs);
            request.tools = specs;
            request.tool_choice = if plan.answer_now {
                ToolChoice::None
            } else {
                ToolChoice::Auto
            };
            request.response = schema;
            request
        };
        let response = core
            .turns
            .take(
                TurnRequest {
                    turn,
                    class: turn_class.clone(),
                    request,
                    grade: stamps.grade,
                    pin: native.clone().or_else(|| core.pin.clone()),
                    depth: stamps.depth,
                    output: stamps.output,
                },
                &fan,
            )
            .await?;
        if !response.has_tool_calls() || plan.answer_now {
            if let Some(out) = phase.finish(&response, native.is_some(), observer, cx)? {
                return Ok(out);
            }
            conversing::save_if_durable(service, observer).await?;
            continue;
        }
        // The answer joins the conversation as it is (not copied).
        let before = {
            let mut st = observer.lock();
            let before = st.conversation.as_ref().map_or(0, |c| c.messages().len());
            st.push(response.into_message());
            before
        };
        let step = Step {
            registry: &registry,
            fan,
            grade: stamps.grade,
            depth,
            before,
        };
        answer_calls(core, phase, step, service, observer, cx).await?;
    }
    let transcript = observer.transcript();
    Err(Error::AttemptsExhausted {
        attempts: core.limits.max_iterations,
        last: format!(
            "the thinker reached its iteration limit of {} turns without an accepted answer; \
             what it gathered so far:\n{}",
            core.limits.max_iterations,
            tail(&transcript, 16_000)
        ),
    })
}

/// The step whose calls [`answer_calls`] answers.
struct Step<'a> {
    registry: &'a ToolRegistry,
    /// The turn's step, which its tool calls join.
    fan: FanOut,
    grade: Grade,
    depth: Depth,
    /// The conversation's length before the step's answer joined it.
    before: usize,
}

/// Run the tool calls of the conversation's last message (the model's answer of this step) and
/// add their results, saving a durable conversation. A call that waits for a person ends the
/// run with [`Error::AwaitingApproval`]: the answer is kept for the next run to answer when the
/// phase says so (a chat), else it leaves the conversation again (a replay of a durable run asks
/// the same question, answered by the response cache).
async fn answer_calls<P: AnswerPhase>(
    core: &ThinkerCore,
    phase: &mut P,
    step: Step<'_>,
    service: &ConversationService,
    observer: &ThinkerObserver,
    cx: &JobContext,
) -> Result<()> {
    // The calls are read from a shared snapshot of the messages, dropped before the results
    // join (so that push does not copy the messages).
    let messages = {
        let st = observer.lock();
        st.conversation.as_ref().map(Conversation::shared_messages)
    };
    let Some(asked) = messages.as_deref().and_then(|m| m.last()) else {
        return Err(Error::system("thinker loop", "no conversation is open"));
    };
    let calls = ToolCallView::all(&asked.content);
    let round = Round {
        registry: step.registry,
        cx,
        step: &step.fan,
        grade: step.grade,
        pin: core.pin.clone(),
        depth: step.depth,
        max_calls: core.limits.max_tool_calls_per_turn,
        message: step.before,
    };
    let obs = observer.clone();
    let mut register = move |tool: &str, out| {
        let mut st = obs.lock();
        register_artifact(&mut st.artifacts, tool, out)
    };
    phase.before_round(&calls);
    let outcome = run_round(round, &calls, &mut register).await;
    phase.after_round(&calls, &outcome.results);
    drop(calls);
    drop(messages);
    {
        let mut st = observer.lock();
        st.refused.extend(outcome.refused);
        if let Some(failed) = outcome.failed {
            return Err(failed);
        }
        if !outcome.pending.is_empty() {
            if !phase.keeps_paused_calls()
                && let Some(conv) = st.conversation.as_mut()
            {
                conv.truncate(step.before);
            }
            return Err(Error::AwaitingApproval {
                pending: outcome.pending,
            });
        }
        st.push(Message::tool_results(outcome.results));
    }
    conversing::save_if_durable(service, observer).await
}

/// The entry to pin when this turn is guaranteed a native thinking block: the entry the router
/// serves for the seat (`grade`, the conversation's stamp, or the thinker's pin) thinks natively
/// and reasons at this depth. Pinning keeps the guarantee true for the call the schema was
/// rendered for.
pub(crate) fn native_thinking(
    core: &ThinkerCore,
    grade: Grade,
    depth: Depth,
    cx: &JobContext,
) -> Option<Arc<str>> {
    let services = cx.services().get::<ModelServices>()?;
    let budgets = cx.budgets();
    let entry = services
        .router()
        .resolve(grade, core.pin.as_deref(), budgets.as_ref())
        .ok()?;
    let (_, tokens) = reasoning_for(entry, depth);
    let block = matches!(entry.reasoning(), Reasoning::Tokens(_));
    (entry.thinking() && block && tokens > 0).then(|| entry.shared_id())
}

/// The last `max` bytes of a text.
fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}
