//! A thinker's state: its conversation (kept minimal here, behind one struct, so the durable
//! conversation service can take its place), its artifacts, and what the read-only sweep and
//! the admission check refused. Shared with a [`ThinkerObserver`] so code holding the thinker
//! reads what a run did after the job completed.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::artifacts::Artifacts;
use crate::conversation::{ContentBlock, Message, Role};

/// The conversation of one thinker: the system content (its objective) and the turns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThinkerConversation {
    /// The system content.
    pub system: String,
    /// The turns, oldest first.
    pub messages: Vec<Message>,
}

impl ThinkerConversation {
    /// Whether no turn was added yet (a new conversation).
    pub fn is_new(&self) -> bool {
        self.messages.is_empty()
    }

    /// The whole conversation as text: the objective, then every message, tool call and tool
    /// result in order.
    pub fn transcript(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "[system]\n{}", self.system);
        for m in &self.messages {
            let who = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            for b in &m.content {
                let _ = match b {
                    ContentBlock::Text { text } => writeln!(out, "[{who}]\n{text}"),
                    ContentBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    } => writeln!(out, "[tool call {id}] {name} {arguments}"),
                    ContentBlock::ToolResult {
                        call_id,
                        name,
                        content,
                        is_error,
                    } => {
                        let tag = if *is_error {
                            "tool error"
                        } else {
                            "tool result"
                        };
                        writeln!(out, "[{tag} {call_id}] {name}: {content}")
                    }
                    ContentBlock::Thinking { thinking, .. } => {
                        writeln!(out, "[thinking]\n{thinking}")
                    }
                    ContentBlock::RedactedThinking { .. } => writeln!(out, "[redacted thinking]"),
                    ContentBlock::Image { media_type, .. } => writeln!(out, "[image {media_type}]"),
                    ContentBlock::File { media_type, .. } => writeln!(out, "[file {media_type}]"),
                };
            }
        }
        out
    }
}

/// A tool the read-only sweep withheld from a turn's palette.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    /// The turn (step ordinal) of the sweep.
    pub turn: u32,
    /// The tool's name.
    pub tool: String,
}

/// A tool call the loop refused instead of running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedCall {
    /// The turn of the call.
    pub turn: u32,
    /// The call id it was answered on.
    pub call_id: String,
    /// The tool name the model used.
    pub tool: String,
    /// What the model was told.
    pub reason: String,
}

/// Everything a thinker accumulates.
#[derive(Debug, Clone, Default)]
pub struct ThinkerState {
    /// The conversation.
    pub conversation: ThinkerConversation,
    /// Tool outputs registered as artifacts.
    pub artifacts: Artifacts,
    /// Every tool the sweep withheld, per turn.
    pub withheld: Vec<Withheld>,
    /// Every tool call refused (read-only admission, unknown tool, bad arguments, over the
    /// per-turn bound).
    pub refused: Vec<RefusedCall>,
    /// Model turns taken, over all runs.
    pub turns: u32,
    /// The reasoning of the last accepted answer.
    pub reasoning: String,
}

/// A cheap, shared view of a thinker's state, valid after the job that ran it completed.
#[derive(Debug, Clone, Default)]
pub struct ThinkerObserver {
    inner: Arc<Mutex<ThinkerState>>,
}

impl ThinkerObserver {
    pub(crate) fn lock(&self) -> MutexGuard<'_, ThinkerState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of the whole state.
    pub fn state(&self) -> ThinkerState {
        self.lock().clone()
    }

    /// The conversation as text (see [`ThinkerConversation::transcript`]).
    pub fn transcript(&self) -> String {
        self.lock().conversation.transcript()
    }

    /// A copy of the conversation.
    pub fn conversation(&self) -> ThinkerConversation {
        self.lock().conversation.clone()
    }

    /// The artifacts registered so far.
    pub fn artifacts(&self) -> Artifacts {
        self.lock().artifacts.clone()
    }

    /// Every tool the read-only sweep withheld.
    pub fn withheld(&self) -> Vec<Withheld> {
        self.lock().withheld.clone()
    }

    /// Every tool call refused.
    pub fn refused(&self) -> Vec<RefusedCall> {
        self.lock().refused.clone()
    }
}
