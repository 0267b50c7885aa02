//! Durable steps and human approval.
//!
//! A **durable run** is a job tree whose root carries a run key (a workflow's id on Restate, or the
//! key a program passes to [`crate::Runtime::run_durable`]). Within it:
//!
//! * every finished tool call is **journaled** under the run, its place in the trajectory (the
//!   path of step ordinals and classes from the run's root to the calling job, see
//!   [`crate::job::JobContext`], and the index of the message holding the call in that job's
//!   conversation) and its tool-call id; when the run is replayed (a resumed
//!   approval, a process that died, a restarted process) a call whose entry is in the journal
//!   gets the journaled result without running. Model calls replay from the response cache
//!   when one is registered (on Restate, the invocation's journal is that cache).
//! * a call of a tool that is not read-only is journaled **before** it runs too (an entry
//!   [`StepOutcome::Started`]), and the tool receives an idempotency key derived from the run,
//!   the place and the call id ([`crate::tool::ToolContext::idempotency_key`]), the same on every
//!   replay. A replay that finds a call started but never finished (its process died while it
//!   ran) runs it again with the same key only when the tool declares itself idempotent
//!   ([`crate::tool::Tool::idempotent`]); any other such call's **outcome is unknown**, and the
//!   run pauses on it exactly as for an approval ([`ApprovalKind::OutcomeUnknown`]) until a person
//!   (or code) decides: run it again ([`Decision::Approve`]), answer it with a stated result
//!   without running it ([`Decision::Skip`]), or fail the run ([`Decision::Fail`]). No effect
//!   runs twice without someone deciding it should.
//! * a tool call that **needs approval** (the tool's own [`crate::tool::Tool::needs_approval`],
//!   or the deployment's [`ApprovalPolicy`]) is stored as a pending [`Approval`] and the calling
//!   thinker ends with [`crate::Error::AwaitingApproval`]: its job, and every ancestor that passes
//!   the error on, is recorded `awaiting_approval`, and nothing (no seat, no permit, no task) is
//!   held while a person decides. A decision ([`StepStore::decide`]) lets the next replay run the
//!   call (approved) or answer it with the denial and its reason (denied); on PostgreSQL it also
//!   marks the run's workflow `queued` once no call of the run is still pending.
//!
//! The journal and the approvals live in the run's store ([`StepStore`], implemented by
//! `thinkers_store::SqliteSteps` and `thinkers_store::PgSteps`), registered on the dispatcher as [`DurableSteps`].
//! A chat turn journals its calls too, under its conversation ([`META_JOURNAL_RUN`]): a step that
//! stopped for a person keeps its calls, and the decision continues the same turn.
//!
//! A call answered from the journal gives the model the same text as the first time; its typed
//! output for code ([`crate::tool::ToolOutput::typed`]) is then the JSON value, not the tool's
//! Rust type.
//!
//! **A place is not unique** when one job runs several children of the same class in one step
//! (a fan-out of the same thinker): their tool calls share places and call ids. The journal
//! entry also names the tool and a hash of the arguments, and an entry that does not match both
//! is not used, so such siblings never receive each other's results; an identical call (same
//! tool, same arguments) of two such siblings is answered once.

mod journal;
mod policy;

pub use journal::DurableRun;
pub(crate) use journal::run_key_of;
pub(crate) use journal::{Journaled, PausedCall, arguments_hash};
pub use policy::ApprovalPolicy;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Result;

/// The metadata key under which a durable run's root publishes its run key.
pub const META_DURABLE_RUN: &str = "durable_run";

/// The metadata key under which a chat turn publishes its conversation as a run key: its tool
/// calls are journaled (a decision continues the turn without running its finished calls again)
/// and asked for approval under it, but its model calls are not served from a response cache
/// (a chat asks the model afresh).
pub const META_JOURNAL_RUN: &str = "journal_run";

/// The metadata key under which a tool job that waited for a person records the decision.
pub(crate) const META_APPROVAL: &str = "approval";

/// Where one tool call sits in a durable run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StepKey {
    /// The run key.
    pub run: String,
    /// The calling job's place: step ordinals and classes from the run's root, `/`-separated,
    /// then `#` and the index of the message holding the call in the job's conversation.
    pub place: String,
    /// The tool-call id the model gave the call.
    pub call_id: String,
}

/// How a journaled call ended, or that it started and has not ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    /// The call of a tool that is not read-only started; nothing says it finished. Written
    /// before the tool runs, replaced by how it ended.
    Started,
    /// The tool's output, as the model read it.
    Output(Value),
    /// The tool failed; what the model read.
    Error(String),
}

/// One journaled tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalEntry {
    /// The tool that ran.
    pub tool: String,
    /// SHA-256 (hex) of the arguments' JSON.
    pub arguments_hash: String,
    /// How it ended.
    pub outcome: StepOutcome,
    /// The tool job that ran it.
    pub job: String,
}

/// Where a call that waits for a person stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for a person.
    Pending,
    /// A person approved it: the next replay runs it (again, for an outcome unknown).
    Approved,
    /// A person denied it: the model reads the denial and the reason.
    Denied,
    /// A person answered it with a stated result: the model reads that result as the call's,
    /// and the call does not run.
    Skipped,
    /// A person failed the run on it: the next replay ends the run with their reason.
    Failed,
}

impl ApprovalStatus {
    /// The stable name stored in records.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Denied => "denied",
            Self::Skipped => "skipped",
            Self::Failed => "failed",
        }
    }

    /// Parse a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "approved" => Self::Approved,
            "denied" => Self::Denied,
            "skipped" => Self::Skipped,
            "failed" => Self::Failed,
            _ => return None,
        })
    }
}

/// Why a call waits for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalKind {
    /// The tool (or the deployment's policy) asks a person before the call runs.
    #[default]
    Approval,
    /// The call started and its process died before it finished: whether its effect happened
    /// is unknown, and the tool is not idempotent.
    OutcomeUnknown,
}

impl ApprovalKind {
    /// The stable name stored in records.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::OutcomeUnknown => "outcome_unknown",
        }
    }

    /// Parse a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "approval" => Self::Approval,
            "outcome_unknown" => Self::OutcomeUnknown,
            _ => return None,
        })
    }
}

/// What a thinker asks when a call needs a person.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    /// Where the call sits.
    pub key: StepKey,
    /// Why it waits.
    pub kind: ApprovalKind,
    /// The tool.
    pub tool: String,
    /// The call's arguments.
    pub arguments: Value,
    /// SHA-256 (hex) of the arguments as the model sent them: the decision covers this call and
    /// no other.
    pub arguments_hash: String,
    /// The thinker job that asked.
    pub job: String,
    /// That job's workflow (root job id).
    pub workflow: String,
    /// Whether the scope was read-only.
    pub read_only_scope: bool,
}

/// A call that needed approval, and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    /// Its id: what `thinkers approve` takes.
    pub id: String,
    /// The run it belongs to.
    pub run: String,
    /// The calling job's place in the run.
    pub place: String,
    /// The tool-call id.
    pub call_id: String,
    /// Why it waits.
    #[serde(default)]
    pub kind: ApprovalKind,
    /// The tool.
    pub tool: String,
    /// The call's arguments.
    pub arguments: Value,
    /// SHA-256 (hex) of the arguments as the model sent them. A decision covers the call with
    /// these arguments only: a replay whose call at the same place differs asks again. Empty for
    /// an approval stored before arguments were bound, which covers no call.
    #[serde(default)]
    pub arguments_hash: String,
    /// The thinker job that asked.
    pub job: String,
    /// That job's workflow (root job id of the attempt that asked).
    pub workflow: String,
    /// Whether the scope was read-only.
    pub read_only_scope: bool,
    /// Where it stands.
    pub status: ApprovalStatus,
    /// Why it was denied or failed, or the result it was answered with (skipped).
    pub reason: Option<String>,
    /// When it was asked for, milliseconds since the Unix epoch.
    pub requested_at_ms: i64,
    /// When it was decided.
    pub decided_at_ms: Option<i64>,
}

/// A person's decision on a pending call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the call (again, for an outcome unknown, with the same idempotency key).
    Approve,
    /// Do not run it; the model reads the reason.
    Deny {
        /// Why, for the model.
        reason: String,
    },
    /// Do not run it; the model reads `result` as the call's result (for an outcome unknown:
    /// what the person found the effect to be).
    Skip {
        /// What the model reads as the call's result.
        result: String,
    },
    /// Do not run it; the run fails, naming the call and `reason`.
    Fail {
        /// Why, for the record.
        reason: String,
    },
}

impl Decision {
    /// The status the decision leads to.
    pub fn status(&self) -> ApprovalStatus {
        match self {
            Self::Approve => ApprovalStatus::Approved,
            Self::Deny { .. } => ApprovalStatus::Denied,
            Self::Skip { .. } => ApprovalStatus::Skipped,
            Self::Fail { .. } => ApprovalStatus::Failed,
        }
    }

    /// The text stored beside the status: a denial's or failure's reason, a skip's result.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Approve => None,
            Self::Deny { reason } | Self::Fail { reason } => Some(reason),
            Self::Skip { result } => Some(result),
        }
    }
}

/// The store of the journal and the approvals.
///
/// Guarantees: [`StepStore::start`] writes a [`StepOutcome::Started`] entry only where the key
/// has none; [`StepStore::journal`] keeps the first finished entry of a key (a later one is
/// ignored) and replaces a started entry of the same tool and arguments; [`StepStore::ask`]
/// creates the approval of a (key, kind, arguments hash) once and returns the stored one every
/// later time, decided or not; [`StepStore::decide`] decides a pending approval once: deciding
/// it again the same way returns it unchanged, another way is refused with an error naming the
/// id and its status.
pub trait StepStore: Send + Sync + 'static {
    /// The journal entry of a call, if it started or finished before.
    fn journaled<'a>(&'a self, key: &'a StepKey) -> BoxFuture<'a, Result<Option<JournalEntry>>>;
    /// Journal that a call is about to run (`entry.outcome` is [`StepOutcome::Started`]).
    fn start<'a>(&'a self, key: &'a StepKey, entry: &'a JournalEntry) -> BoxFuture<'a, Result<()>>;
    /// Journal a finished call.
    fn journal<'a>(
        &'a self,
        key: &'a StepKey,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, Result<()>>;
    /// The approval of a call with these arguments: created pending the first time, the stored
    /// one afterwards.
    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<Approval>>;
    /// Approvals, oldest first: the pending ones, or every one.
    fn approvals(&self, pending_only: bool) -> BoxFuture<'_, Result<Vec<Approval>>>;
    /// Decide a pending approval (an unknown id is an error naming it).
    fn decide<'a>(&'a self, id: &'a str, decision: &'a Decision)
    -> BoxFuture<'a, Result<Approval>>;
}

/// The dispatcher service through which thinkers reach the journal and the approvals.
#[derive(Clone)]
pub struct DurableSteps {
    store: Arc<dyn StepStore>,
}

impl std::fmt::Debug for DurableSteps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableSteps").finish_non_exhaustive()
    }
}

impl DurableSteps {
    /// The service over `store`.
    pub fn new(store: Arc<dyn StepStore>) -> Self {
        Self { store }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn StepStore> {
        &self.store
    }
}

fn published(cx: &crate::job::JobContext, key: &str) -> bool {
    cx.metadata(key).is_some() || cx.ancestor_metadata(key).is_some()
}

/// Whether `cx` runs within a durable run (it or an ancestor published a run key): its model
/// calls may be answered from a durable-runs response cache.
pub(crate) fn is_durable(cx: &crate::job::JobContext) -> bool {
    published(cx, META_DURABLE_RUN)
}

/// Whether `cx`'s tool calls are journaled: within a durable run or a chat turn.
pub(crate) fn journals(cx: &crate::job::JobContext) -> bool {
    is_durable(cx) || published(cx, META_JOURNAL_RUN)
}

/// The idempotency key of the call at `key`: SHA-256 (hex) of the run, the place and the call
/// id, the same on every replay of the run, different for every other call.
pub(crate) fn idempotency_key(key: &StepKey) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in [&key.run, &key.place, &key.call_id] {
        hasher.update(part.len().to_le_bytes());
        hasher.update(part.as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The text a model reads for a call a person denied.
pub(crate) fn denial_text(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => format!(
            "A person denied this call, so it did not run. Their reason: {r}. Do not make \
             the same call again; go on without it."
        ),
        None => "A person denied this call, so it did not run. Do not make the same call \
                 again; go on without it."
            .to_owned(),
    }
}

/// The error for an approval id that is not in the store: a correctable `InvalidInput` on
/// `approval`, naming the id.
pub fn unknown_approval(id: &str) -> crate::Error {
    crate::Error::invalid_input(
        "approval",
        Some(id.to_owned()),
        "no approval has this id; `thinkers approvals` lists the pending ones",
    )
}

/// The error for a decision on an approval already decided the other way: a correctable
/// `InvalidInput` on `approval`, naming the id and how it was decided.
pub fn already_decided(approval: &Approval) -> crate::Error {
    crate::Error::invalid_input(
        "approval",
        Some(approval.id.clone()),
        format!(
            "this call was already {} and cannot be decided again",
            approval.status.as_str()
        ),
    )
}
