//! The final-answer phase of a goal-directed thinker: the answer-shape boundary (a text answer
//! or a typed one, see [`crate::thinker::answer`]), artifact refs,
//! validation guardrails, and what happens to a refusal (a correction turn, bounded) or to an
//! accepted answer (published when the thinker was submitted directly, then returned).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::conversation::{ContentBlock, Message};
use crate::job::JobContext;
use crate::llm::{ChatResponse, ResponseSchema};
use crate::thinker::answer::{AnswerShape, Judgement};
use crate::thinker::artifacts::refs_in;
use crate::thinker::events::{self, ContentStream};
use crate::thinker::guardrail::{self, Guardrail, Verdict};
use crate::thinker::state::ThinkerObserver;
use crate::thinker::turn_loop::AnswerPhase;
use crate::{Error, Result};

/// The final-answer phase of a single-objective run.
pub(crate) struct SingleAnswer<A> {
    pub(crate) shape: Arc<AnswerShape<A>>,
    pub(crate) guardrails: Vec<Guardrail<A>>,
    pub(crate) max_answer_corrections: u32,
    pub(crate) max_guardrail_corrections: u32,
    pub(crate) content: Option<ContentStream>,
    pub(crate) answer_corrections: u32,
    pub(crate) guardrail_corrections: u32,
}

/// What the model is told when it ended a turn without an answer, for a typed answer.
const NUDGE: &str = "No final answer was given. Call a tool, or give your final answer as JSON \
that fits the answer schema.";

/// The same, for a text answer.
const TEXT_NUDGE: &str = "No final answer was given. Call a tool, or write your final answer.";

impl<A> SingleAnswer<A>
where
    A: DeserializeOwned + JsonSchema + Serialize + Send + Sync + 'static,
{
    /// Count one answer correction and put it to the model, or fail when the bound is reached.
    fn correct_shape(&mut self, refusal: Error, observer: &ThinkerObserver) -> Result<()> {
        self.answer_corrections += 1;
        if self.answer_corrections > self.max_answer_corrections {
            return Err(refusal);
        }
        tracing::info!(
            correction = self.answer_corrections,
            "final answer refused at the answer-shape boundary; asking again"
        );
        // The refused answer itself is not kept: only the correction, composed from the schema,
        // goes back to the model.
        observer
            .lock()
            .push(Message::user_text(refusal.for_model()));
        Ok(())
    }

    fn publish(&self, json: &serde_json::Value, cx: &JobContext) {
        events::publish_answer(self.content.as_ref(), json, cx);
    }
}

impl<A> AnswerPhase for SingleAnswer<A>
where
    A: DeserializeOwned + JsonSchema + Serialize + Send + Sync + 'static,
{
    type Output = A;

    fn response_schema(&self, native_thinking: bool) -> Option<ResponseSchema> {
        self.shape.request_schema(native_thinking)
    }

    fn uses_refs(&self) -> bool {
        self.shape.uses_refs()
    }

    fn finish(
        &mut self,
        response: &ChatResponse,
        native_thinking: bool,
        observer: &ThinkerObserver,
        cx: &JobContext,
    ) -> Result<Option<A>> {
        let thinking: Option<String> = native_thinking.then(|| {
            response
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Thinking { thinking, .. } => Some(thinking.as_str()),
                    _ => None,
                })
                .collect()
        });
        let (value, json, reasoning) = match self.shape.judge(&response.text(), thinking.as_deref())
        {
            Judgement::NoAnswer => {
                let nudge = if self.shape.is_text() {
                    TEXT_NUDGE
                } else {
                    NUDGE
                };
                observer.lock().push(Message::user_text(nudge));
                return Ok(None);
            }
            Judgement::Refused(refusal) => {
                self.correct_shape(refusal, observer)?;
                return Ok(None);
            }
            Judgement::Answer {
                value,
                json,
                reasoning,
            } => (value, json, reasoning),
        };
        let unknown = {
            let st = observer.lock();
            refs_in(&json)
                .into_iter()
                .filter(|r| st.artifacts.get(r).is_none())
                .count()
        };
        if unknown > 0 {
            let known = observer.lock().artifacts.known_refs();
            let refusal = Error::invalid_input(
                "answer.artifacts",
                None,
                format!(
                    "{unknown} artifact ref(s) in the answer name no tool result; the known \
                     refs are: {known}"
                ),
            );
            self.correct_shape(refusal, observer)?;
            return Ok(None);
        }
        if let Verdict::Refuse(reason) = guardrail::check(&self.guardrails, &value) {
            self.guardrail_corrections += 1;
            let refusal = Error::invalid_input(
                "answer",
                None,
                format!("the answer was refused by a check: {reason}"),
            );
            if self.guardrail_corrections > self.max_guardrail_corrections {
                return Err(refusal);
            }
            tracing::info!(
                correction = self.guardrail_corrections,
                "final answer refused by a guardrail; asking again"
            );
            let mut st = observer.lock();
            st.push(response.to_message());
            st.push(Message::user_text(format!(
                "{} Revise your final answer.",
                refusal.for_model()
            )));
            return Ok(None);
        }
        {
            let mut st = observer.lock();
            st.push(response.to_message());
            st.reasoning = reasoning;
        }
        self.publish(&json, cx);
        Ok(Some(value))
    }
}
