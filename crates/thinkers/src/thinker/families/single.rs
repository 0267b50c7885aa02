//! [`Thinker`]: a thinker that works toward one typed answer.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::conversation::ConversationId;
use crate::hub::Compatible;
use crate::job::{JobContext, Orchestrator};
use crate::model::{Depth, Grade, OutputSize};
use crate::thinker::answer::AnswerShape;
use crate::thinker::artifacts::ArtifactRef;
use crate::thinker::as_tool::{self, JobTool};
use crate::thinker::builder::sealed::HasCore;
use crate::thinker::declaration::{ThinkerDeclaration, ThinkerInput};
use crate::thinker::finish::SingleAnswer;
use crate::thinker::guardrail::{Guardrail, Verdict};
use crate::thinker::state::ThinkerObserver;
use crate::thinker::subthinker;
use crate::thinker::turn_loop::{ThinkerCore, run_loop};
use crate::tool::ToolProvider;

/// The fields most answers of a goal-directed thinker carry; embed them (for example with
/// `#[serde(flatten)]`) or copy them into an answer type.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ThinkerOutput {
    /// A justification a reader can check: the approach and the steps that lead to the answer.
    pub reasoning: String,
    /// Refs of the artifacts the answer relies on.
    pub artifacts: Vec<ArtifactRef>,
}

/// A thinker that turns until the model gives a final answer of type `A` that fits its schema
/// and passes the declared guardrails, or until its iteration limit.
///
/// The thinker is a definition, separate from its runs: [`Thinker::ask`] makes
/// the job of a run in a **conversation of its own**, so asking twice never continues by
/// accident. Continuing is said in code: [`Thinker::follow_up`] continues the
/// conversation of the run asked last, [`Thinker::resume`] a saved one by id.
/// [`Thinker::observer`] reads the run asked last (each job also has its own
/// [`ThinkerJob::observer`]).
pub struct Thinker<A> {
    core: ThinkerCore,
    shape: Arc<AnswerShape<A>>,
    guardrails: Vec<Guardrail<A>>,
    /// The state of the run asked last (empty before the first), and whether a job holds it.
    latest: Mutex<Latest>,
}

impl<A> std::fmt::Debug for Thinker<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Thinker")
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl<A> Thinker<A>
where
    A: DeserializeOwned + JsonSchema + Serialize + Send + Sync + 'static,
{
    /// A thinker with its objective (the task, as system content) and the default seat: the
    /// catalog's strongest rung ([`Grade::Ceiling`], which in a one-model catalog is that
    /// model) and the output size that suits the answer type: `Verdict` for a boolean, a number
    /// or a string held to a list of values, `Compact` for an object, `Standard` for free text or
    /// a list. [`Thinker::declared`] states the seat.
    pub fn new(objective: impl Into<String>) -> Self {
        let shape = AnswerShape::<A>::new();
        let declaration = ThinkerDeclaration::new(Grade::Ceiling, shape.default_output());
        Self::with_shape(declaration, objective.into(), shape)
    }

    /// A thinker with its seat declaration (grade and output size) and its objective.
    pub fn declared(declaration: ThinkerDeclaration, objective: impl Into<String>) -> Self {
        Self::with_shape(declaration, objective.into(), AnswerShape::new())
    }

    fn with_shape(
        declaration: ThinkerDeclaration,
        objective: String,
        shape: AnswerShape<A>,
    ) -> Self {
        Self {
            core: ThinkerCore::new(declaration, objective),
            shape: Arc::new(shape),
            guardrails: Vec::new(),
            latest: Mutex::default(),
        }
    }

    /// Declare a validation guardrail on the final answer.
    #[must_use]
    pub fn guardrail(mut self, check: impl Fn(&A) -> Verdict + Send + Sync + 'static) -> Self {
        self.guardrails.push(Arc::new(check));
        self
    }

    /// Declare the hub tools this thinker is compatible with (by default, every tool the hub
    /// holds); `request_tools` offers these, reconciled with the hub each turn.
    #[must_use]
    pub fn compatible_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.core.orchestration.tools = Compatible::only(names);
        self
    }

    /// Declare the hub skills this thinker is compatible with (by default, every skill the hub
    /// holds); `request_skill` offers these, reconciled with the hub each turn.
    #[must_use]
    pub fn compatible_skills<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.core.orchestration.skills = Compatible::only(names);
        self
    }

    /// A `sub_thinker` tool over this thinker's declared tools, its own hub's compatible
    /// catalogs and the artifacts its runs registered, working at `depth` and at this thinker's
    /// grade: how code (a doer, a read-only tool) starts a delegate outside a model turn. The
    /// delegate runs in the scope of whatever job submits it; the artifacts it sees are those of
    /// the run asked last when the tool is made.
    pub fn sub_thinker(&self, depth: Depth) -> Arc<dyn ToolProvider> {
        subthinker::door_for(&self.core, &self.observer(), depth)
    }

    /// This thinker offered to another thinker's model as the tool `name` (snake_case; not a
    /// built-in orchestrator's) with `description`: each call is a fresh run whose answer's JSON
    /// is the tool result (see [`JobTool`]). The tool is made from the thinker as it stands now.
    /// Refuses a misfit name or an empty description with
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) naming the field.
    pub fn as_tool(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Result<JobTool> {
        let (core, shape, guardrails) = (
            self.core.clone(),
            self.shape.clone(),
            self.guardrails.clone(),
        );
        as_tool::thinker(name.into(), &description.into(), move |input| ThinkerJob {
            core: core.clone(),
            shape: shape.clone(),
            guardrails: guardrails.clone(),
            observer: ThinkerObserver::default(),
            input,
            resume: None,
        })
    }

    /// Replace the output declaration; the last one set wins. It takes effect on the next
    /// model call: the next run stamps it over the conversation it continues, so a conversation
    /// obtained by an earlier run (held, or resumed by id) books the new size from then on.
    pub fn set_output(&mut self, output: OutputSize) {
        self.core.set_output(output);
    }

    /// The declaration in force.
    pub fn declaration(&self) -> &ThinkerDeclaration {
        &self.core.declaration
    }

    /// A shared view of the state of the run asked last (ask, follow-up or resume), readable
    /// after it ran. Taken before the first `ask`, it reads the run that `ask` makes.
    pub fn observer(&self) -> ThinkerObserver {
        self.latest().observer.clone()
    }

    fn latest(&self) -> std::sync::MutexGuard<'_, Latest> {
        self.latest.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state of a new run: the one the thinker shows, unless a job holds it already (so an
    /// observer taken before the first `ask` reads that run).
    fn fresh_state(&self) -> ThinkerObserver {
        let mut latest = self.latest();
        if latest.taken {
            latest.observer = ThinkerObserver::default();
        }
        latest.taken = true;
        latest.observer.clone()
    }

    /// The conversation of the run asked last as text: every message, tool call and tool
    /// result in order.
    pub fn transcript(&self) -> String {
        self.observer().transcript()
    }

    /// The job of one run over `input` in a new conversation: nothing an earlier run of this
    /// thinker said is in it. Jobs asked one after another (or at once, in a batch) never share
    /// a conversation; the thinker's [`observer`](Self::observer) follows the one asked last.
    pub fn ask(&self, input: impl Into<ThinkerInput>) -> ThinkerJob<A> {
        self.job(self.fresh_state(), input.into(), None)
    }

    /// The job of one run that continues the conversation of the run asked last (the model sees
    /// its questions and answers; the objective is not placed again), or starts one when none
    /// was asked.
    pub fn follow_up(&self, input: impl Into<ThinkerInput>) -> ThinkerJob<A> {
        let observer = {
            let mut latest = self.latest();
            latest.taken = true;
            latest.observer.clone()
        };
        self.job(observer, input.into(), None)
    }

    /// The job of one run that resumes the conversation saved under `id` (it must exist: an
    /// unknown id fails the run with an error naming it). The query arrives as the next user
    /// message; the objective stays the one the conversation began with. The thinker's
    /// observer follows it, as after [`ask`](Self::ask).
    pub fn resume(&self, id: ConversationId, input: impl Into<ThinkerInput>) -> ThinkerJob<A> {
        self.job(self.fresh_state(), input.into(), Some(id))
    }

    fn job(
        &self,
        observer: ThinkerObserver,
        input: ThinkerInput,
        resume: Option<ConversationId>,
    ) -> ThinkerJob<A> {
        ThinkerJob {
            core: self.core.clone(),
            shape: self.shape.clone(),
            guardrails: self.guardrails.clone(),
            observer,
            input,
            resume,
        }
    }
}

seat_in_core!(impl<A> for Thinker<A>);
shared_setters!(impl<A> for Thinker<A>);
loop_setters!(impl<A> for Thinker<A>);

impl<A> HasCore for Thinker<A> {
    fn core_mut(&mut self) -> &mut ThinkerCore {
        &mut self.core
    }
}

/// The run a thinker shows: its state, and whether a job was made over it.
#[derive(Debug, Default)]
struct Latest {
    observer: ThinkerObserver,
    taken: bool,
}

/// One run of a [`Thinker`]: an orchestrator whose output is the typed answer.
pub struct ThinkerJob<A> {
    core: ThinkerCore,
    shape: Arc<AnswerShape<A>>,
    guardrails: Vec<Guardrail<A>>,
    observer: ThinkerObserver,
    input: ThinkerInput,
    resume: Option<ConversationId>,
}

impl<A> std::fmt::Debug for ThinkerJob<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThinkerJob")
            .field("core", &self.core)
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

impl<A> ThinkerJob<A> {
    /// A shared view of this run's conversation and state.
    pub fn observer(&self) -> ThinkerObserver {
        self.observer.clone()
    }
}

seat_in_core!(impl<A> for ThinkerJob<A>);

impl<A> Orchestrator for ThinkerJob<A>
where
    A: DeserializeOwned + JsonSchema + Serialize + Send + Sync + 'static,
{
    type Output = A;

    fn class(&self) -> Cow<'static, str> {
        Cow::Owned(self.core.class.clone())
    }

    /// The loop bounds its own corrections; the dispatcher never re-runs a thinker.
    fn max_corrections(&self) -> u32 {
        0
    }

    async fn execute(&mut self, cx: &JobContext) -> Result<A> {
        let phase = SingleAnswer {
            shape: self.shape.clone(),
            guardrails: self.guardrails.clone(),
            max_answer_corrections: self.core.limits.max_answer_corrections,
            max_guardrail_corrections: self.core.limits.max_guardrail_corrections,
            content: self.core.content.clone(),
            answer_corrections: 0,
            guardrail_corrections: 0,
        };
        run_loop(
            &self.core,
            phase,
            &self.input,
            self.resume.as_ref(),
            &self.observer,
            cx,
        )
        .await
    }
}
