//! [`Conversation`]: the provider-agnostic value a thinker talks to a model through.
//!
//! Besides what it holds (id, objective, messages, stamps, state), a conversation remembers how
//! it differs from its stored copy: how many messages the store holds, how many leading messages
//! are unchanged since the last load or save, and whether the objective, stamps or state changed.
//! That lets a store write only what is new (a conversation that only grew is an append) while a
//! rollback or a compaction rewrites exactly the changed tail.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::id::ConversationId;
use super::message::Message;
use super::objective::Objective;
use super::stamps::Stamps;
use super::transcript;
use crate::llm::ChatRequest;

/// What must survive compaction: tools discovered through `request_tools`, loaded skills, any
/// fact a thinker keeps outside the messages. Keys are the writer's own names.
pub type ConversationState = BTreeMap<String, Value>;

/// One conversation: its objective (the system content), its messages, the stamps written when
/// it was obtained, and the state that survives compaction.
///
/// Obtain one through [`super::ConversationService`], which stamps it and knows where to save it.
/// Equality compares what the conversation holds and its version, not its unsaved-change
/// bookkeeping.
#[derive(Debug, Clone)]
pub struct Conversation {
    id: ConversationId,
    objective: Objective,
    /// Shared with the requests rendered from it; copied only when changed while one is alive.
    messages: Arc<Vec<Message>>,
    stamps: Stamps,
    state: ConversationState,
    version: u64,
    durable: bool,
    /// How many messages the stored copy at `version` holds.
    stored_len: usize,
    /// How many leading messages are known to equal the stored copy's (at most `stored_len`).
    unchanged: usize,
    /// Whether the objective, the stamps or the state changed since the last load or save.
    head_changed: bool,
}

impl PartialEq for Conversation {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.objective == other.objective
            && self.messages == other.messages
            && self.stamps == other.stamps
            && self.state == other.state
            && self.version == other.version
            && self.durable == other.durable
    }
}

impl Conversation {
    /// A new, never saved conversation (version 0) under a fresh id.
    pub fn new(stamps: Stamps, durable: bool) -> Self {
        Self {
            id: ConversationId::new(),
            objective: Objective::new(),
            messages: Arc::new(Vec::new()),
            stamps,
            state: ConversationState::new(),
            version: 0,
            durable,
            stored_len: 0,
            unchanged: 0,
            head_changed: true,
        }
    }

    /// A conversation as a store holds it at `version`: every message counts as stored and
    /// nothing as changed. For [`super::ConversationStore`] implementations.
    pub fn restore(
        id: ConversationId,
        objective: Objective,
        stamps: Stamps,
        state: ConversationState,
        messages: Vec<Message>,
        version: u64,
        durable: bool,
    ) -> Self {
        let stored = messages.len();
        Self {
            id,
            objective,
            messages: Arc::new(messages),
            stamps,
            state,
            version,
            durable,
            stored_len: stored,
            unchanged: stored,
            head_changed: false,
        }
    }

    /// The id to resume it by.
    pub fn id(&self) -> &ConversationId {
        &self.id
    }

    /// The objective (the system content).
    pub fn objective(&self) -> &Objective {
        &self.objective
    }

    /// The objective, to write its slots.
    pub fn objective_mut(&mut self) -> &mut Objective {
        self.head_changed = true;
        &mut self.objective
    }

    /// The messages, oldest first.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, to change them in place. The next save rewrites every message; prefer
    /// [`Conversation::push`] and [`Conversation::truncate`], which let it write only the tail.
    pub fn messages_mut(&mut self) -> &mut Vec<Message> {
        self.unchanged = 0;
        Arc::make_mut(&mut self.messages)
    }

    /// The messages as a shared list: what a request rendered from this conversation carries,
    /// without copying them.
    pub(crate) fn shared_messages(&self) -> Arc<Vec<Message>> {
        Arc::clone(&self.messages)
    }

    /// Add a message at the end.
    pub fn push(&mut self, message: Message) {
        Arc::make_mut(&mut self.messages).push(message);
    }

    /// Add messages at the end, in order.
    pub fn extend(&mut self, messages: impl IntoIterator<Item = Message>) {
        Arc::make_mut(&mut self.messages).extend(messages);
    }

    /// Keep only the first `len` messages (a rollback).
    pub fn truncate(&mut self, len: usize) {
        if len < self.messages.len() {
            Arc::make_mut(&mut self.messages).truncate(len);
        }
        self.unchanged = self.unchanged.min(len);
    }

    /// Replace the messages in `range` with `with`; what follows moves up. Used by compaction.
    pub(crate) fn splice(&mut self, range: std::ops::Range<usize>, with: Vec<Message>) {
        self.unchanged = self.unchanged.min(range.start);
        Arc::make_mut(&mut self.messages).splice(range, with);
    }

    /// The stamps written when the conversation was obtained.
    pub fn stamps(&self) -> &Stamps {
        &self.stamps
    }

    /// Replace the stamps (a per-conversation override of the window or the trigger, a depth
    /// change reconciled from the input).
    pub fn set_stamps(&mut self, stamps: Stamps) {
        self.head_changed = true;
        self.stamps = stamps;
    }

    /// The state that survives compaction.
    pub fn state(&self) -> &ConversationState {
        &self.state
    }

    /// One state value.
    pub fn state_value(&self, key: &str) -> Option<&Value> {
        self.state.get(key)
    }

    /// Set one state value, returning the one it replaces.
    pub fn set_state(&mut self, key: impl Into<String>, value: Value) -> Option<Value> {
        self.head_changed = true;
        self.state.insert(key.into(), value)
    }

    /// The version of the stored copy this value was loaded from or last saved as; 0 when it was
    /// never saved. A save must name it, and fails when the store has moved on.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Whether the conversation is saved to the store (`false`: held in memory only).
    pub fn is_durable(&self) -> bool {
        self.durable
    }

    /// How many messages the stored copy at [`Conversation::version`] holds.
    pub fn stored_len(&self) -> usize {
        self.stored_len
    }

    /// How many leading messages are unchanged since the last load or save. A store may keep
    /// those and write only the rest.
    pub fn unchanged_prefix(&self) -> usize {
        self.unchanged
    }

    /// Whether the objective, the stamps or the state changed since the last load or save.
    pub(crate) fn head_changed(&self) -> bool {
        self.head_changed
    }

    /// The messages added since the last load or save, when that is the only change to the
    /// messages (so a save can be an append); `None` after a rollback, a compaction or an
    /// in-place edit.
    pub(crate) fn appended(&self) -> Option<&[Message]> {
        (self.unchanged == self.stored_len).then(|| &self.messages[self.stored_len..])
    }

    /// Whether anything differs from the stored copy.
    pub(crate) fn has_unsaved_changes(&self) -> bool {
        self.version == 0
            || self.head_changed
            || self.unchanged != self.stored_len
            || self.messages.len() != self.stored_len
    }

    /// Record that the store now holds this value at `version`.
    pub(crate) fn mark_saved(&mut self, version: u64) {
        self.version = version;
        self.stored_len = self.messages.len();
        self.unchanged = self.messages.len();
        self.head_changed = false;
    }

    /// The request for the next call: the rendered objective as system content and every
    /// message (a no-answer marker as the model reads it). The caller adds tools,
    /// the answer shape and budgets.
    pub fn render(&self) -> ChatRequest {
        ChatRequest::new(
            self.objective.render(),
            super::no_answer::for_model(self.shared_messages()),
        )
    }

    /// The whole conversation as readable text; a marker of a turn without an answer is shown as it was recorded.
    pub fn transcript(&self) -> String {
        transcript::render(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Depth, Grade, OutputSize};

    fn conv() -> Conversation {
        Conversation::new(
            Stamps::new(Grade::Small, Depth::Quick, OutputSize::Compact),
            true,
        )
    }

    #[test]
    fn tracks_what_a_save_must_write() {
        let mut c = conv();
        assert!(c.has_unsaved_changes());
        c.push(Message::user_text("a"));
        c.push(Message::assistant_text("b"));
        c.mark_saved(1);
        assert!(!c.has_unsaved_changes());
        assert_eq!(c.appended().map(<[Message]>::len), Some(0));
        c.push(Message::user_text("c"));
        assert_eq!(c.appended().map(<[Message]>::len), Some(1));
        c.truncate(1);
        assert_eq!(c.appended(), None);
        assert_eq!(c.unchanged_prefix(), 1);
        c.mark_saved(2);
        let _ = c.messages_mut();
        assert_eq!(c.unchanged_prefix(), 0);
        c.mark_saved(3);
        c.set_state("tools", serde_json::json!(["search"]));
        assert!(c.head_changed());
        assert_eq!(c.appended().map(<[Message]>::len), Some(0));
    }

    #[test]
    fn renders_objective_as_system_content() {
        let mut c = conv();
        c.objective_mut().put(Objective::TASK, "Answer.");
        c.push(Message::user_text("q"));
        let req = c.render();
        assert_eq!(req.system, "Answer.");
        assert_eq!(*req.messages, vec![Message::user_text("q")]);
        assert!(req.tools.is_empty());
    }

    #[test]
    fn a_request_shares_the_history_and_a_later_change_does_not_reach_it() {
        let mut c = conv();
        c.push(Message::user_text("q"));
        let req = c.render();
        assert!(Arc::ptr_eq(&req.messages, &c.shared_messages()));
        // Changed while the request is alive: the conversation copies, the request keeps its own.
        c.push(Message::assistant_text("a"));
        c.messages_mut()[0] = Message::user_text("edited");
        assert_eq!(*req.messages, vec![Message::user_text("q")]);
        assert_eq!(c.messages().len(), 2);
        assert_eq!(c.messages()[0], Message::user_text("edited"));
        // Once the request is gone, changes happen in place.
        drop(req);
        let before = Arc::as_ptr(&c.shared_messages());
        c.push(Message::user_text("more"));
        assert_eq!(Arc::as_ptr(&c.shared_messages()), before);
    }
}
