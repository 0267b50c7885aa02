//! The bounded correction exchange a one-call tool and a model call with a response schema
//! ([`crate::llm::LlmCall`]) share.
//!
//! An answer is judged in two steps: it must convert into the declared shape (JSON of the right
//! root kind with its required fields, and for a typed answer the type itself), then pass a check.
//! Either failure goes back to the model as a correction turn — the model's answer as an
//! assistant turn, then a user turn saying what was wrong in terms of the schema — and the job
//! asks the dispatcher to run it again on the grown conversation, at most [`MAX_CORRECTIONS`]
//! times. Past that bound an answer that still does not convert surfaces as
//! [`Error::InvalidInput`] on the `answer` parameter, and an answer that converts but still fails
//! its check is returned as it is.

use std::sync::Arc;

use super::message::Message;
use super::shape::{AnswerRefusal, AnswerShape};
use super::{ChatRequest, ChatResponse};
use crate::{Error, Result};

/// How many correction turns a one-call tool puts to the model before it stops asking: the
/// dispatcher re-runs the instance at most this many times for a correction.
pub const MAX_CORRECTIONS: u32 = 3;

/// One job's side of the exchange: the declared shape and the corrections put so far.
#[derive(Debug, Clone)]
pub(crate) struct Corrector {
    shape: Arc<AnswerShape>,
    corrections: u32,
}

impl Corrector {
    /// An exchange over answers of `shape`, no correction put yet.
    pub(crate) fn new(shape: Arc<AnswerShape>) -> Self {
        Self {
            shape,
            corrections: 0,
        }
    }

    /// The declared shape.
    pub(crate) fn shape(&self) -> &Arc<AnswerShape> {
        &self.shape
    }

    /// Correction turns appended so far.
    pub(crate) fn corrections(&self) -> u32 {
        self.corrections
    }

    /// Judge `response`: `decode` converts its text into the declared shape, `check` judges the
    /// converted answer (an `Err` says what is wrong without repeating the answer). Returns the
    /// answer when it converts and passes, or when only the check fails past the bound; the
    /// misfit as an error past the bound; otherwise grows `request` and returns the correction
    /// signal. `who` names the job in logs.
    pub(crate) fn exchange<T>(
        &mut self,
        who: &str,
        request: &mut ChatRequest,
        response: &ChatResponse,
        decode: impl FnOnce(&AnswerShape, &str) -> Result<T, AnswerRefusal>,
        check: impl FnOnce(&AnswerShape, &T) -> Result<(), String>,
    ) -> Result<T> {
        let spent = self.corrections >= MAX_CORRECTIONS;
        let correction = match decode(&self.shape, &response.text()) {
            Ok(answer) => match check(&self.shape, &answer) {
                Ok(()) => return Ok(answer),
                Err(_) if spent => {
                    tracing::debug!(job = who, "answer still fails its check; returned as is");
                    return Ok(answer);
                }
                Err(reason) => self.shape.correction_for_invalid(&reason),
            },
            Err(refusal) if spent => return Err(refusal.into_error(&self.shape)),
            Err(refusal) => self.shape.correction_for_misfit(&refusal),
        };
        let messages = Arc::make_mut(&mut request.messages);
        if !response.content.is_empty() {
            messages.push(response.to_message());
        }
        messages.push(Message::user_text(correction.clone()));
        self.corrections += 1;
        tracing::debug!(
            job = who,
            corrections = self.corrections,
            "answer corrected"
        );
        Err(Error::correction(correction))
    }
}
