//! The one-call exchange shared by the loopless families (toolless and decision thinkers): one
//! model call per candidate answer, each an [`crate::llm::LlmCall`] child in its own step (through
//! the thinker's [`crate::thinker::TurnSource`]), judged at the answer-shape boundary, checked,
//! and corrected a bounded number of times. No tools are ever offered.

use serde_json::Value;

use super::GuardrailRefusal;
use crate::conversation::{ContentBlock, Conversation, Message, Objective, Stamps};
use crate::job::JobContext;
use crate::llm::{ChatResponse, ResponseSchema};
use crate::model::Depth;
use crate::thinker::answer::Judgement;
use crate::thinker::declaration::effective_depth;
use crate::thinker::events::publish_answer;
use crate::thinker::guardrail::Verdict;
use crate::thinker::state::ThinkerObserver;
use crate::thinker::turn::TurnRequest;
use crate::thinker::turn_loop::{ThinkerCore, native_thinking};
use crate::tool::ToolOutput;
use crate::{Error, Result};

/// What a loopless family asks for and how it judges what comes back.
pub(crate) trait Contract: Send + Sync {
    /// The typed answer.
    type Output: Clone + Send + Sync + 'static;
    /// The answer schema (under native thinking, without the reasoning the block supplies);
    /// `None` asks for the answer as text.
    fn schema(&self, native_thinking: bool) -> Option<ResponseSchema>;
    /// The answer-shape boundary (and any check that is part of the shape, such as option ids).
    fn judge(&self, text: &str, thinking: Option<&str>) -> Judgement<Self::Output>;
    /// The declared guardrails, in order; the first refusal wins.
    fn check(&self, value: &Self::Output) -> Verdict;
}

/// One exchange: what to ask and under which bounds.
pub(crate) struct Exchange<'a> {
    pub(crate) core: &'a ThinkerCore,
    /// The user message (the rendered input).
    pub(crate) prompt: String,
    /// The requested depth (clamped to a calling thinker's).
    pub(crate) depth: Depth,
    /// Ask for log-probabilities with this many alternatives per token.
    pub(crate) logprobs: Option<u8>,
    pub(crate) observer: &'a ThinkerObserver,
}

/// An accepted answer and the response that carried it.
pub(crate) struct Accepted<T> {
    pub(crate) value: T,
    pub(crate) response: ChatResponse,
}

/// What the model is told when it answered nothing, when an answer schema was requested.
const NUDGE: &str = "No answer was given. Answer with one JSON object that fits the requested \
answer schema.";

/// The same, when the answer is text.
const TEXT_NUDGE: &str = "No answer was given. Write your answer.";

/// Run one exchange to an accepted answer, or to the failure that ends it: a wrong shape past
/// `limits.max_answer_corrections`, a guardrail refusal past `limits.max_guardrail_corrections`
/// (failing with the last refusal, a [`GuardrailRefusal`] on the error's source), or a failed
/// model call.
///
/// The conversation is new for every run and kept on the observer (transcript, reasoning); an
/// accepted answer is registered as an artifact under the thinker's class and published when
/// the thinker was submitted directly.
pub(crate) async fn exchange<C: Contract>(
    ex: Exchange<'_>,
    contract: &C,
    cx: &JobContext,
) -> Result<Accepted<C::Output>> {
    let core = ex.core;
    let depth = effective_depth(ex.depth, cx);
    let declaration = &core.declaration;
    let mut conversation = Conversation::new(
        Stamps::new(declaration.grade(), depth, declaration.output()),
        false,
    );
    conversation
        .objective_mut()
        .put(Objective::TASK, core.objective.clone());
    conversation.push(Message::user_text(ex.prompt));
    ex.observer.lock().conversation = Some(conversation);

    let limits = core.limits;
    let (mut shape_corrections, mut guardrail_corrections) = (0u32, 0u32);
    loop {
        let step = cx.fan_out();
        // Every call reads its seat from the conversation's stamps, as the loop's turns do.
        let (mut request, stamps) = {
            let mut st = ex.observer.lock();
            st.turns += 1;
            let Some(conv) = st.conversation.as_ref() else {
                return Err(Error::system("toolless thinker", "no conversation is open"));
            };
            // No tools and no refs: the only guidance is the depth's line, where it says
            // something a model acts on.
            let stamps = *conv.stamps();
            (
                crate::thinker::conversing::render(conv, stamps.depth, false, &[]),
                stamps,
            )
        };
        let native = native_thinking(core, stamps.grade, stamps.depth, cx);
        request.response = contract.schema(native.is_some());
        let nudge = if request.response.is_some() {
            NUDGE
        } else {
            TEXT_NUDGE
        };
        request.logprobs = ex.logprobs;
        let response = core
            .turns
            .take(
                TurnRequest {
                    turn: step.ordinal(),
                    class: std::borrow::Cow::Owned(format!("{}.call", core.class)),
                    request,
                    grade: stamps.grade,
                    pin: native.clone().or_else(|| core.pin.clone()),
                    depth: stamps.depth,
                    output: stamps.output,
                },
                &step,
            )
            .await?;
        let thinking: Option<String> = native.is_some().then(|| {
            response
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Thinking { thinking, .. } => Some(thinking.as_str()),
                    _ => None,
                })
                .collect()
        });
        let refusal = match contract.judge(&response.text(), thinking.as_deref()) {
            Judgement::NoAnswer => Error::invalid_input("answer", None, nudge),
            Judgement::Refused(refusal) => refusal,
            Judgement::Answer {
                value,
                json,
                reasoning,
            } => {
                if let Verdict::Refuse(reason) = contract.check(&value) {
                    guardrail_corrections += 1;
                    if guardrail_corrections > limits.max_guardrail_corrections {
                        ex.observer.lock().push(response.to_message());
                        return Err(
                            GuardrailRefusal::new(reason, guardrail_corrections - 1).into_error()
                        );
                    }
                    tracing::info!(
                        correction = guardrail_corrections,
                        "candidate answer refused by a guardrail; asking again"
                    );
                    let text = GuardrailRefusal::new(reason, guardrail_corrections)
                        .into_error()
                        .for_model();
                    let mut st = ex.observer.lock();
                    st.push(response.to_message());
                    st.push(Message::user_text(format!("{text} Revise your answer.")));
                    continue;
                }
                accept(ex.observer, core, &value, &json, reasoning, &response, cx);
                return Ok(Accepted { value, response });
            }
        };
        // A wrong shape (or no answer): the refused answer is not kept, only the correction,
        // composed from the schema, goes back.
        shape_corrections += 1;
        if shape_corrections > limits.max_answer_corrections {
            return Err(refusal);
        }
        tracing::info!(
            correction = shape_corrections,
            "candidate answer refused at the answer-shape boundary; asking again"
        );
        ex.observer
            .lock()
            .push(Message::user_text(refusal.for_model()));
    }
}

/// Keep the accepted answer: in the conversation, as the run's reasoning, as an artifact, and on
/// the content stream when submitted directly.
fn accept<T: Clone + Send + Sync + 'static>(
    observer: &ThinkerObserver,
    core: &ThinkerCore,
    value: &T,
    json: &Value,
    reasoning: String,
    response: &ChatResponse,
    cx: &JobContext,
) {
    {
        let mut st = observer.lock();
        st.push(response.to_message());
        st.reasoning = reasoning;
        let output = ToolOutput {
            json: json.clone(),
            typed: std::sync::Arc::new(value.clone()),
        };
        st.artifacts.register(&core.class, output);
    }
    publish_answer(core.content.as_ref(), json, cx);
}
