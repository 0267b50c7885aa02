//! The chat host's list of chats (table `chats`, migration `0005_chats.sql` on both backends). A
//! chat row names the durable conversation holding its messages once the chat's first turn has
//! saved one.
//!
//! The statements and the row shape are written once here: `$n` parameters read the same on
//! SQLite and PostgreSQL, and [`chat_queries!`] writes the four queries for a store type from
//! them, so [`SqliteChatStore`] and [`super::PgChatStore`] differ only in their pool and in how a
//! turn is locked. [`ChatStore`] is either, as the host uses it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::SqliteStore;
use thinkers::Result;
use thinkers::record::now_ms;

/// One chat of the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatRecord {
    /// The chat's id (a uuid v7).
    pub id: String,
    /// A title for lists.
    pub title: String,
    /// The durable conversation holding the chat's messages, once its first turn saved one.
    pub conversation_id: Option<String>,
    /// When the chat was created (ms since the Unix epoch).
    pub created_at_ms: i64,
    /// When the chat last changed (ms since the Unix epoch).
    pub updated_at_ms: i64,
}

/// A `chats` row as both backends decode it: id, title, conversation id, created, updated.
pub(crate) type ChatRow = (String, String, Option<String>, i64, i64);

impl ChatRecord {
    /// A new chat with this title, created now.
    pub(crate) fn fresh(title: &str) -> Self {
        let at = now_ms();
        Self {
            id: uuid::Uuid::now_v7().to_string(),
            title: title.to_owned(),
            conversation_id: None,
            created_at_ms: at,
            updated_at_ms: at,
        }
    }

    pub(crate) fn from_row(row: ChatRow) -> Self {
        let (id, title, conversation_id, created_at_ms, updated_at_ms) = row;
        Self {
            id,
            title,
            conversation_id,
            created_at_ms,
            updated_at_ms,
        }
    }
}

/// The chat statements of both backends.
pub(crate) mod sql {
    /// `$1` id, `$2` title, `$3` created, `$4` updated.
    pub(crate) const INSERT: &str = "INSERT INTO chats \
         (id, title, conversation_id, created_at_ms, updated_at_ms) VALUES ($1, $2, NULL, $3, $4)";
    /// Every chat, the most recently changed first.
    pub(crate) const LIST: &str = "SELECT id, title, conversation_id, created_at_ms, \
         updated_at_ms FROM chats ORDER BY updated_at_ms DESC, id DESC";
    /// `$1` id.
    pub(crate) const GET: &str = "SELECT id, title, conversation_id, created_at_ms, \
         updated_at_ms FROM chats WHERE id = $1";
    /// `$1` conversation id (NULL keeps the stored one), `$2` now, `$3` id.
    pub(crate) const TOUCH: &str = "UPDATE chats SET \
         conversation_id = COALESCE($1, conversation_id), updated_at_ms = $2 WHERE id = $3";
}

/// The queries of a chat store type with a `pool()` method, mapping sqlx errors with `$err`
/// (`fn(&str, sqlx::Error) -> Error`). One body for both backends.
macro_rules! chat_queries {
    ($store:ty, $err:path) => {
        impl $store {
            /// Create a chat with this title.
            pub async fn create(&self, title: &str) -> thinkers::Result<$crate::ChatRecord> {
                let chat = $crate::ChatRecord::fresh(title);
                sqlx::query($crate::chats::sql::INSERT)
                    .bind(&chat.id)
                    .bind(&chat.title)
                    .bind(chat.created_at_ms)
                    .bind(chat.updated_at_ms)
                    .execute(self.pool())
                    .await
                    .map_err(|e| $err("create chat", e))?;
                Ok(chat)
            }

            /// Every chat, the most recently changed first.
            pub async fn list(&self) -> thinkers::Result<Vec<$crate::ChatRecord>> {
                let rows: Vec<$crate::chats::ChatRow> = sqlx::query_as($crate::chats::sql::LIST)
                    .fetch_all(self.pool())
                    .await
                    .map_err(|e| $err("list chats", e))?;
                Ok(rows.into_iter().map($crate::ChatRecord::from_row).collect())
            }

            /// The chat with this id, if any.
            pub async fn get(&self, id: &str) -> thinkers::Result<Option<$crate::ChatRecord>> {
                let row: Option<$crate::chats::ChatRow> = sqlx::query_as($crate::chats::sql::GET)
                    .bind(id)
                    .fetch_optional(self.pool())
                    .await
                    .map_err(|e| $err("load chat", e))?;
                Ok(row.map($crate::ChatRecord::from_row))
            }

            /// Record the chat's conversation (when known) and that it changed now.
            pub async fn touch(
                &self,
                id: &str,
                conversation_id: Option<&str>,
            ) -> thinkers::Result<()> {
                sqlx::query($crate::chats::sql::TOUCH)
                    .bind(conversation_id)
                    .bind(thinkers::record::now_ms())
                    .bind(id)
                    .execute(self.pool())
                    .await
                    .map_err(|e| $err("update chat", e))?;
                Ok(())
            }
        }
    };
}
// The PostgreSQL store writes its queries with it too.
#[cfg(feature = "postgres")]
pub(crate) use chat_queries;

/// Chats in a [`SqliteStore`]. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct SqliteChatStore {
    store: SqliteStore,
}

impl SqliteChatStore {
    /// Chats in `store`'s database.
    pub fn new(store: &SqliteStore) -> Self {
        Self {
            store: store.clone(),
        }
    }

    fn pool(&self) -> &sqlx::SqlitePool {
        self.store.pool()
    }
}

chat_queries!(SqliteChatStore, super::sqlite::db_error);

/// The chat list of either backend, as the chat host uses it. Cheap to clone.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ChatStore {
    /// Chats in the embedded SQLite file: one process serves them.
    Sqlite(SqliteChatStore),
    /// Chats in PostgreSQL: several host processes may serve them.
    #[cfg(feature = "postgres")]
    Postgres(super::PgChatStore),
}

impl ChatStore {
    /// The chats of `store`, whichever its backend.
    pub fn of(store: &super::Store) -> Self {
        match store {
            super::Store::Sqlite(s) => Self::Sqlite(SqliteChatStore::new(s)),
            #[cfg(feature = "postgres")]
            super::Store::Postgres(s) => Self::Postgres(super::PgChatStore::new(s)),
        }
    }

    /// Whether several processes may serve these chats at once (PostgreSQL): a turn must then
    /// hold [`ChatStore::lock_turn`] and read the conversation from the store, not from memory.
    pub fn is_shared(&self) -> bool {
        match self {
            Self::Sqlite(_) => false,
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => true,
        }
    }

    /// Create a chat with this title.
    pub async fn create(&self, title: &str) -> Result<ChatRecord> {
        match self {
            Self::Sqlite(s) => s.create(title).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => s.create(title).await,
        }
    }

    /// Every chat, the most recently changed first.
    pub async fn list(&self) -> Result<Vec<ChatRecord>> {
        match self {
            Self::Sqlite(s) => s.list().await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => s.list().await,
        }
    }

    /// The chat with this id, if any.
    pub async fn get(&self, id: &str) -> Result<Option<ChatRecord>> {
        match self {
            Self::Sqlite(s) => s.get(id).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => s.get(id).await,
        }
    }

    /// Record the chat's conversation (when known) and that it changed now.
    pub async fn touch(&self, id: &str, conversation_id: Option<&str>) -> Result<()> {
        match self {
            Self::Sqlite(s) => s.touch(id, conversation_id).await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => s.touch(id, conversation_id).await,
        }
    }

    /// Hold the turn of chat `id` against every process sharing the store, waiting at most
    /// `wait` for a turn running elsewhere; past that, an error says the chat is busy. On SQLite
    /// (one process) this holds nothing: the host's in-process lock is the whole story. On
    /// PostgreSQL it is an advisory lock on a connection of its own, so a process that dies
    /// frees the chat when its connection drops.
    pub async fn lock_turn(&self, id: &str, wait: Duration) -> Result<ChatTurnLock> {
        match self {
            Self::Sqlite(_) => {
                let _ = (id, wait);
                Ok(ChatTurnLock::default())
            }
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => Ok(ChatTurnLock {
                held: Some(s.lock_turn(id, wait).await?),
            }),
        }
    }
}

/// A chat's turn, held in the store ([`ChatStore::lock_turn`]). Release it once the turn has
/// saved; dropping it without [`ChatTurnLock::release`] frees it too (on PostgreSQL by closing
/// its connection), so a panicking or cancelled turn never keeps the chat.
#[derive(Debug, Default)]
#[must_use = "the lock is released when this is dropped"]
pub struct ChatTurnLock {
    #[cfg(feature = "postgres")]
    held: Option<super::postgres::PgTurnLock>,
}

impl ChatTurnLock {
    /// Free the chat for the next turn.
    pub async fn release(self) -> Result<()> {
        #[cfg(feature = "postgres")]
        if let Some(held) = self.held {
            return held.release().await;
        }
        Ok(())
    }
}
