//! [`MemoryConversationStore`]: a [`ConversationStore`] in process memory.
//!
//! Keeps the same versioning contract as a database store, so tests of code above the store
//! exercise conflicts too. The service also holds its temporary conversations in one.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use futures::future::BoxFuture;

use super::data::Conversation;
use super::id::ConversationId;
use super::message::Message;
use super::store::{ConversationStore, VersionConflict, unknown_conversation};
use crate::Result;

/// Conversations held in memory, lost with the process.
#[derive(Debug, Default)]
pub struct MemoryConversationStore {
    conversations: Mutex<HashMap<ConversationId, Conversation>>,
}

impl MemoryConversationStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many conversations are held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no conversation is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ConversationId, Conversation>> {
        self.conversations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn load_now(&self, id: &ConversationId) -> Option<Conversation> {
        self.lock().get(id).cloned()
    }

    fn save_now(&self, conv: &Conversation, expected: u64) -> Result<u64> {
        let mut map = self.lock();
        let found = map.get(conv.id()).map(Conversation::version);
        // A stored copy is at version 1 or later, so `0` stands for "not stored".
        if found.unwrap_or(0) != expected {
            return Err(VersionConflict {
                conversation: conv.id().clone(),
                expected,
                found,
            }
            .into_error());
        }
        let version = expected + 1;
        let messages = match map.remove(conv.id()) {
            // Same version as the caller loaded: keep the unchanged prefix, copy the rest.
            Some(stored) if conv.version() == expected => {
                let mut messages = stored.messages().to_vec();
                let keep = conv.unchanged_prefix().min(messages.len());
                messages.truncate(keep);
                messages.extend_from_slice(&conv.messages()[keep..]);
                messages
            }
            _ => conv.messages().to_vec(),
        };
        let stored = Conversation::restore(
            conv.id().clone(),
            conv.objective().clone(),
            *conv.stamps(),
            conv.state().clone(),
            messages,
            version,
            conv.is_durable(),
        );
        map.insert(conv.id().clone(), stored);
        Ok(version)
    }

    fn append_now(&self, id: &ConversationId, expected: u64, messages: &[Message]) -> Result<u64> {
        let mut map = self.lock();
        let Some(stored) = map.get_mut(id) else {
            return Err(unknown_conversation(id));
        };
        if stored.version() != expected {
            return Err(VersionConflict {
                conversation: id.clone(),
                expected,
                found: Some(stored.version()),
            }
            .into_error());
        }
        stored.extend(messages.iter().cloned());
        stored.mark_saved(expected + 1);
        Ok(expected + 1)
    }
}

impl ConversationStore for MemoryConversationStore {
    fn load<'a>(&'a self, id: &'a ConversationId) -> BoxFuture<'a, Result<Option<Conversation>>> {
        let found = self.load_now(id);
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(
        &'a self,
        conversation: &'a Conversation,
        expected_version: u64,
    ) -> BoxFuture<'a, Result<u64>> {
        let result = self.save_now(conversation, expected_version);
        Box::pin(async move { result })
    }

    fn append<'a>(
        &'a self,
        id: &'a ConversationId,
        expected_version: u64,
        messages: &'a [Message],
    ) -> BoxFuture<'a, Result<u64>> {
        let result = self.append_now(id, expected_version, messages);
        Box::pin(async move { result })
    }

    fn delete<'a>(&'a self, id: &'a ConversationId) -> BoxFuture<'a, Result<bool>> {
        let removed = self.lock().remove(id).is_some();
        Box::pin(async move { Ok(removed) })
    }
}
