//! [`ConversationStore`]: where durable conversations live, with optimistic versioning.
//!
//! Every stored conversation carries a version that each write bumps by one. A write names the
//! version it was based on; when the store has moved on (someone else saved in between), the
//! write fails with a [`VersionConflict`] and changes nothing, so nothing already stored is lost.
//! The loser reloads, applies its change again and retries.
//!
//! Implementations: [`super::MemoryConversationStore`], and the `thinkers-store` crate's
//! `SqliteConversationStore` and `PgConversationStore`.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::data::Conversation;
use super::id::ConversationId;
use super::message::Message;
use crate::{Error, Result};

/// The parameter a version conflict is reported on.
pub const VERSION_PARAMETER: &str = "conversation.version";

/// Stores conversations. Object-safe: the service holds an `Arc<dyn ConversationStore>`.
pub trait ConversationStore: Send + Sync + 'static {
    /// The conversation stored under `id`, or `None` when there is none.
    fn load<'a>(&'a self, id: &'a ConversationId) -> BoxFuture<'a, Result<Option<Conversation>>>;

    /// Write `conversation` (objective, stamps, state, messages) over the stored copy at
    /// `expected_version` and return the new version, `expected_version + 1`.
    ///
    /// `expected_version` 0 creates the conversation and fails with a conflict when one is
    /// already stored under its id. Otherwise the stored copy must be at exactly
    /// `expected_version`, or the save fails with a [`VersionConflict`] and writes nothing. When
    /// `expected_version` is the conversation's own version, a store may keep the
    /// [`Conversation::unchanged_prefix`] of stored messages and write only the rest.
    fn save<'a>(
        &'a self,
        conversation: &'a Conversation,
        expected_version: u64,
    ) -> BoxFuture<'a, Result<u64>>;

    /// Add `messages` after the stored ones without rewriting anything else, and return the new
    /// version. Fails with a [`VersionConflict`] when the stored copy is not at
    /// `expected_version`, and with an [`Error::InvalidInput`] on `conversation_id` when nothing
    /// is stored under `id`.
    fn append<'a>(
        &'a self,
        id: &'a ConversationId,
        expected_version: u64,
        messages: &'a [Message],
    ) -> BoxFuture<'a, Result<u64>>;

    /// Remove the conversation; `false` when nothing was stored under `id`.
    fn delete<'a>(&'a self, id: &'a ConversationId) -> BoxFuture<'a, Result<bool>>;
}

impl<T: ConversationStore + ?Sized> ConversationStore for Arc<T> {
    fn load<'a>(&'a self, id: &'a ConversationId) -> BoxFuture<'a, Result<Option<Conversation>>> {
        (**self).load(id)
    }

    fn save<'a>(
        &'a self,
        conversation: &'a Conversation,
        expected_version: u64,
    ) -> BoxFuture<'a, Result<u64>> {
        (**self).save(conversation, expected_version)
    }

    fn append<'a>(
        &'a self,
        id: &'a ConversationId,
        expected_version: u64,
        messages: &'a [Message],
    ) -> BoxFuture<'a, Result<u64>> {
        (**self).append(id, expected_version, messages)
    }

    fn delete<'a>(&'a self, id: &'a ConversationId) -> BoxFuture<'a, Result<bool>> {
        (**self).delete(id)
    }
}

/// A write was based on a version the store no longer holds: someone else saved the
/// conversation in between. Nothing was written. Reload, apply the change again and retry.
///
/// It reaches callers as an [`Error::InvalidInput`] on [`VERSION_PARAMETER`] (the caller can
/// correct it by reloading), carrying this value as its source; [`VersionConflict::find`] gets
/// it back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "conversation {conversation} was saved by someone else: the write expected version \
     {expected}, the store holds {}; reload it and apply the change again",
    found_text(*.found)
)]
pub struct VersionConflict {
    /// The conversation.
    pub conversation: ConversationId,
    /// The version the write was based on.
    pub expected: u64,
    /// The version the store holds; `None` when it holds no such conversation.
    pub found: Option<u64>,
}

fn found_text(found: Option<u64>) -> String {
    match found {
        Some(v) => format!("version {v}"),
        None => "no such conversation".to_owned(),
    }
}

impl VersionConflict {
    /// The conflict, as the error a store returns.
    pub fn into_error(self) -> Error {
        Error::InvalidInput {
            parameter: VERSION_PARAMETER.to_owned(),
            value: Some(self.expected.to_string()),
            reason: self.to_string(),
            source: Some(Box::new(self)),
        }
    }

    /// The conflict behind `err`, if `err` reports one.
    pub fn find(err: &Error) -> Option<&Self> {
        match err {
            Error::InvalidInput {
                parameter,
                source: Some(source),
                ..
            } if parameter == VERSION_PARAMETER => source.downcast_ref::<Self>(),
            _ => None,
        }
    }
}

/// Whether `err` is a version conflict (see [`VersionConflict`]).
pub fn is_version_conflict(err: &Error) -> bool {
    VersionConflict::find(err).is_some()
}

/// The error for an id under which nothing is stored: a correctable `InvalidInput` naming it.
pub fn unknown_conversation(id: &ConversationId) -> Error {
    Error::invalid_input(
        "conversation_id",
        Some(id.to_string()),
        "no conversation is stored under this id",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_are_correctable_and_found_again() {
        let id = ConversationId::new();
        let err = VersionConflict {
            conversation: id.clone(),
            expected: 3,
            found: Some(4),
        }
        .into_error();
        assert!(err.is_correctable());
        let text = err.to_string();
        assert!(text.contains(VERSION_PARAMETER), "{text}");
        assert!(text.contains(id.as_str()), "{text}");
        assert!(text.contains("expected version 3"), "{text}");
        assert!(text.contains("holds version 4"), "{text}");
        assert_eq!(VersionConflict::find(&err).map(|c| c.found), Some(Some(4)));
        assert!(is_version_conflict(&err));
        assert!(!is_version_conflict(&unknown_conversation(&id)));
    }
}
