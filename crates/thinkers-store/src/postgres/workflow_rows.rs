//! The rows of the `workflows` table, as the `thinkers-workflows` crate and the store read them: a
//! workflow's id, state and status, and the counts per state.

use serde_json::Value;
use std::fmt;

use thinkers::job::JobId;
use thinkers::{Error, Result};

/// The id of a submitted workflow (a UUID v7: time-ordered), which is also its Restate workflow
/// key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkflowId(pub uuid::Uuid);

impl WorkflowId {
    /// A fresh id.
    pub fn new() -> Self {
        Self(uuid::Uuid::now_v7())
    }

    /// Parse an id as printed by `Display`.
    pub fn parse(s: &str) -> Result<Self> {
        uuid::Uuid::parse_str(s.trim()).map(Self).map_err(|e| {
            Error::invalid_input(
                "workflow id",
                Some(s.to_owned()),
                format!("not a UUID: {e}"),
            )
        })
    }
}

impl Default for WorkflowId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for WorkflowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// Where a workflow is.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkflowState {
    /// Submitted; no service process has started it yet.
    Queued,
    /// Running on a service process.
    Running {
        /// The service process's name.
        worker: String,
        /// When its current round started, milliseconds since the Unix epoch.
        since_ms: i64,
    },
    /// Done; its output.
    Succeeded {
        /// The root job's output as JSON.
        output: Value,
    },
    /// Failed; the error.
    Failed {
        /// What went wrong.
        error: String,
    },
    /// Stopped to wait for a person's decision on a tool call (see [`thinkers::durable`]); it
    /// holds no job, seat or permit. A decision resolves the durable promise it waits on, and
    /// its next round replays it from the journal.
    AwaitingApproval {
        /// Which calls it waits for.
        waiting: String,
    },
}

impl WorkflowState {
    /// `queued`, `running`, `succeeded`, `failed` or `awaiting_approval`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::AwaitingApproval { .. } => "awaiting_approval",
            Self::Queued => "queued",
            Self::Running { .. } => "running",
            Self::Succeeded { .. } => "succeeded",
            Self::Failed { .. } => "failed",
        }
    }

    /// Whether the workflow has finished (succeeded or failed).
    pub fn is_finished(&self) -> bool {
        matches!(self, Self::Succeeded { .. } | Self::Failed { .. })
    }
}

/// A workflow's row.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowStatus {
    /// Its id.
    pub id: WorkflowId,
    /// The registered name.
    pub name: String,
    /// The input it was submitted with.
    pub input: Value,
    /// Rounds started so far (0 while never started): a round begins on every start, every
    /// resumption after a decision and every replay after a process died.
    pub attempt: u32,
    /// The root job of the current or last run (its trajectory is in the store).
    pub run: Option<JobId>,
    /// When it was submitted, milliseconds since the Unix epoch.
    pub submitted_at_ms: i64,
    /// When it finished.
    pub finished_at_ms: Option<i64>,
    /// Where it is.
    pub state: WorkflowState,
}

/// How many workflows are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkflowCounts {
    /// Not started yet.
    pub queued: u64,
    /// Running.
    pub running: u64,
    /// Done.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Waiting for a person's decision.
    pub awaiting_approval: u64,
}

impl WorkflowCounts {
    /// Succeeded plus failed.
    pub fn finished(&self) -> u64 {
        self.succeeded + self.failed
    }
}
