//! The step log of one invocation: how the steps its jobs ask for become Restate journal entries
//! that a replay reads back whatever order the jobs ask in.
//!
//! Restate replays a journal command by command and requires the handler to create the same
//! commands in the same order. Jobs that run in parallel (a fan-out doer, parallel
//! sub-thinkers) ask for their steps in the order admission and the network let them, which a
//! replay need not repeat. So no command is named after a step: every journal command of the
//! `run` handler is a `ctx.run` named [`LOG`], created one at a time by the handler itself, and
//! its value is a [`LogEntry`] that names its step. A replay reads the entries back in the order
//! they were written into a map by step name ([`Known`]), and answers each job from the map.
//!
//! **Rounds.** A round (one submission of the workflow's root) ends with a
//! [`LogEntry::RoundEnd`] before the handler awaits approvals' promises. At the start of each
//! round, a replay reads entries until that round's end (the round finished in an earlier
//! execution: every step it ever journaled is known) or until the journal has no more (a
//! `ctx.run` whose closure runs is past the journal: it writes [`LogEntry::Live`] and the
//! execution is live from there on). Reading a whole round before any job runs lets a model call
//! see, without waiting, that its answer is journaled, so it takes no admission seat.
//!
//! **Guarantees.** A step journaled once is never run again by a later execution. A step that
//! was running when a process died has no entry and runs again. In a round replayed to its end
//! (it ended waiting for approvals), a step with no entry is answered "not journaled", as it was
//! the first time (a tool call that waits for approval asks before it runs); its job then runs
//! it, and what it returns is not journaled, since the replay must create exactly the commands
//! the first execution did. Only a step still running when its round ended gets there.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError};

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::bridge::{Known, Request};

/// The name of every journal command of the `run` handler.
pub(crate) const LOG: &str = "thinkers step";

/// One journal entry of an invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum LogEntry {
    /// A finished step (`model <hash>`, `tool <place> <call id>`, `round <n> ask …`) and its
    /// value.
    Step { step: String, value: Value },
    /// An execution went past the journal here (the entry a live execution's first read
    /// writes).
    Live,
    /// Round `round` ended; the handler then awaited its approvals' promises.
    RoundEnd { round: u32 },
    /// Nothing: written while a live round waits on its jobs, so the server sees the
    /// invocation is alive and does not ask it to suspend (which would cancel the calls in
    /// flight). A replay skips it.
    Alive,
}

/// Where this execution stands in the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Entries of the current round may still be unread.
    Replaying,
    /// The current round was read to its end: it finished in an earlier execution.
    Replayed,
    /// Past the journal: new steps run and are written.
    Live,
}

/// The log of one invocation, read and written by its handler only.
pub(crate) struct Journal {
    known: Known,
    mode: Mode,
    /// When this execution last created a journal command.
    last_command: tokio::time::Instant,
}

impl Journal {
    pub(crate) fn new() -> Self {
        Self {
            known: Arc::default(),
            mode: Mode::Replaying,
            last_command: tokio::time::Instant::now(),
        }
    }

    /// The map of known steps, shared with the seams.
    pub(crate) fn known(&self) -> Known {
        Arc::clone(&self.known)
    }

    fn get(&self, step: &str) -> Option<Value> {
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(step)
            .cloned()
    }

    fn insert(&self, step: String, value: Value) {
        self.known
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(step)
            .or_insert(value);
    }

    /// Create the next journal command and await it: the journaled entry on a replay, else
    /// `live` (then written). Returns the entry and whether it was written now.
    async fn next(
        &mut self,
        ctx: &WorkflowContext<'_>,
        live: LogEntry,
    ) -> Result<(LogEntry, bool), HandlerError> {
        self.last_command = tokio::time::Instant::now();
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let entry = ctx
            .run(move || async move {
                flag.store(true, Ordering::Release);
                Ok(Json(live))
            })
            .name(LOG)
            .await?
            .into_inner();
        Ok((entry, ran.load(Ordering::Acquire)))
    }

    /// Before round `round` runs: read its journaled entries, to its end or to the journal's.
    pub(crate) async fn begin_round(
        &mut self,
        ctx: &WorkflowContext<'_>,
        round: u32,
    ) -> Result<(), HandlerError> {
        if self.mode == Mode::Replayed {
            self.mode = Mode::Replaying;
        }
        while self.mode == Mode::Replaying {
            let (entry, written) = self.next(ctx, LogEntry::Live).await?;
            match entry {
                _ if written => self.mode = Mode::Live,
                LogEntry::Step { step, value } => self.insert(step, value),
                LogEntry::RoundEnd { round: r } if r == round => self.mode = Mode::Replayed,
                LogEntry::RoundEnd { .. } | LogEntry::Live | LogEntry::Alive => {}
            }
        }
        Ok(())
    }

    /// Write a finished step (live), unless it is journaled already.
    async fn write(
        &mut self,
        ctx: &WorkflowContext<'_>,
        step: String,
        value: Value,
    ) -> Result<(), HandlerError> {
        if self.get(&step).is_some() {
            return Ok(());
        }
        if self.mode != Mode::Live {
            // Only a live step is computed; a value offered in a replayed round stays unwritten
            // (the replay must create exactly the commands the first execution did).
            tracing::warn!(
                step,
                "a step finished in a replayed round was not journaled"
            );
            return Ok(());
        }
        let (entry, _) = self.next(ctx, LogEntry::Step { step, value }).await?;
        if let LogEntry::Step { step, value } = entry {
            self.insert(step, value);
        }
        Ok(())
    }

    /// Serve one request of round `round`.
    pub(crate) async fn handle(
        &mut self,
        ctx: &WorkflowContext<'_>,
        request: Request,
        round: u32,
    ) -> Result<(), HandlerError> {
        match request {
            Request::Lookup { step, reply } => {
                let _ = reply.send(self.get(&step));
            }
            Request::Complete { step, value, done } => {
                self.write(ctx, step, value).await?;
                let _ = done.send(());
            }
            Request::Record {
                step,
                compute,
                reply,
            } => {
                let step = format!("round {round} {step}");
                if let Some(value) = self.get(&step) {
                    let _ = reply.send(value);
                } else {
                    match compute.await {
                        Ok(value) => {
                            self.write(ctx, step, value.clone()).await?;
                            let _ = reply.send(value);
                        }
                        // Dropping the reply fails the caller's step; nothing is journaled.
                        Err(e) => tracing::warn!(step, error = %e, "a recorded step failed"),
                    }
                }
            }
        }
        Ok(())
    }

    /// When a live round that has journaled nothing since should write [`LogEntry::Alive`]:
    /// `every` after the last command.
    pub(crate) fn next_beat(&self, every: std::time::Duration) -> tokio::time::Instant {
        self.last_command + every
    }

    /// Write [`LogEntry::Alive`] if the round is live (a replayed round creates no commands of
    /// its own).
    pub(crate) async fn beat(&mut self, ctx: &WorkflowContext<'_>) -> Result<(), HandlerError> {
        if self.mode == Mode::Live {
            self.next(ctx, LogEntry::Alive).await?;
        } else {
            self.last_command = tokio::time::Instant::now();
        }
        Ok(())
    }

    /// End round `round`: a live round writes its end.
    pub(crate) async fn end_round(
        &mut self,
        ctx: &WorkflowContext<'_>,
        round: u32,
    ) -> Result<(), HandlerError> {
        if self.mode == Mode::Live {
            self.next(ctx, LogEntry::RoundEnd { round }).await?;
        }
        Ok(())
    }
}

/// How many steps of each kind a map of known steps holds (for the log line of a replay).
pub(crate) fn summary(known: &Known) -> HashMap<&'static str, usize> {
    let mut counts = HashMap::new();
    for step in known.lock().unwrap_or_else(PoisonError::into_inner).keys() {
        let kind = match step.split(' ').next() {
            Some("model") => "model",
            Some("tool") => "tool",
            _ => "other",
        };
        *counts.entry(kind).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_entries_name_their_kind_and_survive_json() {
        let entries = [
            LogEntry::Step {
                step: "model ab12".to_owned(),
                value: serde_json::json!({"text": "hi"}),
            },
            LogEntry::Live,
            LogEntry::RoundEnd { round: 2 },
            LogEntry::Alive,
        ];
        for entry in entries {
            let json = serde_json::to_value(&entry).unwrap();
            assert!(json["kind"].is_string(), "{json}");
            assert_eq!(serde_json::from_value::<LogEntry>(json).unwrap(), entry);
        }
    }
}
