//! The rows of the workflow queue's tables, as the queue ([`crate::queue`]) and the store read
//! them: a workflow's id, state and status, the counts per state, and a claim.

use serde_json::Value;
use std::fmt;

use crate::job::JobId;
use crate::{Error, Result};

/// The id of a submitted workflow (a UUID v7: time-ordered, so the queue serves oldest first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueId(pub uuid::Uuid);

impl QueueId {
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

impl Default for QueueId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for QueueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// A workflow a worker claimed.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    pub(crate) id: QueueId,
    pub(crate) name: String,
    pub(crate) input: String,
    pub(crate) attempt: u32,
}

/// Where a workflow is.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkflowState {
    /// Waiting for a worker.
    Queued,
    /// Claimed by a worker.
    Running {
        /// The worker's name.
        worker: String,
        /// When the worker claimed it, milliseconds since the Unix epoch.
        since_ms: i64,
        /// The lease has passed without a heartbeat: the worker is probably gone, and the next
        /// worker to look claims the workflow again.
        lease_expired: bool,
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
    /// Stopped to wait for a person's decision on a tool call (see [`crate::durable`]); no
    /// worker holds it. Once every pending call of it is decided it is queued again, and the
    /// worker that claims it replays it from the journal.
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

/// A workflow's row in the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowStatus {
    /// Its id.
    pub id: QueueId,
    /// The queue it was submitted to.
    pub queue: String,
    /// The registered name.
    pub name: String,
    /// The input it was submitted with.
    pub input: Value,
    /// Claims so far (0 while never claimed).
    pub attempt: u32,
    /// Claims allowed.
    pub max_attempts: u32,
    /// The root job of the current or last run (its trajectory is in the store).
    pub run: Option<JobId>,
    /// When it was submitted, milliseconds since the Unix epoch.
    pub submitted_at_ms: i64,
    /// When it finished.
    pub finished_at_ms: Option<i64>,
    /// Where it is.
    pub state: WorkflowState,
}

/// How many workflows of a queue are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// Waiting for a worker.
    pub queued: u64,
    /// Claimed.
    pub running: u64,
    /// Done.
    pub succeeded: u64,
    /// Failed.
    pub failed: u64,
    /// Waiting for a person's decision.
    pub awaiting_approval: u64,
}

impl QueueCounts {
    /// Succeeded plus failed.
    pub fn finished(&self) -> u64 {
        self.succeeded + self.failed
    }
}
