//! The test seam and the exchange hook of a one-call tool.
//!
//! * [`Answerer`] answers a tool's request without a transport: the one place a test (or an
//!   offline demo) replaces the provider. Everything around the send still runs — the conversation
//!   is built and bound, admission grants the seat, the answer is decoded and corrected, and the
//!   answerer's errors pass through the same broad handling as a real client's, so a retry signal
//!   it returns reaches the dispatcher untouched.
//! * [`ExchangeHook`] sees each exchange after it happened: the entry, the exact body, the seat
//!   admission granted and (for a real call) the [`LlmOutcome`]. Use it for audits and for tests
//!   that compare the reservation with the bytes on the wire.

use std::sync::Arc;

use crate::error::BoxError;
use crate::job::{AttemptInfo, Seat};
use crate::llm::{ChatRequest, ChatResponse, EncodedRequest, LlmOutcome};

/// What an [`Answerer`] is asked: the request as bound for this attempt.
#[derive(Debug, Clone, Copy)]
pub struct AnswerRequest<'a> {
    /// The request, with this attempt's output budget and reasoning filled in.
    pub request: &'a ChatRequest,
    /// The catalog entry the seat resolved to.
    pub entry: &'a str,
    /// The attempt (its number, corrections so far, whether it is escalated).
    pub attempt: AttemptInfo,
}

/// Answers a one-call tool's request without a transport (the test seam).
///
/// Any error is allowed: it goes through [`crate::error::unwrap_error`], so returning one of our
/// own retry signals (boxed) makes the dispatcher retry exactly as it would for a real client.
/// A [`crate::llm::StopReason::MaxTokens`] answer on a first attempt asks for the truncation
/// escalation, as a real call does.
pub trait Answerer: Send + Sync + 'static {
    /// Answer one attempt.
    fn answer(&self, ask: &AnswerRequest<'_>) -> Result<ChatResponse, BoxError>;
}

impl<F> Answerer for F
where
    F: Fn(&AnswerRequest<'_>) -> Result<ChatResponse, BoxError> + Send + Sync + 'static,
{
    fn answer(&self, ask: &AnswerRequest<'_>) -> Result<ChatResponse, BoxError> {
        self(ask)
    }
}

/// One exchange of a one-call tool, as its [`ExchangeHook`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct Exchange<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The catalog entry that served (or would have served) the call.
    pub entry: &'a str,
    /// The exact encoded request the seat was priced from (and, for a real call, sent).
    pub encoded: &'a EncodedRequest,
    /// The seat admission granted for this attempt.
    pub seat: Option<&'a Seat>,
    /// The outcome of a real call; `None` when an [`Answerer`] answered.
    pub outcome: Option<&'a LlmOutcome>,
    /// The attempt.
    pub attempt: AttemptInfo,
    /// Correction turns the tool had appended before this exchange.
    pub corrections: u32,
}

/// Sees every exchange of a one-call tool (see [`Exchange`]).
pub type ExchangeHook = Arc<dyn Fn(&Exchange<'_>) + Send + Sync>;
