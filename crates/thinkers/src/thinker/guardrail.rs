//! Validation guardrails: checks a thinker declares on its final answer.
//!
//! A guardrail runs on a typed answer while the conversation is still held. A refusal becomes a
//! correction turn (the reason goes back to the model) and the loop goes on, up to the thinker's
//! bound on guardrail corrections.

use std::sync::Arc;

/// What a guardrail says about an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The answer passes.
    Accept,
    /// The answer is refused; the reason is put to the model.
    Refuse(String),
}

impl Verdict {
    /// A refusal with a reason.
    pub fn refuse(reason: impl Into<String>) -> Self {
        Self::Refuse(reason.into())
    }
}

/// A declared check on a final answer of type `A`.
pub type Guardrail<A> = Arc<dyn Fn(&A) -> Verdict + Send + Sync>;

/// Run the guardrails in declaration order; the first refusal wins.
pub(crate) fn check<A>(guardrails: &[Guardrail<A>], answer: &A) -> Verdict {
    for g in guardrails {
        if let Verdict::Refuse(reason) = g(answer) {
            return Verdict::Refuse(reason);
        }
    }
    Verdict::Accept
}
