//! The subject every race test uses: a job that answers with the catalog entry it was served,
//! plus helpers that read the recorder and the sim's request log.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use thinkers::benchmark::{BenchmarkReport, BenchmarkSubject, RunEvidence};
use thinkers::conversation::Message;
use thinkers::job::{JobContext, JobId, Orchestrator};
use thinkers::llm::{ChatRequest, LlmCall};
use thinkers::model::{Grade, ModelDependent, OutputSize};
use thinkers::record::{JobRow, LlmRun, MemoryRecorder};
use thinkers_sim::SimConfig;

use crate::offline::{self, Setup};

/// When a [`Served`] run fails on purpose (after its model call, so the call is on record).
#[derive(Debug, Clone, PartialEq)]
pub enum FailOn {
    Never,
    /// The unpinned run (the reference).
    Unpinned,
    /// A run pinned to this entry.
    Pin(&'static str),
}

/// Makes one job that asks a small model a question and answers with the entry that served it.
/// The transcript it shows names that entry, so a judge prompt would leak it unless blinded.
#[derive(Debug)]
pub struct Served {
    pub pin: Option<String>,
    pub fail: FailOn,
    /// Runs pinned to `.0` append `.1` to their answer.
    pub marker: Option<(&'static str, &'static str)>,
    pub transcript: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Served {
    pub fn new() -> Self {
        Self::failing(FailOn::Never)
    }

    pub fn failing(fail: FailOn) -> Self {
        Self {
            pin: None,
            fail,
            marker: None,
            transcript: Default::default(),
        }
    }

    pub fn marking(entry: &'static str, marker: &'static str) -> Self {
        Self {
            marker: Some((entry, marker)),
            ..Self::new()
        }
    }
}

impl ModelDependent for Served {
    fn grade(&self) -> Grade {
        Grade::Small
    }
    fn set_grade(&mut self, _grade: Grade) {}
    fn pin(&self) -> Option<&str> {
        self.pin.as_deref()
    }
    fn pin_model(&mut self, entry: String) {
        self.pin = Some(entry);
    }
}

impl BenchmarkSubject for Served {
    type Input = String;
    type Output = String;
    type Job = ServedJob;

    fn job(&mut self, question: String) -> thinkers::Result<ServedJob> {
        let fail = match &self.fail {
            FailOn::Never => false,
            FailOn::Unpinned => self.pin.is_none(),
            FailOn::Pin(p) => self.pin.as_deref() == Some(*p),
        };
        let marker = self
            .marker
            .filter(|(entry, _)| self.pin.as_deref() == Some(*entry))
            .map(|(_, m)| m);
        Ok(ServedJob {
            question,
            pin: self.pin.clone(),
            fail,
            marker,
            transcript: self.transcript.clone(),
        })
    }

    fn evidence(&self) -> RunEvidence {
        RunEvidence {
            transcript: self.transcript.lock().unwrap().clone(),
            iterations: None,
        }
    }
}

/// One run of [`Served`]: a doer over one model call.
pub struct ServedJob {
    question: String,
    pin: Option<String>,
    fail: bool,
    marker: Option<&'static str>,
    transcript: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Orchestrator for ServedJob {
    type Output = String;

    fn class(&self) -> std::borrow::Cow<'static, str> {
        "served_model".into()
    }

    async fn execute(&mut self, cx: &JobContext) -> thinkers::Result<String> {
        let request = ChatRequest::new(
            "Answer the question in one short sentence.",
            vec![Message::user_text(self.question.clone())],
        );
        let mut call =
            LlmCall::new(Grade::Small, OutputSize::Verdict, request).class("served_call");
        if let Some(pin) = &self.pin {
            call = call.pinned(pin.clone());
        }
        let outcome = cx.submit(call).await?;
        let text = outcome.response.text();
        *self.transcript.lock().unwrap() = format!(
            "question: {}\nserved by: {} ({})\nreply: {text}",
            self.question, outcome.entry, outcome.model
        );
        if self.fail {
            return Err(thinkers::Error::invalid_input(
                "entry",
                Some(outcome.entry.to_string()),
                "this test job refuses to answer from this run",
            ));
        }
        Ok(match self.marker {
            Some(m) => format!("{} {m}", outcome.entry),
            None => outcome.entry.to_string(),
        })
    }
}

/// A calm sim (bodies logged) and a runtime over the bundled catalog.
pub async fn setup(tune: impl FnOnce(SimConfig) -> SimConfig) -> Setup {
    offline::start(Duration::from_secs(10), tune).await
}

/// Every job id in the subtree rooted at `root` (itself included), from the recorder's rows.
pub fn subtree(rec: &MemoryRecorder, root: JobId) -> HashSet<JobId> {
    let jobs = rec.jobs();
    let mut children: HashMap<JobId, Vec<JobId>> = HashMap::new();
    for j in &jobs {
        if let Some(p) = j.start.parent {
            children.entry(p).or_default().push(j.start.id);
        }
    }
    let mut out = HashSet::new();
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        if out.insert(id) {
            stack.extend(children.get(&id).cloned().unwrap_or_default());
        }
    }
    out
}

/// The recorded model calls of the subtree rooted at `root`.
pub fn runs_under(rec: &MemoryRecorder, root: JobId) -> Vec<LlmRun> {
    let ids = subtree(rec, root);
    rec.llm_runs()
        .into_iter()
        .filter(|r| ids.contains(&r.job))
        .collect()
}

/// The recorded children of `parent`.
pub fn children(rec: &MemoryRecorder, parent: JobId) -> Vec<JobRow> {
    rec.jobs()
        .into_iter()
        .filter(|j| j.start.parent == Some(parent))
        .collect()
}

/// Check a row's numbers against the recorder: calls, tokens, latency and cost per currency.
pub fn assert_row_matches_records(report: &BenchmarkReport, rec: &MemoryRecorder) {
    for row in &report.rows {
        if row.job.is_empty() {
            continue;
        }
        let runs = runs_under(rec, JobId::parse(&row.job).unwrap());
        assert_eq!(row.calls, runs.len() as u64, "calls of {row:?}");
        assert_eq!(
            row.input_tokens,
            runs.iter().map(|r| r.input_tokens).sum::<u64>(),
            "input tokens of {row:?}"
        );
        assert_eq!(
            row.output_tokens,
            runs.iter().map(|r| r.output_tokens).sum::<u64>(),
            "output tokens of {row:?}"
        );
        assert_eq!(
            (row.cache_read_tokens, row.cache_write_tokens),
            (
                runs.iter().map(|r| r.cached_tokens).sum::<u64>(),
                runs.iter().map(|r| r.cache_write_tokens).sum::<u64>()
            ),
            "cache reads and writes of {row:?}"
        );
        assert_eq!(
            row.latency_ms,
            runs.iter().map(|r| r.latency_ms).sum::<u64>()
        );
        let mut cost: HashMap<String, f64> = HashMap::new();
        for r in &runs {
            *cost.entry(r.currency.clone()).or_default() += r.cost.unwrap();
        }
        assert_eq!(row.cost.len(), cost.len(), "currencies of {row:?}");
        for (cur, v) in &row.cost {
            assert!((cost[cur] - v).abs() < 1e-12, "cost of {row:?}");
        }
    }
}
