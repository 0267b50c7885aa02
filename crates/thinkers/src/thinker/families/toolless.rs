//! [`ToollessThinker`]: a thinker without a loop, for work that is one model call (classify this,
//! extract that) but still wants what a thinker has — a declaration, a typed input, validation
//! guardrails, an artifact of its answer, the read-only binding and the content stream.
//!
//! What it leaves out is the loop's machinery: no palette (it has no `tool` method: a tool could
//! never be offered to its model), no tool guidance. The model is asked for the answer as the
//! loop asks for it ([`AnswerShape::request_schema`]: a `String` as text, any other type as its
//! own schema with nothing added), and each candidate answer costs one model call: an [`crate::llm::LlmCall`] child in its own step,
//! admitted and recorded like any other. A candidate goes through the same answer-shape boundary
//! as the loop's final answer (a wrong shape is a correctable refusal composed from the schema,
//! never echoing the model's value) and then through the guardrails. A guardrail refusal goes
//! back to the model as a correction at most [`MAX_GUARDRAIL_CORRECTIONS`] times; the refusal
//! after that fails the run with that last refusal ([`GuardrailRefusal`] on the error's source).
//!
//! Native thinking works as in the loop: when the entry that will serve the call thinks natively
//! at the run's depth, the call is pinned to it and the answer's `reasoning` field, if the type
//! has one, is filled from the thinking block instead of being asked for.

mod candidates;

pub(crate) use candidates::{Contract, Exchange, exchange};

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::job::{JobContext, Orchestrator};
use crate::llm::ResponseSchema;
use crate::model::Depth;
use crate::thinker::answer::{AnswerShape, Judgement};
use crate::thinker::builder::sealed::HasCore;
use crate::thinker::declaration::ThinkerDeclaration;
use crate::thinker::guardrail::{self, Guardrail, Verdict};
use crate::thinker::state::ThinkerObserver;
use crate::thinker::turn_loop::{ThinkerCore, ThinkerLimits};
use crate::{Error, Result};

/// How many times a guardrail refusal of a toolless thinker's answer is put back to the model
/// before the run fails with the last refusal.
pub const MAX_GUARDRAIL_CORRECTIONS: u32 = 2;

/// The system content of a loopless thinker: required by its constructor, never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt(String);

impl SystemPrompt {
    /// A system prompt. Text that is empty or only whitespace is refused with an error naming
    /// `system_prompt`.
    pub fn new(text: impl Into<String>) -> Result<Self> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(Error::invalid_input(
                "system_prompt",
                None,
                "the system prompt is empty; say what the model is asked to do",
            ));
        }
        Ok(Self(text))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, owned.
    pub(crate) fn into_string(self) -> String {
        self.0
    }
}

/// The last guardrail refusal of a run that ran out of corrections. It sits on the source of
/// the [`Error::InvalidInput`] (parameter `answer`) the run fails with; find it with
/// [`GuardrailRefusal::of`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardrailRefusal {
    reason: String,
    corrections: u32,
}

impl GuardrailRefusal {
    pub(crate) fn new(reason: String, corrections: u32) -> Self {
        Self {
            reason,
            corrections,
        }
    }

    /// The refusal's reason, as the guardrail wrote it.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// How many corrections were put to the model before this refusal.
    pub fn corrections(&self) -> u32 {
        self.corrections
    }

    /// The guardrail refusal behind `error`, if it is one.
    pub fn of(error: &Error) -> Option<&Self> {
        match error {
            Error::InvalidInput {
                source: Some(source),
                ..
            } => source.downcast_ref::<Self>(),
            _ => None,
        }
    }

    pub(crate) fn into_error(self) -> Error {
        Error::InvalidInput {
            parameter: "answer".into(),
            value: None,
            reason: self.to_string(),
            source: Some(Box::new(self)),
        }
    }
}

impl fmt::Display for GuardrailRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the answer was refused by a check: {}", self.reason)
    }
}

impl std::error::Error for GuardrailRefusal {}

/// How a typed input becomes the user message.
type RenderInput<I> = Arc<dyn Fn(&I) -> Result<String> + Send + Sync>;

/// A thinker that asks its model for an `O` in one call per candidate answer, from a typed
/// input `I` (see the module docs).
///
/// ```no_run
/// # use schemars::JsonSchema;
/// # use serde::{Deserialize, Serialize};
/// # use thinkers::model::{Grade, OutputSize};
/// # use thinkers::thinker::{SystemPrompt, ThinkerDeclaration, ToollessThinker, Verdict};
/// #[derive(Clone, Serialize, Deserialize, JsonSchema)]
/// struct Ticket { text: String }
/// #[derive(Clone, Serialize, Deserialize, JsonSchema)]
/// #[serde(rename_all = "snake_case")]
/// enum Team { Billing, Technical, Other }
/// #[derive(Clone, Serialize, Deserialize, JsonSchema)]
/// struct Routing { team: Team }
///
/// # fn main() -> thinkers::Result<()> {
/// let router = ToollessThinker::<Ticket, Routing>::new(
///     ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
///     SystemPrompt::new("Route the support ticket to the team that should handle it.")?,
/// )
/// .guardrail(|r: &Routing| match r.team {
///     Team::Other => Verdict::refuse("route to a named team"),
///     _ => Verdict::Accept,
/// });
/// let job = router.ask(Ticket { text: "My invoice is wrong".into() });
/// # let _ = job; Ok(()) }
/// ```
pub struct ToollessThinker<I, O> {
    core: ThinkerCore,
    shape: Arc<AnswerShape<O>>,
    guardrails: Vec<Guardrail<O>>,
    observer: ThinkerObserver,
    depth: Depth,
    render: Option<RenderInput<I>>,
    _input: PhantomData<fn(&I)>,
}

impl<I, O> fmt::Debug for ToollessThinker<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToollessThinker")
            .field("core", &self.core)
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

impl<I, O> ToollessThinker<I, O>
where
    I: Serialize + Send + Sync + 'static,
    O: DeserializeOwned + JsonSchema + Serialize + Clone + Send + Sync + 'static,
{
    /// A toolless thinker with its seat declaration and its system prompt. The answer type is
    /// `O`; its schema is generated once, here.
    pub fn new(declaration: ThinkerDeclaration, prompt: SystemPrompt) -> Self {
        let mut core = ThinkerCore::new(declaration, prompt.0);
        core.class = "toolless_thinker".into();
        core.limits = ThinkerLimits {
            max_iterations: 1,
            max_guardrail_corrections: MAX_GUARDRAIL_CORRECTIONS,
            max_tool_calls_per_turn: 0,
            ..ThinkerLimits::default()
        };
        Self {
            core,
            shape: Arc::new(AnswerShape::new()),
            guardrails: Vec::new(),
            observer: ThinkerObserver::default(),
            depth: Depth::Standard,
            render: None,
            _input: PhantomData,
        }
    }

    /// Declare a validation guardrail on the answer; guardrails run in declaration order.
    #[must_use]
    pub fn guardrail(mut self, check: impl Fn(&O) -> Verdict + Send + Sync + 'static) -> Self {
        self.guardrails.push(Arc::new(check));
        self
    }

    /// How the input becomes the user message. By default a string input is sent as it is and
    /// anything else as pretty-printed JSON.
    #[must_use]
    pub fn render_input(
        mut self,
        render: impl Fn(&I) -> Result<String> + Send + Sync + 'static,
    ) -> Self {
        self.render = Some(Arc::new(render));
        self
    }

    /// The effort of every run ([`Depth::Standard`] unless set), clamped to a calling thinker's.
    #[must_use]
    pub fn depth(mut self, depth: Depth) -> Self {
        self.depth = depth;
        self
    }

    /// How many wrong-shaped candidates are corrected before the run fails (3 unless set).
    #[must_use]
    pub fn max_answer_corrections(mut self, corrections: u32) -> Self {
        self.core.limits.max_answer_corrections = corrections;
        self
    }

    /// The declaration in force.
    pub fn declaration(&self) -> &ThinkerDeclaration {
        &self.core.declaration
    }

    /// A shared view of the last run's conversation and reasoning, and of the artifacts: every
    /// accepted answer is registered as an artifact under the thinker's class.
    pub fn observer(&self) -> ThinkerObserver {
        self.observer.clone()
    }

    /// The last run's conversation as text.
    pub fn transcript(&self) -> String {
        self.observer.transcript()
    }

    /// The job of one run over `input`. Every run starts a new conversation.
    pub fn ask(&self, input: I) -> ToollessJob<I, O> {
        ToollessJob {
            core: self.core.clone(),
            contract: ShapeContract {
                shape: self.shape.clone(),
                guardrails: self.guardrails.clone(),
            },
            observer: self.observer.clone(),
            depth: self.depth,
            render: self.render.clone(),
            input,
        }
    }
}

seat_in_core!(impl<I, O> for ToollessThinker<I, O>);
shared_setters!(impl<I, O> for ToollessThinker<I, O>);
seat_in_core!(impl<I, O> for ToollessJob<I, O>);

impl<I, O> HasCore for ToollessThinker<I, O> {
    fn core_mut(&mut self) -> &mut ThinkerCore {
        &mut self.core
    }
}

/// The answer type's own shape and the declared guardrails.
struct ShapeContract<O> {
    shape: Arc<AnswerShape<O>>,
    guardrails: Vec<Guardrail<O>>,
}

impl<O> Contract for ShapeContract<O>
where
    O: DeserializeOwned + Clone + Send + Sync + 'static,
{
    type Output = O;

    fn schema(&self, native_thinking: bool) -> Option<ResponseSchema> {
        self.shape.request_schema(native_thinking)
    }

    fn judge(&self, text: &str, thinking: Option<&str>) -> Judgement<O> {
        self.shape.judge(text, thinking)
    }

    fn check(&self, value: &O) -> Verdict {
        guardrail::check(&self.guardrails, value)
    }
}

/// One run of a [`ToollessThinker`]: an orchestrator whose output is the typed answer.
pub struct ToollessJob<I, O> {
    core: ThinkerCore,
    contract: ShapeContract<O>,
    observer: ThinkerObserver,
    depth: Depth,
    render: Option<RenderInput<I>>,
    input: I,
}

impl<I, O> fmt::Debug for ToollessJob<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToollessJob")
            .field("core", &self.core)
            .field("depth", &self.depth)
            .finish_non_exhaustive()
    }
}

/// The input as the user message: a string as it is, anything else as pretty JSON.
fn default_render<I: Serialize>(input: &I) -> Result<String> {
    let value = serde_json::to_value(input).map_err(|e| {
        Error::invalid_input(
            "input",
            None,
            format!("the input could not be serialised: {e}"),
        )
    })?;
    match value {
        serde_json::Value::String(s) => Ok(s),
        other => serde_json::to_string_pretty(&other).map_err(|e| {
            Error::invalid_input(
                "input",
                None,
                format!("the input could not be serialised: {e}"),
            )
        }),
    }
}

impl<I, O> Orchestrator for ToollessJob<I, O>
where
    I: Serialize + Send + Sync + 'static,
    O: DeserializeOwned + JsonSchema + Serialize + Clone + Send + Sync + 'static,
{
    type Output = O;

    fn class(&self) -> Cow<'static, str> {
        Cow::Owned(self.core.class.clone())
    }

    /// The thinker bounds its own corrections; the dispatcher never re-runs it.
    fn max_corrections(&self) -> u32 {
        0
    }

    async fn execute(&mut self, cx: &JobContext) -> Result<O> {
        let prompt = match &self.render {
            Some(render) => render(&self.input)?,
            None => default_render(&self.input)?,
        };
        let exchange_of = Exchange {
            core: &self.core,
            prompt,
            depth: self.depth,
            logprobs: None,
            observer: &self.observer,
        };
        let accepted = exchange(exchange_of, &self.contract, cx).await?;
        Ok(accepted.value)
    }
}
