//! What the runtime records: job rows and model-call rows, through the [`Recorder`] trait.
//!
//! The dispatcher calls the recorder at the submission door ([`Recorder::job_started`]) and when a
//! job ends ([`Recorder::job_finished`]); the model layer calls [`Recorder::llm_run`] once per model
//! call; admission's events (a throttle, a change of a budget's standing rate) go to
//! [`Recorder::limit_event`]. Recorder methods must not block: a store-backed recorder queues rows and writes them in
//! batches on its own task. [`Recorder::flush`] waits until everything queued so far is durable.
//!
//! Implementations: [`NoopRecorder`] (recording off), [`MemoryRecorder`] (tests, in-process
//! inspection) and the SQLite recorder in `thinkers_store`.

mod job_record;
mod limit;
mod memory;

pub use job_record::JobRecord;
pub use limit::{DETAIL_CHARS, LimitEvent, LimitEventKind, one_line, status_in};
pub use memory::{JobRow, MemoryRecorder};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::id::JobId;

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Submitted and not yet finished.
    Running,
    /// Returned an output.
    Succeeded,
    /// Failed with an error.
    Failed,
    /// Cancelled (itself or an ancestor).
    Cancelled,
    /// Exceeded its timeout.
    TimedOut,
    /// The process running it stopped without recording an end (killed, crashed, lost power);
    /// a later process opening the same store found its owner dead and closed the row.
    Interrupted,
    /// Stopped to wait for a person's decision on a tool call (see `thinkers::durable`); holds
    /// nothing while it waits. A decision lets a replay of its run go on.
    AwaitingApproval,
}

impl JobStatus {
    /// The stable name stored in records.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::TimedOut => "timed_out",
            Self::Interrupted => "interrupted",
            Self::AwaitingApproval => "awaiting_approval",
        }
    }

    /// Parse a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Self::Running,
            "succeeded" => Self::Succeeded,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            "timed_out" => Self::TimedOut,
            "interrupted" => Self::Interrupted,
            "awaiting_approval" => Self::AwaitingApproval,
            _ => return None,
        })
    }
}

/// The row written at the submission door.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobStart {
    /// The job's id.
    pub id: JobId,
    /// The parent job, if any.
    pub parent: Option<JobId>,
    /// The root of the job's workflow (the root job's own id).
    pub workflow: JobId,
    /// The job class (for records and sizing).
    pub class: String,
    /// The step ordinal under the parent, if stamped.
    pub ordinal: Option<u32>,
    /// Submission time, milliseconds since the Unix epoch.
    pub started_at_ms: i64,
}

/// The row update written when a job ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobEnd {
    /// The job's id.
    pub id: JobId,
    /// How it ended.
    pub status: JobStatus,
    /// The error kind, when it did not succeed.
    pub error_kind: Option<String>,
    /// The error message, when it did not succeed.
    pub error: Option<String>,
    /// End time, milliseconds since the Unix epoch.
    pub ended_at_ms: i64,
    /// How many attempts ran (retries included).
    pub attempts: u32,
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LlmRun {
    /// The job that made the call.
    pub job: JobId,
    /// The workflow the job belongs to.
    pub workflow: JobId,
    /// The class of the job that made the call (for sizing).
    pub class: String,
    /// The catalog entry id.
    pub entry: String,
    /// The provider's model name.
    pub model: String,
    /// Every input token of the call as the provider reported it, the cached ones (read and
    /// written) included, whatever the dialect (Anthropic's own `input_tokens` leaves both out;
    /// the decoder adds them back).
    pub input_tokens: u64,
    /// Output tokens the provider reported.
    pub output_tokens: u64,
    /// Reasoning tokens the provider reported (part of or beside output, per provider).
    pub reasoning_tokens: u64,
    /// The part of `input_tokens` read from the provider's prompt cache (cache reads: Anthropic
    /// `cache_read_input_tokens`, OpenAI `cached_tokens`, Bedrock `cacheReadInputTokens`, Gemini
    /// `cachedContentTokenCount`).
    pub cached_tokens: u64,
    /// The part of `input_tokens` written to the provider's prompt cache (cache writes:
    /// Anthropic `cache_creation_input_tokens`, Bedrock `cacheWriteInputTokens`, OpenAI
    /// `cache_write_tokens` where reported). 0 where the provider reports none.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Output tokens booked for the call (the declared output size, as max tokens).
    pub output_budget: u64,
    /// Wall latency of the call in milliseconds.
    pub latency_ms: u64,
    /// The provider's stop reason, normalised (`end_turn`, `tool_use`, `max_tokens`, …).
    pub stop_reason: String,
    /// Cost in the entry's currency; `None` when the entry has no prices (the cost is unknown,
    /// never taken as zero). A call answered from the response cache costs `Some(0.0)`.
    pub cost: Option<f64>,
    /// The entry's currency (ISO code); empty for an entry without prices.
    pub currency: String,
    /// When the call ended, milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// Whether this call was a truncation escalation re-run.
    pub escalated: bool,
}

/// One compaction of a conversation: a run's older turns folded into a summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionRow {
    /// The job whose conversation was compacted (a thinker run).
    pub job: JobId,
    /// The workflow the job belongs to.
    pub workflow: JobId,
    /// The conversation's id.
    pub conversation: String,
    /// Tokens of the request before.
    pub before_tokens: u64,
    /// Tokens of the request after.
    pub after_tokens: u64,
    /// How many messages the summary replaced.
    pub summarized_messages: u64,
    /// When, milliseconds since the Unix epoch.
    pub at_ms: i64,
}

/// Receives the runtime's records. Methods must not block.
pub trait Recorder: Send + Sync + 'static {
    /// A job passed the submission door.
    fn job_started(&self, row: JobStart);
    /// A job ended.
    fn job_finished(&self, row: JobEnd);
    /// A model call completed (successfully or not).
    fn llm_run(&self, row: LlmRun);
    /// A model call completed, and its answer is about to be handed to the job that asked for
    /// it: the returned future resolves once the row is as durable as this recorder makes rows
    /// (a store-backed recorder with durable calls on waits for the commit of the batch that
    /// holds it, so a paid call is on the record before its answer is used). The default
    /// queues it like [`Self::llm_run`] and resolves at once.
    fn llm_run_durable(&self, row: LlmRun) -> BoxFuture<'_, crate::Result<()>> {
        self.llm_run(row);
        Box::pin(async { Ok(()) })
    }
    /// A conversation was compacted. Recorders that keep no compactions ignore it; a recorder
    /// that wraps another must forward it.
    fn compaction(&self, row: CompactionRow) {
        let _ = row;
    }
    /// Admission met a throttle, or a budget's standing rate changed (see [`LimitEvent`]).
    /// Recorders that keep no such events ignore it; a recorder that wraps another must
    /// forward it.
    fn limit_event(&self, row: LimitEvent) {
        let _ = row;
    }
    /// Wait until every row queued so far is stored.
    fn flush(&self) -> BoxFuture<'_, crate::Result<()>> {
        Box::pin(async { Ok(()) })
    }
    /// Write everything queued, then stop: a store-backed recorder also marks its process as
    /// gone in the store and closes the rows of jobs it still holds as
    /// [`JobStatus::Interrupted`]. Rows handed over after it are not kept (and are counted by
    /// [`Self::unwritten`]). The default flushes.
    fn close(&self) -> BoxFuture<'_, crate::Result<()>> {
        self.flush()
    }
    /// Rows handed to this recorder that are not yet stored (queued, or lost because the
    /// writer stopped). Read when a runtime is dropped without shutting down, to say what was
    /// left unwritten.
    fn unwritten(&self) -> u64 {
        0
    }
    /// Whether rows handed to this recorder are kept. `false` (recording off) lets the runtime
    /// skip building rows nobody reads; a recorder that wraps another forwards it or keeps the
    /// default `true`.
    fn keeps_rows(&self) -> bool {
        true
    }
}

/// A recorder that records nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopRecorder;

impl Recorder for NoopRecorder {
    fn job_started(&self, _row: JobStart) {}
    fn job_finished(&self, _row: JobEnd) {}
    fn llm_run(&self, _row: LlmRun) {}
    fn keeps_rows(&self) -> bool {
        false
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}
