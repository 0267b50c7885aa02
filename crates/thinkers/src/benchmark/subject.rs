//! [`BenchmarkSubject`]: what a benchmark can race — a model-dependent job maker that shows, after
//! a run, what the run did. Every family is one: the single-objective, toolless and decision
//! thinkers (a decision's ranking through [`RankingSubject`]), a chat turn (reactive or chat
//! thinker, the message as input), and one-call tools through [`OneCallSubject`].

use std::sync::{Arc, Mutex, PoisonError};

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Result;
use crate::job::Job;
use crate::model::{Grade, ModelDependent};
use crate::onecall::{ModelTool, ModelToolJob};
use crate::thinker::{
    ChatThinker, Choice, DecisionJob, DecisionThinker, Ranking, ReactiveThinker, ReactiveTurn,
    Thinker, ThinkerInput, ThinkerJob, ThinkerObserver, ToollessJob, ToollessThinker,
};
use crate::tool::ToolCallContext;

/// What a finished run shows the judge besides its answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunEvidence {
    /// The run in order: messages, every tool call with its arguments and what it returned.
    pub transcript: String,
    /// Loop iterations (a thinker's turns, a one-call tool's attempts), when the subject counts
    /// them; otherwise the report counts model calls.
    pub iterations: Option<u32>,
}

/// A model-dependent job maker a [`super::Benchmark`] can race across a grade.
///
/// The benchmark makes one subject per run through its factory, pins it (or not, for the
/// reference) through [`ModelDependent::pin_model`], asks it for the job of the run and, once the
/// job has finished, for its [`RunEvidence`]. A subject therefore serves exactly one run: it may
/// keep shared state (a thinker's observer) that the evidence reads.
pub trait BenchmarkSubject: ModelDependent + Send + 'static {
    /// The input every run gets.
    type Input: Serialize + Clone + Send + Sync + 'static;
    /// The answer of one run.
    type Output: Serialize + Send + 'static;
    /// The job of one run.
    type Job: Job<Output = Self::Output>;

    /// The job of one run over `input`, at this subject's grade and pin.
    fn job(&mut self, input: Self::Input) -> Result<Self::Job>;

    /// What the finished run did.
    fn evidence(&self) -> RunEvidence;
}

impl<A> BenchmarkSubject for Thinker<A>
where
    A: DeserializeOwned + JsonSchema + Serialize + Send + Sync + 'static,
{
    type Input = ThinkerInput;
    type Output = A;
    type Job = ThinkerJob<A>;

    fn job(&mut self, input: ThinkerInput) -> Result<ThinkerJob<A>> {
        Ok(self.ask(input))
    }

    fn evidence(&self) -> RunEvidence {
        observed(&self.observer())
    }
}

/// What a thinker's observer shows after its run: the conversation as text and the model turns
/// taken.
fn observed(observer: &ThinkerObserver) -> RunEvidence {
    RunEvidence {
        transcript: observer.transcript(),
        iterations: Some(observer.state().turns),
    }
}

/// A toolless thinker races like any thinker: each run is one [`ToollessJob`] over the input,
/// its model calls (one per candidate answer) on its row.
impl<I, O> BenchmarkSubject for ToollessThinker<I, O>
where
    I: Serialize + Clone + Send + Sync + 'static,
    O: DeserializeOwned + JsonSchema + Serialize + Clone + Send + Sync + 'static,
{
    type Input = I;
    type Output = O;
    type Job = ToollessJob<I, O>;

    fn job(&mut self, input: I) -> Result<ToollessJob<I, O>> {
        Ok(self.ask(input))
    }

    fn evidence(&self) -> RunEvidence {
        observed(&self.observer())
    }
}

/// A decision thinker races its [`DecisionThinker::choose`]; the judge reads the chosen option
/// with the confidences. For a ranking, race [`RankingSubject`].
impl BenchmarkSubject for DecisionThinker {
    type Input = ThinkerInput;
    type Output = Choice;
    type Job = DecisionJob<Choice>;

    fn job(&mut self, input: ThinkerInput) -> Result<DecisionJob<Choice>> {
        Ok(self.choose(input))
    }

    fn evidence(&self) -> RunEvidence {
        observed(&self.observer())
    }
}

/// A decision thinker's [`DecisionThinker::rank`] of the `k` best options as a benchmark subject.
#[derive(Debug)]
pub struct RankingSubject {
    thinker: DecisionThinker,
    k: usize,
}

impl RankingSubject {
    /// Runs that rank the `k` best options of `thinker`. A `k` outside 1 to the number of
    /// options fails every run with the error [`DecisionThinker::rank`] gives.
    pub fn new(thinker: DecisionThinker, k: usize) -> Self {
        Self { thinker, k }
    }
}

impl ModelDependent for RankingSubject {
    fn grade(&self) -> Grade {
        self.thinker.grade()
    }
    fn set_grade(&mut self, grade: Grade) {
        self.thinker.set_grade(grade);
    }
    fn pin(&self) -> Option<&str> {
        self.thinker.pin()
    }
    fn pin_model(&mut self, entry: String) {
        self.thinker.pin_model(entry);
    }
}

impl BenchmarkSubject for RankingSubject {
    type Input = ThinkerInput;
    type Output = Ranking;
    type Job = DecisionJob<Ranking>;

    fn job(&mut self, input: ThinkerInput) -> Result<DecisionJob<Ranking>> {
        self.thinker.rank(input, self.k)
    }

    fn evidence(&self) -> RunEvidence {
        observed(&self.thinker.observer())
    }
}

/// One chat turn as a benchmark subject: the input is the person's message, the run is the turn
/// that answers it ([`ReactiveThinker::turn`]), the output the answer's text. Each run's thinker
/// comes from the factory, so make it start its own conversation (the default): runs that
/// resumed one shared conversation would race to write it.
impl BenchmarkSubject for ReactiveThinker {
    type Input = String;
    type Output = String;
    type Job = ReactiveTurn;

    fn job(&mut self, message: String) -> Result<ReactiveTurn> {
        let _ = self.add_message(message);
        Ok(self.turn())
    }

    fn evidence(&self) -> RunEvidence {
        observed(&self.observer())
    }
}

/// A [`ChatThinker`]'s turn as a benchmark subject, as for [`ReactiveThinker`].
impl BenchmarkSubject for ChatThinker {
    type Input = String;
    type Output = String;
    type Job = ReactiveTurn;

    fn job(&mut self, message: String) -> Result<ReactiveTurn> {
        let _ = self.add_message(message);
        Ok(self.turn())
    }

    fn evidence(&self) -> RunEvidence {
        observed(&self.observer())
    }
}

/// A one-call model tool as a benchmark subject: each run is one [`ModelToolJob`] at the
/// subject's grade (which replaces the grade the tool declares) and pin.
pub struct OneCallSubject<T: ModelTool> {
    tool: Arc<T>,
    grade: Grade,
    pin: Option<String>,
    log: Arc<Mutex<CallLog>>,
}

#[derive(Debug, Default)]
struct CallLog {
    prompt: String,
    answers: Vec<String>,
}

impl<T: ModelTool> std::fmt::Debug for OneCallSubject<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OneCallSubject")
            .field("tool", &T::NAME)
            .field("grade", &self.grade)
            .field("pin", &self.pin)
            .finish_non_exhaustive()
    }
}

impl<T: ModelTool> OneCallSubject<T> {
    /// Runs of `tool` at `grade`.
    pub fn new(tool: Arc<T>, grade: Grade) -> Self {
        Self {
            tool,
            grade,
            pin: None,
            log: Arc::default(),
        }
    }
}

impl<T: ModelTool> ModelDependent for OneCallSubject<T> {
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

impl<T: ModelTool> BenchmarkSubject for OneCallSubject<T>
where
    T::Input: Clone,
{
    type Input = T::Input;
    type Output = T::Output;
    type Job = ModelToolJob<T>;

    fn job(&mut self, input: T::Input) -> Result<ModelToolJob<T>> {
        let prompt = format!(
            "{}\n\n{}",
            self.tool.instructions(),
            self.tool.render_prompt(&input)?
        );
        lock(&self.log).prompt = prompt;
        let log = self.log.clone();
        let caller = ToolCallContext::of_caller(self.grade, self.pin.clone(), None);
        let mut job = ModelToolJob::for_call(self.tool.clone(), input, &caller)?.on_exchange(
            Arc::new(move |exchange| {
                if let Some(outcome) = exchange.outcome {
                    lock(&log).answers.push(outcome.response.text());
                }
            }),
        );
        // The subject's grade wins over the one the tool declares, so the race stays in it.
        job.set_grade(self.grade);
        Ok(job)
    }

    fn evidence(&self) -> RunEvidence {
        let log = lock(&self.log);
        let mut transcript = format!("=== prompt ===\n{}\n", log.prompt);
        for (i, answer) in log.answers.iter().enumerate() {
            transcript.push_str(&format!("\n=== answer, attempt {} ===\n{answer}\n", i + 1));
        }
        RunEvidence {
            transcript,
            iterations: u32::try_from(log.answers.len()).ok(),
        }
    }
}

fn lock(log: &Mutex<CallLog>) -> std::sync::MutexGuard<'_, CallLog> {
    log.lock().unwrap_or_else(PoisonError::into_inner)
}
