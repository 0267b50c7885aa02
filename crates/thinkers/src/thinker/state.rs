//! A thinker's state: its conversation (a [`Conversation`] from the conversation service), its
//! artifacts, and what the read-only sweep and the admission check refused. Shared with a
//! [`ThinkerObserver`] so code holding the thinker reads what a run did after the job completed.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::artifacts::Artifacts;
use crate::conversation::{Conversation, ConversationId, Message};

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
    /// The conversation: `None` before the first run.
    pub conversation: Option<Conversation>,
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

impl ThinkerState {
    /// Append a message to the conversation (there is always one while a run is going).
    pub(crate) fn push(&mut self, message: Message) {
        if let Some(conversation) = &mut self.conversation {
            conversation.push(message);
        }
    }
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

    /// The conversation as text: the objective, then every message, tool call and tool result
    /// in order (see [`crate::conversation::Conversation::transcript`]). Empty before the first run.
    pub fn transcript(&self) -> String {
        self.lock()
            .conversation
            .as_ref()
            .map(Conversation::transcript)
            .unwrap_or_default()
    }

    /// A copy of the conversation, once a run has started one.
    pub fn conversation(&self) -> Option<Conversation> {
        self.lock().conversation.clone()
    }

    /// The conversation's id, once a run has started one: pass it to a later run to resume.
    pub fn conversation_id(&self) -> Option<ConversationId> {
        self.lock().conversation.as_ref().map(|c| c.id().clone())
    }

    /// The conversation's id once it is in the store (saved at least once).
    pub fn stored_conversation_id(&self) -> Option<ConversationId> {
        self.lock()
            .conversation
            .as_ref()
            .filter(|c| c.is_durable() && c.version() > 0)
            .map(|c| c.id().clone())
    }

    /// A copy of the conversation's messages (empty before the first run).
    pub fn messages(&self) -> Vec<Message> {
        self.lock()
            .conversation
            .as_ref()
            .map(|c| c.messages().to_vec())
            .unwrap_or_default()
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
