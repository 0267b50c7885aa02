//! The durable run's root ([`DurableRun`]) and the journaling tool job ([`Journaled`]).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{
    Approval, JournalEntry, META_APPROVAL, META_DURABLE_RUN, StepKey, StepOutcome, StepStore,
};
use crate::job::{BoxJob, Job, JobContext, Requirements, Resources};
use crate::tool::{META_IDEMPOTENCY_KEY, ToolOutput};
use crate::{Error, PendingCall, Result};

/// A job run as the root of a durable run: it publishes `key` under [`META_DURABLE_RUN`] before
/// it runs, so every tool call below it is journaled and looked up under that key. Running the
/// same job again under the same key replays it.
#[derive(Debug)]
pub struct DurableRun<J> {
    key: String,
    job: J,
}

impl<J: Job> DurableRun<J> {
    /// `job` as the root of the durable run `key`.
    pub fn new(key: impl Into<String>, job: J) -> Self {
        Self {
            key: key.into(),
            job,
        }
    }
}

impl<J: Job> Job for DurableRun<J> {
    type Output = J::Output;

    fn class(&self) -> Cow<'static, str> {
        self.job.class()
    }

    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()> {
        self.job.requirements(req, cx)
    }

    fn timeout(&self) -> Option<Duration> {
        self.job.timeout()
    }

    fn max_corrections(&self) -> u32 {
        self.job.max_corrections()
    }

    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> Result<J::Output> {
        cx.set_metadata(META_DURABLE_RUN, Value::String(self.key.clone()));
        self.job.execute(res, cx).await
    }
}

/// The run key of the durable run (or chat turn) `cx` belongs to (its workflow's id when it
/// belongs to none)
/// and `cx`'s place in it.
pub(crate) fn run_key_of(cx: &JobContext) -> (String, String) {
    let (mut run, mut place) = cx.place_under(META_DURABLE_RUN);
    if run.is_none() {
        (run, place) = cx.place_under(super::META_JOURNAL_RUN);
    }
    let run = match run {
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
        None => cx.workflow().to_string(),
    };
    (run, place)
}

/// SHA-256 (hex) of a call's arguments, as the model sent them (a JSON string is hashed as its
/// text, anything else as its compact JSON).
pub(crate) fn arguments_hash(arguments: &Value) -> String {
    let bytes = match arguments {
        Value::String(s) => s.as_bytes().to_vec(),
        other => other.to_string().into_bytes(),
    };
    let digest = Sha256::digest(&bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A call waiting for a person, as a job: recorded under the tool's class and ending at once
/// with [`crate::Error::AwaitingApproval`], so the trajectory shows where the run stopped.
pub(crate) struct PausedCall {
    pending: PendingCall,
}

impl PausedCall {
    pub(crate) fn new(pending: PendingCall) -> Self {
        Self { pending }
    }
}

impl Job for PausedCall {
    type Output = ToolOutput;

    fn class(&self) -> Cow<'static, str> {
        Cow::Owned(self.pending.tool.clone())
    }

    async fn execute(&mut self, _res: &Resources, cx: &JobContext) -> Result<ToolOutput> {
        cx.set_metadata(
            META_APPROVAL,
            serde_json::json!({"id": self.pending.id, "status": "pending"}),
        );
        Err(crate::Error::AwaitingApproval {
            pending: vec![self.pending.clone()],
        })
    }
}

/// A thinker's tool call as a job: it publishes the call's idempotency key (see
/// [`crate::tool::ToolContext::idempotency_key`]) and, with a store, journals the call: a call
/// with effects is journaled as started before the tool runs (a store that cannot take that
/// entry refuses the call), and every call is journaled with how it ended before the job
/// returns, so a replay of the run answers it from the journal. A retry signal is not an end
/// and is not journaled.
pub(crate) struct Journaled {
    pub(crate) inner: BoxJob<ToolOutput>,
    /// The journal; `None` where the call is not journaled (outside a durable run).
    pub(crate) store: Option<Arc<dyn StepStore>>,
    pub(crate) key: StepKey,
    pub(crate) idempotency_key: String,
    pub(crate) tool: String,
    pub(crate) arguments_hash: String,
    /// Whether the tool has effects (is not read-only): then the start is journaled too.
    pub(crate) effect: bool,
    /// The approval the call waited for, recorded on the job's metadata.
    pub(crate) approval: Option<Approval>,
}

impl Job for Journaled {
    type Output = ToolOutput;

    fn class(&self) -> Cow<'static, str> {
        self.inner.class()
    }

    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()> {
        self.inner.requirements(req, cx)
    }

    fn timeout(&self) -> Option<Duration> {
        self.inner.timeout()
    }

    fn max_corrections(&self) -> u32 {
        self.inner.max_corrections()
    }

    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> Result<ToolOutput> {
        cx.set_metadata(
            META_IDEMPOTENCY_KEY,
            Value::String(self.idempotency_key.clone()),
        );
        if let Some(a) = &self.approval {
            cx.set_metadata(
                META_APPROVAL,
                serde_json::json!({"id": a.id, "status": a.status.as_str(), "kind": a.kind.as_str()}),
            );
        }
        let Some(store) = &self.store else {
            return self.inner.execute(res, cx).await;
        };
        let entry = |outcome| JournalEntry {
            tool: self.tool.clone(),
            arguments_hash: self.arguments_hash.clone(),
            outcome,
            job: cx.id().to_string(),
        };
        if self.effect {
            store
                .start(&self.key, &entry(StepOutcome::Started))
                .await
                .map_err(|e| {
                    Error::system(
                        format!("tool call {}", self.tool),
                        "the journal could not record that the call starts, so it did not run \
                         (a replay could not tell whether its effect happened)",
                    )
                    .with_source(e)
                })?;
        }
        let result = self.inner.execute(res, cx).await;
        let outcome = match &result {
            Ok(out) => StepOutcome::Output(out.json.clone()),
            Err(e) if e.is_retry_signal() => return result,
            Err(e) => StepOutcome::Error(e.for_model()),
        };
        if let Err(e) = store.journal(&self.key, &entry(outcome)).await {
            // The call ran; failing it now would make the model ask for it again. A replay
            // finds a call with effects started and unfinished (it waits for a person unless
            // idempotent) and runs a read-only one again, which is what the log says.
            tracing::warn!(tool = %self.tool, run = %self.key.run, place = %self.key.place,
                call = %self.key.call_id, error = %e,
                "journaling a finished tool call failed; a replay of this run cannot answer it from the journal");
        }
        result
    }
}
