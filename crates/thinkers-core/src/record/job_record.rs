//! One job as stored ([`JobRecord`]): its start row merged with its end row, the shape every
//! store returns a workflow's jobs in and the input of the trajectory renderer
//! (`thinkers::ops::trajectory`). [`MemoryRecorder::records`] converts what an in-memory
//! recorder holds.

use serde::{Deserialize, Serialize};

use super::{JobRow, JobStatus, MemoryRecorder};
use crate::id::JobId;

/// One job as stored: the start row merged with the end row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job's id.
    pub id: JobId,
    /// The parent job, if any.
    pub parent: Option<JobId>,
    /// The root of the job's workflow.
    pub workflow: JobId,
    /// The job class.
    pub class: String,
    /// The step ordinal under the parent, if stamped.
    pub ordinal: Option<u32>,
    /// How the job ended ([`JobStatus::Running`] until its end is recorded).
    pub status: JobStatus,
    /// The error kind, when it did not succeed.
    pub error_kind: Option<String>,
    /// The error message, when it did not succeed.
    pub error: Option<String>,
    /// Submission time, milliseconds since the Unix epoch.
    pub started_at_ms: i64,
    /// End time, milliseconds since the Unix epoch, once ended.
    pub ended_at_ms: Option<i64>,
    /// How many attempts ran (0 until the end is recorded).
    pub attempts: u32,
}

impl JobRecord {
    /// How long the job ran, in milliseconds, once it has ended.
    pub fn duration_ms(&self) -> Option<i64> {
        self.ended_at_ms
            .map(|end| end.saturating_sub(self.started_at_ms).max(0))
    }
}

impl From<JobRow> for JobRecord {
    fn from(row: JobRow) -> Self {
        let JobRow { start, end } = row;
        let (status, error_kind, error, ended_at_ms, attempts) = match end {
            Some(e) => (
                e.status,
                e.error_kind,
                e.error,
                Some(e.ended_at_ms),
                e.attempts,
            ),
            None => (JobStatus::Running, None, None, None, 0),
        };
        Self {
            id: start.id,
            parent: start.parent,
            workflow: start.workflow,
            class: start.class,
            ordinal: start.ordinal,
            status,
            error_kind,
            error,
            started_at_ms: start.started_at_ms,
            ended_at_ms,
            attempts,
        }
    }
}

impl MemoryRecorder {
    /// Every job this recorder holds as a [`JobRecord`], in submission order, ready for
    /// the trajectory renderer.
    pub fn records(&self) -> Vec<JobRecord> {
        self.jobs().into_iter().map(JobRecord::from).collect()
    }
}
