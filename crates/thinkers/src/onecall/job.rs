//! [`ModelToolJob`]: one call of a [`ModelTool`] as a job — wire, converse, correct.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use super::seam::{AnswerRequest, Answerer, Exchange, ExchangeHook};
use super::{AnswerShape, MAX_CORRECTIONS, ModelTool};
use crate::conversation::Message;
use crate::error::{BoxError, RetrySignal, unwrap_error};
use crate::job::{Job, JobContext, Requirements, Resources};
use crate::llm::correction::Corrector;
use crate::llm::{
    BoundSeat, ChatRequest, ChatResponse, ResponseSchema, StopReason, converse_bound, require_seat,
};
use crate::model::{Depth, Grade, ModelDependent, OutputSize};
use crate::tool::ToolCallContext;
use crate::{Error, Result};

/// Builds a job's messages in place of [`ModelTool::build_messages`]; called once.
type MessagesBuilder<I> = Box<dyn FnOnce(&I) -> Result<Vec<crate::conversation::Message>> + Send>;

/// A grade and a pin: the model-dependent face of the job, kept apart from the request so both
/// can be borrowed at once.
#[derive(Debug, Clone)]
struct SeatSpec {
    grade: Grade,
    pin: Option<String>,
}

impl ModelDependent for SeatSpec {
    fn grade(&self) -> Grade {
        self.grade
    }
    fn set_grade(&mut self, grade: Grade) {
        self.grade = grade;
    }
    fn pin(&self) -> Option<&str> {
        self.pin.as_deref()
    }
    fn pin_model(&mut self, entry: String) {
        self.pin = Some(entry);
    }
}

/// One call of a [`ModelTool`] as a job (see the [module docs](super)).
///
/// The job holds the tool, the input, its seat (grade, optional pin, depth, output size) and,
/// once the first attempt has wired it, the conversation. A correction grows that conversation
/// and the dispatcher re-runs this same instance on it.
///
/// Depth: the call works at its caller's depth (a thinker's tool call hands its run's depth over
/// in [`ToolCallContext::parent_depth`]; a job submitted by code under a thinker reads the
/// nearest thinker's; [`ModelToolJob::depth`] names one), lowered to what the tool allows
/// ([`ModelTool::depth`]) and never raised. Without a caller's depth it works at the tool's.
pub struct ModelToolJob<T: ModelTool> {
    tool: Arc<T>,
    input: T::Input,
    corrector: Corrector,
    seat: SeatSpec,
    /// The most the tool allows ([`ModelTool::depth`]).
    allowed: Depth,
    /// The caller's depth, when the caller named one.
    caller: Option<Depth>,
    output: OutputSize,
    builder: Option<MessagesBuilder<T::Input>>,
    request: Option<ChatRequest>,
    bound: Option<BoundSeat>,
    answerer: Option<Arc<dyn Answerer>>,
    hook: Option<ExchangeHook>,
}

impl<T: ModelTool> std::fmt::Debug for ModelToolJob<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelToolJob")
            .field("tool", &T::NAME)
            .field("grade", &self.seat.grade)
            .field("pin", &self.seat.pin)
            .field("allowed", &self.allowed)
            .field("caller", &self.caller)
            .field("output", &self.output)
            .field("corrections", &self.corrector.corrections())
            .finish_non_exhaustive()
    }
}

impl<T: ModelTool> ModelToolJob<T> {
    /// A call of `tool` at the grade the tool declares for `input`. A tool that declares none
    /// must be created with a caller's grade ([`ModelToolJob::for_call`]); here that is an error.
    pub fn new(tool: Arc<T>, input: T::Input) -> Result<Self> {
        Self::for_call(tool, input, &ToolCallContext::default())
    }

    /// A call of `tool` made from a caller: the tool's own grade, else the caller's
    /// (`parent_grade`); the caller's pin (`parent_pin`) is inherited. Neither grade → an error
    /// naming the tool.
    pub fn for_call(tool: Arc<T>, input: T::Input, cx: &ToolCallContext) -> Result<Self> {
        Self::assemble(tool, input, cx, Arc::new(AnswerShape::of::<T::Output>()))
    }

    pub(super) fn assemble(
        tool: Arc<T>,
        input: T::Input,
        cx: &ToolCallContext,
        shape: Arc<AnswerShape>,
    ) -> Result<Self> {
        let grade = tool.grade(&input).or(cx.parent_grade).ok_or_else(|| {
            Error::system(
                format!("model tool {}", T::NAME),
                "the tool declares no grade and its caller passed none; declare one in \
                     ModelTool::grade or create the call with a caller's grade \
                     (ToolCallContext::parent_grade)",
            )
        })?;
        Ok(Self {
            allowed: tool.depth(&input),
            caller: cx.parent_depth,
            output: tool.output_size(&input),
            seat: SeatSpec {
                grade,
                pin: cx.parent_pin.clone(),
            },
            tool,
            input,
            corrector: Corrector::new(shape),
            builder: None,
            request: None,
            bound: None,
            answerer: None,
            hook: None,
        })
    }

    /// Pin the call to one catalog entry (inside the compliance envelope).
    #[must_use]
    pub fn pinned(mut self, entry: impl Into<String>) -> Self {
        self.seat.pin = Some(entry.into());
        self
    }

    /// The caller's depth: the call works at it, lowered to the depth the tool allows and to
    /// the depth of the thinker above it, never raised (see [`ModelToolJob::depth_in`]).
    #[must_use]
    pub fn depth(mut self, depth: Depth) -> Self {
        self.caller = Some(depth);
        self
    }

    /// The depth the call works at when run under `cx`: the caller's (given, or the thinker's
    /// above `cx`), never deeper than the thinker's above `cx` nor than the tool's own, or the
    /// tool's without a caller. A depth given with [`Self::depth`] can lower the call's depth,
    /// never raise it past its calling thinker's.
    pub fn depth_in(&self, cx: &JobContext) -> Depth {
        let thinker = crate::model::parent_thinker_depth(cx);
        let caller = match (self.caller, thinker) {
            (Some(given), Some(thinker)) => Some(given.clamp_to(thinker)),
            (given, thinker) => given.or(thinker),
        };
        caller.map_or(self.allowed, |caller| caller.clamp_to(self.allowed))
    }

    /// Build the conversation's messages with `builder` instead of the tool's
    /// [`ModelTool::build_messages`] — for content the prompt cannot express, such as
    /// [`crate::conversation::ContentBlock::Image`] or `File` blocks. It runs once, on the first
    /// attempt; the conversation is then bound, sent and corrected like any other.
    #[must_use]
    pub fn messages_with(
        mut self,
        builder: impl FnOnce(&T::Input) -> Result<Vec<Message>> + Send + 'static,
    ) -> Self {
        self.builder = Some(Box::new(builder));
        self
    }

    /// Answer through `answerer` instead of the provider (the test seam; see [`Answerer`]).
    #[must_use]
    pub fn answer_with(mut self, answerer: Arc<dyn Answerer>) -> Self {
        self.answerer = Some(answerer);
        self
    }

    /// Report every exchange to `hook` (see [`Exchange`]).
    #[must_use]
    pub fn on_exchange(mut self, hook: ExchangeHook) -> Self {
        self.hook = Some(hook);
        self
    }

    /// The input.
    pub fn input(&self) -> &T::Input {
        &self.input
    }

    /// The conversation, once the first attempt has built it.
    pub fn request(&self) -> Option<&ChatRequest> {
        self.request.as_ref()
    }

    /// Correction turns appended so far.
    pub fn corrections(&self) -> u32 {
        self.corrector.corrections()
    }

    /// Build the conversation: the tool's instructions as system content, its messages, and the
    /// output type's schema as the response contract.
    fn build(&mut self) -> Result<ChatRequest> {
        let messages = match self.builder.take() {
            Some(builder) => builder(&self.input)?,
            None => self.tool.build_messages(&self.input)?,
        };
        let mut request = ChatRequest::new(self.tool.instructions(), messages);
        request.response = Some(ResponseSchema {
            name: T::NAME.to_owned(),
            schema: self.corrector.shape().shared_schema(),
        });
        Ok(request)
    }

    /// Send the bound request (or ask the answerer), decode the answer, correct or return it.
    /// Errors are boxed so any failure can surface here; `execute` turns them back into the
    /// hierarchy with `unwrap_error`, which lets retry signals through untouched.
    async fn converse(&mut self, res: &Resources, cx: &JobContext) -> Result<T::Output, BoxError> {
        let bound = self
            .bound
            .take()
            .ok_or_else(|| Error::system(T::NAME, "executed without a bound seat"))?;
        let attempt = res.attempt();
        let response = match self.answerer.clone() {
            Some(answerer) => {
                let request = self
                    .request
                    .as_ref()
                    .ok_or_else(|| Error::system(T::NAME, "executed without a conversation"))?;
                let response = answerer.answer(&AnswerRequest {
                    request,
                    entry: bound.entry(),
                    attempt,
                })?;
                self.report(bound.entry(), bound.encoded(), res, None);
                response
            }
            None => {
                let kept = self
                    .hook
                    .as_ref()
                    .map(|_| (bound.entry().to_owned(), bound.encoded().clone()));
                let outcome = converse_bound(bound, T::NAME, None, res, cx).await?;
                if let Some((entry, encoded)) = &kept {
                    self.report(entry, encoded, res, Some(&outcome));
                }
                outcome.response
            }
        };
        // A truncated answer never enters the conversation. On a first attempt this asks for the
        // escalation (`converse_bound` already did for a real call); on the escalated attempt
        // the dispatcher ends the job, since the answer does not fit even at the ceiling.
        if response.stop == StopReason::MaxTokens {
            return Err(Error::Retry(RetrySignal::TruncationEscalation).into());
        }
        self.settle(&response).map_err(Into::into)
    }

    /// Decode the answer and check it through the shared correction exchange: a misfit or a
    /// failed check grows the conversation and signals a correction, until the bound.
    fn settle(&mut self, response: &ChatResponse) -> Result<T::Output> {
        let request = self
            .request
            .as_mut()
            .ok_or_else(|| Error::system(T::NAME, "corrected without a conversation"))?;
        let (tool, input) = (&self.tool, &self.input);
        self.corrector.exchange(
            T::NAME,
            request,
            response,
            |shape, text| shape.decode::<T::Output>(text),
            |_, out| tool.validate(input, out),
        )
    }

    fn report(
        &self,
        entry: &str,
        encoded: &crate::llm::EncodedRequest,
        res: &Resources,
        outcome: Option<&crate::llm::LlmOutcome>,
    ) {
        if let Some(hook) = &self.hook {
            hook(&Exchange {
                tool: T::NAME,
                entry,
                encoded,
                seat: res.seat(),
                outcome,
                attempt: res.attempt(),
                corrections: self.corrector.corrections(),
            });
        }
    }
}

impl<T: ModelTool> ModelDependent for ModelToolJob<T> {
    fn grade(&self) -> Grade {
        self.seat.grade
    }
    fn set_grade(&mut self, grade: Grade) {
        self.seat.grade = grade;
    }
    fn pin(&self) -> Option<&str> {
        self.seat.pin.as_deref()
    }
    fn pin_model(&mut self, entry: String) {
        self.seat.pin = Some(entry);
    }
}

impl<T: ModelTool> Job for ModelToolJob<T> {
    type Output = T::Output;

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed(T::NAME)
    }

    /// Build the conversation on the first attempt; bind it to a seat on every attempt. Refused
    /// under a read-only scope unless the tool is read-only.
    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()> {
        crate::tool::admit_tool(T::NAME, self.tool.read_only(), cx.scope())?;
        if self.request.is_none() {
            self.request = Some(self.build()?);
        }
        let depth = self.depth_in(cx);
        let Some(request) = self.request.as_mut() else {
            return Err(Error::system(T::NAME, "the conversation was not built"));
        };
        let bound = require_seat(&self.seat, depth, self.output, request, req, cx)?;
        self.bound = Some(bound);
        Ok(())
    }

    fn timeout(&self) -> Option<Duration> {
        self.tool.timeout()
    }

    fn max_corrections(&self) -> u32 {
        MAX_CORRECTIONS
    }

    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> Result<T::Output> {
        self.converse(res, cx).await.map_err(unwrap_error)
    }
}
