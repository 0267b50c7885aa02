//! An in-memory recorder for tests and in-process inspection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::{CompactionRow, JobEnd, JobStart, JobStatus, LimitEvent, LlmRun, Recorder};
use crate::id::JobId;

/// A stored job row: the start row merged with its end row.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    /// What the submission door wrote.
    pub start: JobStart,
    /// What the end wrote, once the job ended.
    pub end: Option<JobEnd>,
}

impl JobRow {
    /// The job's status (running until its end row arrives).
    pub fn status(&self) -> JobStatus {
        self.end.as_ref().map_or(JobStatus::Running, |e| e.status)
    }
}

#[derive(Default)]
struct Inner {
    /// Job rows in submission order; `index` finds one by id. (The rows stay put as the index
    /// grows, so a long run does not keep moving them.)
    jobs: Vec<JobRow>,
    index: HashMap<JobId, usize>,
    runs: Vec<LlmRun>,
    compactions: Vec<CompactionRow>,
    limits: Vec<LimitEvent>,
}

/// Keeps every row in memory. Cheap to clone; clones share the rows.
#[derive(Clone, Default)]
pub struct MemoryRecorder {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for MemoryRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryRecorder").finish_non_exhaustive()
    }
}

impl MemoryRecorder {
    /// A new, empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every job row, in submission order.
    pub fn jobs(&self) -> Vec<JobRow> {
        self.lock().jobs.clone()
    }

    /// One job row.
    pub fn job(&self, id: JobId) -> Option<JobRow> {
        let g = self.lock();
        g.index.get(&id).and_then(|&at| g.jobs.get(at)).cloned()
    }

    /// Every model-call row, in arrival order.
    pub fn llm_runs(&self) -> Vec<LlmRun> {
        self.lock().runs.clone()
    }

    /// Every compaction row, in arrival order.
    pub fn compactions(&self) -> Vec<CompactionRow> {
        self.lock().compactions.clone()
    }

    /// Every admission event (throttles, rate changes), in arrival order.
    pub fn limit_events(&self) -> Vec<LimitEvent> {
        self.lock().limits.clone()
    }
}

impl Recorder for MemoryRecorder {
    fn job_started(&self, row: JobStart) {
        let mut g = self.lock();
        let at = g.jobs.len();
        g.index.insert(row.id, at);
        g.jobs.push(JobRow {
            start: row,
            end: None,
        });
    }

    fn job_finished(&self, row: JobEnd) {
        let mut g = self.lock();
        let Some(&at) = g.index.get(&row.id) else {
            return;
        };
        if let Some(job) = g.jobs.get_mut(at) {
            job.end = Some(row);
        }
    }

    fn llm_run(&self, row: LlmRun) {
        self.lock().runs.push(row);
    }

    fn compaction(&self, row: CompactionRow) {
        self.lock().compactions.push(row);
    }

    fn limit_event(&self, row: LimitEvent) {
        self.lock().limits.push(row);
    }
}
