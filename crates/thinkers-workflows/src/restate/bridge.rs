//! The seams through which a workflow's jobs reach its Restate invocation: [`RestateSteps`] (a
//! [`StepStore`]) and [`RestateCache`] (a [`ResponseCache`]). Both send requests to the
//! invocation that runs the workflow ([`Bridges`], by run key); the invocation turns each into a
//! journaled step (`ctx.run`, see `service.rs`). A run key no invocation of this process serves
//! goes to the PostgreSQL store (steps) or misses (cache).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use futures::FutureExt as _;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use thinkers::durable::{
    Approval, ApprovalRequest, Decision, JournalEntry, StepKey, StepOutcome, StepStore,
};
use thinkers::llm::{CacheKey, CacheUse, ChatResponse, ResponseCache};
use thinkers::{Error, Result};

/// What a job asks of its workflow's invocation.
pub(crate) enum Request {
    /// Is step `step` journaled? `Some(value)` when it is (a replay); `None` when the job must
    /// run it (and then send [`Request::Complete`]).
    Lookup {
        step: String,
        reply: oneshot::Sender<Option<Value>>,
    },
    /// Step `step` ran: journal `value`; `done` fires once the journal holds it.
    Complete {
        step: String,
        value: Value,
        done: oneshot::Sender<()>,
    },
    /// The value of step `step` of the current round: from the journal, or computed by
    /// `compute` and journaled.
    Record {
        step: String,
        compute: BoxFuture<'static, Result<Value>>,
        reply: oneshot::Sender<Value>,
    },
}

/// The steps an invocation has read from (or written to) its journal, by step name: shared
/// with the seams so a model call can see, without waiting, that its answer is journaled.
pub(crate) type Known = Arc<Mutex<HashMap<String, Value>>>;

struct Served {
    tx: mpsc::UnboundedSender<Request>,
    known: Known,
}

/// The invocations this process serves, by run key.
#[derive(Default)]
pub(crate) struct Bridges {
    runs: Mutex<HashMap<String, Served>>,
}

impl Bridges {
    fn sender(&self, run: &str) -> Option<mpsc::UnboundedSender<Request>> {
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run)
            .map(|s| s.tx.clone())
    }

    /// Whether the invocation serving `run` has step `step` journaled and read already.
    fn holds(&self, run: &str, step: &str) -> bool {
        let known = self
            .runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run)
            .map(|s| Arc::clone(&s.known));
        known.is_some_and(|k| {
            k.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains_key(step)
        })
    }

    /// Serve `run` from the caller's invocation until the guard drops; `known` is the
    /// invocation's map of journaled steps.
    pub(crate) fn open(
        self: &Arc<Self>,
        run: &str,
        known: Known,
    ) -> (BridgeGuard, mpsc::UnboundedReceiver<Request>) {
        let (tx, rx) = mpsc::unbounded_channel();
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(run.to_owned(), Served { tx, known });
        (
            BridgeGuard {
                bridges: Arc::clone(self),
                run: run.to_owned(),
            },
            rx,
        )
    }
}

/// Removes a run from [`Bridges`] when its invocation ends (or is dropped).
pub(crate) struct BridgeGuard {
    bridges: Arc<Bridges>,
    run: String,
}

impl Drop for BridgeGuard {
    fn drop(&mut self) {
        self.bridges
            .runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.run);
    }
}

fn gone(run: &str) -> Error {
    Error::system(
        "restate",
        format!("the invocation of workflow {run} ended before the step was journaled"),
    )
}

async fn ask_bridge<T>(
    tx: &mpsc::UnboundedSender<Request>,
    run: &str,
    make: impl FnOnce(oneshot::Sender<T>) -> Request,
) -> Result<T> {
    let (reply, answer) = oneshot::channel();
    tx.send(make(reply)).map_err(|_| gone(run))?;
    answer.await.map_err(|_| gone(run))
}

fn tool_step(key: &StepKey) -> String {
    format!("tool {} {}", key.place, key.call_id)
}

/// The step that says a call started (its entry is [`StepOutcome::Started`]); the call's own
/// step ([`tool_step`]) says how it ended.
fn start_step(key: &StepKey) -> String {
    format!("start {} {}", key.place, key.call_id)
}

/// Journal `entry` as `step` of `key`'s invocation.
async fn complete(
    tx: &mpsc::UnboundedSender<Request>,
    key: &StepKey,
    step: String,
    entry: &JournalEntry,
) -> Result<()> {
    let value = entry_json(entry);
    ask_bridge(tx, &key.run, |done| Request::Complete { step, value, done }).await
}

fn entry_json(entry: &JournalEntry) -> Value {
    serde_json::json!({
        "tool": entry.tool, "arguments_hash": entry.arguments_hash,
        "outcome": entry.outcome, "job": entry.job,
    })
}

fn entry_of(value: &Value) -> Result<JournalEntry> {
    let bad = || Error::system("restate journal", "a journaled tool call is not an entry");
    let text = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_owned);
    let outcome: StepOutcome = value
        .get("outcome")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| bad().with_source(e))?
        .ok_or_else(bad)?;
    Ok(JournalEntry {
        tool: text("tool").ok_or_else(bad)?,
        arguments_hash: text("arguments_hash").ok_or_else(bad)?,
        outcome,
        job: text("job").ok_or_else(bad)?,
    })
}

/// The journal and approvals of a Restate service process: tool calls of a workflow this
/// process runs are journaled steps of its invocation; approvals live in the PostgreSQL store
/// (so `thinkers approvals` lists them) and are asked as journaled steps, so a replay reads the
/// answer the first execution read.
pub(crate) struct RestateSteps {
    pub(crate) bridges: Arc<Bridges>,
    pub(crate) store: Arc<dyn StepStore>,
}

impl StepStore for RestateSteps {
    fn journaled<'a>(&'a self, key: &'a StepKey) -> BoxFuture<'a, Result<Option<JournalEntry>>> {
        async move {
            let Some(tx) = self.bridges.sender(&key.run) else {
                return self.store.journaled(key).await;
            };
            let step = tool_step(key);
            let mut found =
                ask_bridge(&tx, &key.run, |reply| Request::Lookup { step, reply }).await?;
            if found.is_none() {
                let step = start_step(key);
                found = ask_bridge(&tx, &key.run, |reply| Request::Lookup { step, reply }).await?;
            }
            found.as_ref().map(entry_of).transpose()
        }
        .boxed()
    }

    fn start<'a>(&'a self, key: &'a StepKey, entry: &'a JournalEntry) -> BoxFuture<'a, Result<()>> {
        async move {
            match self.bridges.sender(&key.run) {
                Some(tx) => complete(&tx, key, start_step(key), entry).await,
                None => self.store.start(key, entry).await,
            }
        }
        .boxed()
    }

    fn journal<'a>(
        &'a self,
        key: &'a StepKey,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, Result<()>> {
        async move {
            match self.bridges.sender(&key.run) {
                Some(tx) => complete(&tx, key, tool_step(key), entry).await,
                None => self.store.journal(key, entry).await,
            }
        }
        .boxed()
    }

    fn ask<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Result<Approval>> {
        async move {
            let Some(tx) = self.bridges.sender(&request.key.run) else {
                return self.store.ask(request).await;
            };
            let step = format!(
                "ask {} {} {} {}",
                request.kind.as_str(),
                request.key.place,
                request.key.call_id,
                request.arguments_hash
            );
            let (store, owned) = (Arc::clone(&self.store), request.clone());
            let compute = async move {
                let approval = store.ask(&owned).await?;
                serde_json::to_value(approval).map_err(|e| {
                    Error::system("restate journal", "an approval did not serialize").with_source(e)
                })
            }
            .boxed();
            let value = ask_bridge(&tx, &request.key.run, |reply| Request::Record {
                step,
                compute,
                reply,
            })
            .await?;
            serde_json::from_value(value).map_err(|e| {
                Error::system("restate journal", "a journaled approval is not an approval")
                    .with_source(e)
            })
        }
        .boxed()
    }

    fn approvals(&self, pending_only: bool) -> BoxFuture<'_, Result<Vec<Approval>>> {
        self.store.approvals(pending_only)
    }

    fn decide<'a>(
        &'a self,
        id: &'a str,
        decision: &'a Decision,
    ) -> BoxFuture<'a, Result<Approval>> {
        self.store.decide(id, decision)
    }
}

fn model_step(key: &CacheKey) -> String {
    format!("model {}", key.to_hex())
}

/// The model answers of a Restate service process: a model call of a workflow this process
/// runs is a journaled step of its invocation (its value is the provider's answer), so a replay
/// never sends a finished call again. Calls outside such a workflow are never answered from it.
pub(crate) struct RestateCache {
    pub(crate) bridges: Arc<Bridges>,
}

impl ResponseCache for RestateCache {
    fn get<'a>(
        &'a self,
        key: &'a CacheKey,
        by: CacheUse,
    ) -> BoxFuture<'a, Result<Option<ChatResponse>>> {
        async move {
            let Some((tx, run)) = by
                .run
                .as_deref()
                .and_then(|run| Some((self.bridges.sender(run)?, run.to_owned())))
            else {
                return Ok(None);
            };
            let step = model_step(key);
            let found = ask_bridge(&tx, &run, |reply| Request::Lookup { step, reply }).await?;
            found.map(serde_json::from_value).transpose().map_err(|e| {
                Error::system(
                    "restate journal",
                    "a journaled model answer is not an answer",
                )
                .with_source(e)
            })
        }
        .boxed()
    }

    fn put<'a>(
        &'a self,
        key: &'a CacheKey,
        _entry: &'a str,
        response: &'a ChatResponse,
        by: CacheUse,
    ) -> BoxFuture<'a, Result<()>> {
        async move {
            let Some((tx, run)) = by
                .run
                .as_deref()
                .and_then(|run| Some((self.bridges.sender(run)?, run.to_owned())))
            else {
                return Ok(());
            };
            let value = serde_json::to_value(response).map_err(|e| {
                Error::system("restate journal", "a model answer did not serialize").with_source(e)
            })?;
            let step = model_step(key);
            ask_bridge(&tx, &run, |done| Request::Complete { step, value, done }).await
        }
        .boxed()
    }

    fn holds(&self, key: &CacheKey, by: &CacheUse) -> bool {
        by.run
            .as_deref()
            .is_some_and(|run| self.bridges.holds(run, &model_step(key)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_entry_survives_the_journal() {
        for outcome in [
            StepOutcome::Output(serde_json::json!({"done": "errand-one"})),
            StepOutcome::Error("the ledger is gone".to_owned()),
            StepOutcome::Started,
        ] {
            let entry = JournalEntry {
                tool: "do_errand".to_owned(),
                arguments_hash: "ab12".to_owned(),
                outcome,
                job: "job-1".to_owned(),
            };
            assert_eq!(entry_of(&entry_json(&entry)).unwrap(), entry);
        }
        assert!(entry_of(&serde_json::json!({"tool": "x"})).is_err());
    }
}
