//! [`SingleObjectiveThinker`]: a thinker that works toward one typed answer.

use std::borrow::Cow;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::conversation::ConversationId;
use crate::hub::Compatible;
use crate::job::{JobContext, Orchestrator};
use crate::model::{Depth, OutputSize};
use crate::thinker::answer::AnswerShape;
use crate::thinker::artifacts::ArtifactRef;
use crate::thinker::builder::sealed::HasCore;
use crate::thinker::builder::{LoopThinkerBuilder, ThinkerBuilder};
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
/// The thinker is a reusable description that also holds **one conversation**:
/// [`SingleObjectiveThinker::ask`] makes the job of a run that continues it (the objective and
/// seeded follow-up are placed only when it is new), [`SingleObjectiveThinker::ask_fresh`] the
/// job of a run with a conversation of its own, [`SingleObjectiveThinker::resume`] continues a
/// saved one by id, and [`SingleObjectiveThinker::observer`] reads it after a run.
pub struct SingleObjectiveThinker<A> {
    core: ThinkerCore,
    shape: Arc<AnswerShape<A>>,
    guardrails: Vec<Guardrail<A>>,
    observer: ThinkerObserver,
}

impl<A> std::fmt::Debug for SingleObjectiveThinker<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SingleObjectiveThinker")
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl<A> SingleObjectiveThinker<A>
where
    A: DeserializeOwned + JsonSchema + Serialize + Send + Sync + 'static,
{
    /// A thinker with its seat declaration and its objective (the task, as system content).
    pub fn new(declaration: ThinkerDeclaration, objective: impl Into<String>) -> Self {
        Self {
            core: ThinkerCore::new(declaration, objective.into()),
            shape: Arc::new(AnswerShape::new()),
            guardrails: Vec::new(),
            observer: ThinkerObserver::default(),
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
    /// delegate runs in the scope of whatever job submits it.
    pub fn sub_thinker(&self, depth: Depth) -> Arc<dyn ToolProvider> {
        subthinker::door_for(&self.core, &self.observer, depth)
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

    /// The shape of the answer type (its schema and decoder).
    pub fn answer_shape(&self) -> &AnswerShape<A> {
        &self.shape
    }

    /// A shared view of the thinker's state, readable after a run.
    pub fn observer(&self) -> ThinkerObserver {
        self.observer.clone()
    }

    /// The conversation so far as text: every message, tool call and tool result in order.
    pub fn transcript(&self) -> String {
        self.observer.transcript()
    }

    /// The job of one run over `input`. **It continues the conversation an earlier run of this
    /// thinker left** (the model sees the earlier questions and answers), or starts a new one;
    /// [`SingleObjectiveThinker::ask_fresh`] always starts a new one.
    pub fn ask(&self, input: impl Into<ThinkerInput>) -> ThinkerJob<A> {
        let input = input.into();
        ThinkerJob {
            core: self.core.clone(),
            shape: self.shape.clone(),
            guardrails: self.guardrails.clone(),
            observer: self.observer.clone(),
            input,
            resume: None,
        }
    }

    /// The job of one run over `input` in a conversation of its own: nothing an earlier run of
    /// this thinker said is in it, and nothing it says reaches later runs or
    /// [`SingleObjectiveThinker::observer`] (read it from [`ThinkerJob::observer`]). Use it to
    /// run one definition many times: a batch, a benchmark, one run per request.
    pub fn ask_fresh(&self, input: impl Into<ThinkerInput>) -> ThinkerJob<A> {
        let mut job = self.ask(input);
        job.observer = ThinkerObserver::default();
        job
    }

    /// The job of one run that resumes the conversation saved under `id` (it must exist: an
    /// unknown id fails the run with an error naming it). The query arrives as the next user
    /// message; the objective stays the one the conversation began with.
    pub fn resume(&self, id: ConversationId, input: impl Into<ThinkerInput>) -> ThinkerJob<A> {
        let mut job = self.ask(input);
        job.resume = Some(id);
        job
    }
}

seat_in_core!(impl<A> for SingleObjectiveThinker<A>);

impl<A> HasCore for SingleObjectiveThinker<A> {
    fn core_mut(&mut self) -> &mut ThinkerCore {
        &mut self.core
    }
}
impl<A> ThinkerBuilder for SingleObjectiveThinker<A> {}
impl<A> LoopThinkerBuilder for SingleObjectiveThinker<A> {}

/// One run of a [`SingleObjectiveThinker`]: an orchestrator whose output is the typed answer.
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
    /// A shared view of this run's conversation (the thinker's own observer, except for
    /// [`SingleObjectiveThinker::ask_fresh`]).
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
