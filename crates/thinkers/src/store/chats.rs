//! [`SqliteChatStore`]: the chat host's list of chats, in the same SQLite file as the records
//! and the conversations (table `chats`, migration `0005_chats.sql`). A chat row names the
//! durable conversation holding its messages once the chat's first turn has saved one.

use serde::{Deserialize, Serialize};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::SqliteStore;
use super::sqlite::db_error;
use crate::Result;
use crate::record::now_ms;

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

/// Chats in a [`SqliteStore`]. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct SqliteChatStore {
    store: SqliteStore,
}

fn row_to_chat(row: &SqliteRow) -> Result<ChatRecord> {
    let get = |e| db_error("read chat row", e);
    Ok(ChatRecord {
        id: row.try_get("id").map_err(get)?,
        title: row.try_get("title").map_err(get)?,
        conversation_id: row.try_get("conversation_id").map_err(get)?,
        created_at_ms: row.try_get("created_at_ms").map_err(get)?,
        updated_at_ms: row.try_get("updated_at_ms").map_err(get)?,
    })
}

fn now() -> i64 {
    now_ms()
}

impl SqliteChatStore {
    /// Chats in `store`'s database.
    pub fn new(store: &SqliteStore) -> Self {
        Self {
            store: store.clone(),
        }
    }

    /// Create a chat with this title.
    pub async fn create(&self, title: &str) -> Result<ChatRecord> {
        let at = now();
        let chat = ChatRecord {
            id: uuid::Uuid::now_v7().to_string(),
            title: title.to_owned(),
            conversation_id: None,
            created_at_ms: at,
            updated_at_ms: at,
        };
        sqlx::query(
            "INSERT INTO chats (id, title, conversation_id, created_at_ms, updated_at_ms) \
             VALUES (?, ?, NULL, ?, ?)",
        )
        .bind(&chat.id)
        .bind(&chat.title)
        .bind(at)
        .bind(at)
        .execute(self.store.pool())
        .await
        .map_err(|e| db_error("create chat", e))?;
        Ok(chat)
    }

    /// Every chat, the most recently changed first.
    pub async fn list(&self) -> Result<Vec<ChatRecord>> {
        let rows = sqlx::query(
            "SELECT id, title, conversation_id, created_at_ms, updated_at_ms FROM chats \
             ORDER BY updated_at_ms DESC, id DESC",
        )
        .fetch_all(self.store.pool())
        .await
        .map_err(|e| db_error("list chats", e))?;
        rows.iter().map(row_to_chat).collect()
    }

    /// The chat with this id, if any.
    pub async fn get(&self, id: &str) -> Result<Option<ChatRecord>> {
        let row = sqlx::query(
            "SELECT id, title, conversation_id, created_at_ms, updated_at_ms FROM chats \
             WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(self.store.pool())
        .await
        .map_err(|e| db_error("load chat", e))?;
        row.as_ref().map(row_to_chat).transpose()
    }

    /// Record the chat's conversation (when known) and that it changed now.
    pub async fn touch(&self, id: &str, conversation_id: Option<&str>) -> Result<()> {
        sqlx::query(
            "UPDATE chats SET conversation_id = COALESCE(?, conversation_id), \
             updated_at_ms = ? WHERE id = ?",
        )
        .bind(conversation_id)
        .bind(now())
        .bind(id)
        .execute(self.store.pool())
        .await
        .map_err(|e| db_error("update chat", e))?;
        Ok(())
    }
}
