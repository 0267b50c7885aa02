//! Benchmarks: one model-dependent job raced across every model of its grade, judged blind.
//!
//! A [`Benchmark`] is a doer over a factory of [`BenchmarkSubject`]s (any thinker family — a
//! [`crate::thinker::Thinker`], a [`crate::thinker::ToollessThinker`], a
//! [`crate::thinker::DecisionThinker`] (its ranking through [`RankingSubject`]), a chat turn of a
//! [`crate::thinker::ReactiveThinker`] or [`crate::thinker::ChatThinker`] —, a one-call tool
//! through [`OneCallSubject`], or any model-dependent job maker) and the job's own input:
//!
//! 1. **Reference.** One run, unpinned, alone: whatever the picker serves for the grade. Its
//!    transcript (every tool called and what each returned) and its answer are the ground truth,
//!    and its answer is what the benchmark returns, so wrapping a step in a benchmark does not
//!    change what the workflow gets.
//! 2. **Race.** `times` runs on every open, callable entry of the grade (or an explicit list),
//!    each pinned to its entry and otherwise identical, all submitted in one step so admission
//!    orders them.
//! 3. **Judging.** As each run lands, a [`JudgeTool`] call at [`crate::model::Grade::Ceiling`]
//!    is submitted for it at once, so judging overlaps the race. The judge compares the run with
//!    the reference under one fixed rubric and never sees a model's name: the [`Blinder`] scrubs
//!    both sides of the catalog's names and of the names models call themselves by
//!    ([`SELF_NAMES`], extended with [`Benchmark::hide_names`]). An optional scorer adds a score
//!    computed in code.
//! 4. **Report.** A [`BenchmarkReport`] (one row per run, means per model) is logged as a table,
//!    published on the benchmark job's metadata under [`REPORT`] and kept in the
//!    [`ReportSlot`] that [`Benchmark::report`] hands out.
//!
//! The numbers on each row come from the [`CostLedger`](crate::ops::CostLedger): the dispatcher's
//! recorder feeds it ([`LedgerRecorder`](crate::ops::LedgerRecorder); [`crate::Runtime`] wires both) and it totals the calls of the subtree of
//! jobs rooted at each run, so calls made by a thinker's tools and sub-thinkers land on the
//! thinker's row.
//!
//! Failures: a failed run is a row that says so; a failed reference fails the benchmark after
//! the table is logged, with every run left unjudged; a failed judge costs only its run's score
//! (the reason is on the row), and the report names a judge failure only when every judge failed.

mod blinder;
mod judge;
mod report;
mod run;
mod subject;

pub use blinder::{Blinder, HIDDEN, SELF_NAMES};
pub use judge::JudgeInput;
pub use judge::JudgeTool;
pub use judge::JudgeVerdict;
pub use judge::RunSheet;
pub use report::ModelMeans;
pub use report::{BenchmarkReport, RunRole, RunRow};
pub use subject::{BenchmarkSubject, OneCallSubject, RankingSubject, RunEvidence};

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError};

use crate::model::{Grade, ModelRouter};

/// The metadata key under which a benchmark job publishes its report (as JSON).
pub const REPORT: &str = "benchmark.report";

/// A code-computed score of a candidate's answer against the reference's: `(reference,
/// candidate) → score`.
pub(crate) type Scorer<O> = Arc<dyn Fn(&O, &O) -> f64 + Send + Sync>;

/// Sees the benchmark's progress (the CLI draws a bar per run from it).
pub(crate) type ProgressHook = Arc<dyn Fn(&BenchmarkEvent) + Send + Sync>;

/// One step of a benchmark's progress. Runs are numbered as rows: 0 is the reference, then the
/// candidates in submission order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BenchmarkEvent {
    /// Every run the benchmark will make: (role, entry or `-` for the reference, run number).
    Planned(Vec<(RunRole, String, u32)>),
    /// A run was submitted.
    RunStarted(usize),
    /// A run ended.
    RunFinished {
        /// The run.
        index: usize,
        /// Whether it produced an answer.
        succeeded: bool,
    },
    /// A run's judge was submitted.
    JudgeStarted(usize),
    /// A run's judge ended.
    JudgeFinished {
        /// The run.
        index: usize,
        /// The score, when the judge succeeded.
        score: Option<u8>,
    },
}

/// Where a benchmark leaves its report; clone it before submitting the benchmark and read it
/// after the run.
#[derive(Debug, Clone, Default)]
pub struct ReportSlot(Arc<Mutex<Option<BenchmarkReport>>>);

impl ReportSlot {
    /// The report, once the benchmark has finished (successfully or not).
    pub fn get(&self) -> Option<BenchmarkReport> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, report: BenchmarkReport) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(report);
    }
}

/// A job raced across its grade (see the [module docs](self)). Its output is the reference run's.
pub struct Benchmark<S: BenchmarkSubject> {
    factory: Arc<dyn Fn() -> S + Send + Sync>,
    input: S::Input,
    times: u32,
    candidates: Option<Vec<String>>,
    scorer: Option<Scorer<S::Output>>,
    progress: Option<ProgressHook>,
    report: ReportSlot,
    class: Cow<'static, str>,
    /// Self-names the blinder hides besides the built-in ones.
    self_names: Vec<String>,
}

impl<S: BenchmarkSubject> std::fmt::Debug for Benchmark<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Benchmark")
            .field("class", &self.class)
            .field("times", &self.times)
            .field("candidates", &self.candidates)
            .finish_non_exhaustive()
    }
}

impl<S: BenchmarkSubject> Benchmark<S> {
    /// Race the subjects `factory` makes (one per run) over `input`, `times` runs per entry.
    pub fn new(
        factory: impl Fn() -> S + Send + Sync + 'static,
        input: S::Input,
        times: u32,
    ) -> Self {
        Self {
            factory: Arc::new(factory),
            input,
            times,
            candidates: None,
            scorer: None,
            progress: None,
            report: ReportSlot::default(),
            class: Cow::Borrowed("benchmark"),
            self_names: Vec::new(),
        }
    }

    /// Race these catalog entries instead of every open, callable entry of the grade.
    #[must_use]
    pub fn candidates<E: Into<String>>(mut self, entries: impl IntoIterator<Item = E>) -> Self {
        self.candidates = Some(entries.into_iter().map(Into::into).collect());
        self
    }

    /// Add a code-computed score: `scorer(reference, candidate)`.
    #[must_use]
    pub fn scorer(
        mut self,
        scorer: impl Fn(&S::Output, &S::Output) -> f64 + Send + Sync + 'static,
    ) -> Self {
        self.scorer = Some(Arc::new(scorer));
        self
    }

    /// Also keep these names from the judge: model families, makers or assistants a run may
    /// call itself by that [`SELF_NAMES`] lacks. Each is hidden like the built-in ones, as a
    /// whole word in any case with its version (see [`Blinder::hide_self_name`]).
    #[must_use]
    pub fn hide_names<N: Into<String>>(mut self, names: impl IntoIterator<Item = N>) -> Self {
        self.self_names.extend(names.into_iter().map(Into::into));
        self
    }

    /// Report progress to `hook`.
    #[must_use]
    pub fn on_progress(mut self, hook: impl Fn(&BenchmarkEvent) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(hook));
        self
    }

    /// The job class recorded for the benchmark (default `benchmark`).
    #[must_use]
    pub fn class(mut self, class: impl Into<Cow<'static, str>>) -> Self {
        self.class = class.into();
        self
    }

    /// Where the report will be; read it after the run.
    pub fn report(&self) -> ReportSlot {
        self.report.clone()
    }
}

/// The entries a benchmark of `grade` races by default: the open entries of the rung inside the
/// envelope whose provider's API key is available, in catalog order.
pub(crate) fn open_candidates(router: &ModelRouter, grade: Grade) -> Vec<String> {
    router
        .candidates(grade)
        .into_iter()
        .filter(|e| {
            router
                .catalog()
                .provider(e.provider())
                .and_then(crate::model::catalog::Provider::api_key)
                .is_ok()
        })
        .map(|e| e.id().to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::catalog::BUNDLED_TOML;
    use crate::model::{Catalog, Envelope};

    #[test]
    fn entries_whose_key_is_missing_are_not_raced() {
        // The Anthropic-dialect provider now reads a key nobody set.
        let toml = BUNDLED_TOML.replacen(
            "base_url = \"{sim}\"\napi_key_env = \"THINKERS_SIM_KEY\"",
            "base_url = \"{sim}\"\napi_key_env = \"THINKERS_BENCH_TEST_UNSET_KEY\"",
            1,
        );
        assert_ne!(toml, BUNDLED_TOML);
        let catalog = Catalog::from_toml_str(&toml, "test").unwrap();
        let router = ModelRouter::with_headroom_picker(catalog, Envelope::unrestricted());
        assert_eq!(
            open_candidates(&router, Grade::Small),
            ["sim-small-a", "sim-small-text"]
        );
        let all = ModelRouter::with_headroom_picker(Catalog::bundled(), Envelope::unrestricted());
        assert_eq!(
            open_candidates(&all, Grade::Small),
            ["sim-small-a", "sim-small-b", "sim-small-text"]
        );
        // Ceiling races the strongest rung; closed entries never run.
        assert_eq!(
            open_candidates(&all, Grade::Ceiling),
            ["sim-mega-a", "sim-mega-b"]
        );
        assert!(!open_candidates(&all, Grade::Medium).contains(&"sim-medium-legacy".to_owned()));
    }
}
