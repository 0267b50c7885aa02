//! The one seam through which a thinker's turn reaches a model.
//!
//! The loop renders a [`TurnRequest`] and hands it to its [`TurnSource`]. The default,
//! [`ModelTurns`], runs an [`LlmCall`] as a child in the turn's step (so the call and the
//! turn's tool calls share one ordinal). A test replaces it with `ScriptedTurns` (feature
//! `test-utils`) to drive the real loop with answers of its choosing.

use std::borrow::Cow;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::Result;
use crate::job::FanOut;
use crate::llm::{ChatRequest, ChatResponse, LlmCall};
use crate::model::{Depth, Grade, OutputSize};

/// One rendered turn, ready for a model.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    /// The turn's step ordinal.
    pub turn: u32,
    /// The job class the call is recorded under.
    pub class: Cow<'static, str>,
    /// The request.
    pub request: ChatRequest,
    /// The seat's grade.
    pub grade: Grade,
    /// The entry the call is pinned to, if any.
    pub pin: Option<Arc<str>>,
    /// The effort.
    pub depth: Depth,
    /// The output size of the turn.
    pub output: OutputSize,
}

/// Where a thinker's turns are answered.
pub trait TurnSource: Send + Sync + 'static {
    /// Answer one turn in its `step`, whose [`FanOut::context`] is the thinker's job: a model
    /// call submitted through it shares the turn's ordinal with the turn's tool calls.
    fn take_turn<'a>(
        &'a self,
        turn: TurnRequest,
        step: &'a FanOut,
    ) -> BoxFuture<'a, Result<ChatResponse>>;
}

/// The default turn source: one [`LlmCall`] child job per turn, in the turn's step, run in the
/// thinker's own task.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelTurns;

impl TurnSource for ModelTurns {
    fn take_turn<'a>(
        &'a self,
        turn: TurnRequest,
        step: &'a FanOut,
    ) -> BoxFuture<'a, Result<ChatResponse>> {
        Box::pin(model_turn(turn, step))
    }
}

/// One turn answered by the model: an [`LlmCall`] in the turn's step, awaited at once and alone,
/// so it runs in the thinker's own task (see [`FanOut::run`]). Not an `async fn`: the call's run
/// future is handed back as it is, without one more wrapper.
fn model_turn(
    turn: TurnRequest,
    step: &FanOut,
) -> impl Future<Output = Result<ChatResponse>> + Send + '_ {
    // The thinker's answer-shape boundary judges the answer and corrects it in the thinker's
    // own conversation, so the call hands it over as written.
    let mut call = LlmCall::new(turn.grade, turn.output, turn.request)
        .class(turn.class)
        .depth(turn.depth)
        .uncorrected();
    if let Some(pin) = turn.pin {
        call = call.pinned(pin);
    }
    step.run(call).map(|outcome| outcome.map(|o| o.response))
}

/// Where a thinker's turns go: the model, or a [`TurnSource`] that replaced it.
///
/// Either way the turn's future is boxed, so a parked thinker's own future stays small (its
/// memory per idle thinker is what `benches/thinker_memory.rs` reports): the model's turn holds
/// the call's run and its admission, a few KiB while it is in flight.
#[derive(Clone, Default)]
pub(crate) enum Turns {
    /// [`ModelTurns`].
    #[default]
    Model,
    /// A replacement source.
    Source(Arc<dyn TurnSource>),
}

impl Turns {
    /// Turns answered by `source`.
    pub(crate) fn from_source(source: impl TurnSource) -> Self {
        Self::Source(Arc::new(source))
    }

    /// Answer one turn in its `step`.
    pub(crate) fn take<'a>(
        &'a self,
        turn: TurnRequest,
        step: &'a FanOut,
    ) -> BoxFuture<'a, Result<ChatResponse>> {
        match self {
            Self::Model => ModelTurns.take_turn(turn, step),
            Self::Source(source) => source.take_turn(turn, step),
        }
    }
}
