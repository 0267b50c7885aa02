//! Durable conversations in the same database as the records, written once for SQLite
//! ([`SqliteConversationStore`]) and PostgreSQL ([`PgConversationStore`]).
//!
//! A conversation is a head row in `conversations` (objective, stamps and state as JSON, the
//! version, the message count) and one row per message in `conversation_messages`, keyed by
//! position. An append inserts the new rows and bumps the head; a save rewrites the head and only
//! the messages after the conversation's unchanged prefix. Every write runs in one transaction
//! whose first statement checks the version (the versioned update, or the insert of a new head),
//! so of two writers based on the same version exactly one wins and the other changes nothing:
//! on SQLite the transaction is `BEGIN IMMEDIATE`, which holds the write lock from its start; on
//! PostgreSQL the first statement locks the head row, so a concurrent writer waits, re-checks the
//! version once the first commits, matches nothing and changes nothing. A load reads the head and
//! the messages in one transaction (on PostgreSQL a repeatable-read snapshot), so it never sees
//! half a write.
//!
//! The statements use `$n` parameters, which both databases read; `conversation_store!`
//! writes each store type's body from them.

use std::sync::LazyLock;

use futures::future::BoxFuture;
use sqlx::Transaction;

use super::SqliteStore;
use super::sqlite::db_error;
use thinkers::conversation::{
    Conversation, ConversationId, ConversationState, ConversationStore, Message, Objective, Stamps,
    VersionConflict,
};
use thinkers::record::now_ms;
use thinkers::{Error, Result};

/// Rows per multi-row insert, largest first; any count is a sum of these. Fixed shapes keep the
/// statement cache warm.
const CHUNKS: [usize; 4] = [64, 16, 4, 1];

/// The multi-row insert for each entry of [`CHUNKS`].
static INSERT_SQL: LazyLock<[String; 4]> = LazyLock::new(|| {
    CHUNKS.map(|rows| {
        let values = (0..rows)
            .map(|r| format!("(${}, ${}, ${})", 3 * r + 1, 3 * r + 2, 3 * r + 3))
            .collect::<Vec<_>>()
            .join(", ");
        format!("INSERT INTO conversation_messages (conversation_id, seq, message) VALUES {values}")
    })
});

/// The statements of both backends.
mod sql {
    /// `$1` id; a [`super::HeadRow`].
    pub(super) const HEAD: &str =
        "SELECT objective, stamps, state, version, durable FROM conversations WHERE id = $1";
    /// `$1` id.
    pub(super) const MESSAGES: &str =
        "SELECT message FROM conversation_messages WHERE conversation_id = $1 ORDER BY seq";
    /// `$1` id, `$2` objective, `$3` stamps, `$4` state, `$5` durable, `$6` message count,
    /// `$7` created, `$8` updated.
    pub(super) const CREATE: &str = "INSERT INTO conversations (id, objective, stamps, state, \
         version, durable, message_count, created_at_ms, updated_at_ms) \
         VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING";
    /// `$1` objective, `$2` stamps, `$3` state, `$4` durable, `$5` message count, `$6` now,
    /// `$7` id, `$8` expected version.
    pub(super) const SAVE: &str = "UPDATE conversations SET objective = $1, stamps = $2, \
         state = $3, version = version + 1, durable = $4, message_count = $5, \
         updated_at_ms = $6 WHERE id = $7 AND version = $8";
    /// `$1` id, `$2` the first position removed.
    pub(super) const TRIM: &str =
        "DELETE FROM conversation_messages WHERE conversation_id = $1 AND seq >= $2";
    /// `$1` messages added, `$2` now, `$3` id, `$4` expected version.
    pub(super) const APPEND: &str = "UPDATE conversations SET version = version + 1, \
         message_count = message_count + $1, updated_at_ms = $2 \
         WHERE id = $3 AND version = $4 RETURNING message_count";
    /// `$1` id.
    pub(super) const DELETE_MESSAGES: &str =
        "DELETE FROM conversation_messages WHERE conversation_id = $1";
    /// `$1` id.
    pub(super) const DELETE: &str = "DELETE FROM conversations WHERE id = $1";
    /// `$1` id.
    pub(super) const VERSION: &str = "SELECT version FROM conversations WHERE id = $1";
}

/// A head row: objective, stamps and state (JSON), version, durable.
type HeadRow = (String, String, String, i64, bool);

/// A conversation store type over a store with a `pool()`: `$db` is its sqlx database,
/// `$backend` its name in errors, `$err` maps sqlx errors, `$read` and `$write` open the read and
/// the write transactions. One body for both backends.
macro_rules! conversation_store {
    (
        $(#[$doc:meta])*
        $name:ident($store:ty, $db:ty, $backend:literal, $err:path, read: $read:literal,
        write: $write:literal)
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name {
            store: $store,
        }

        impl $name {
            /// Conversations in `store`'s database (the migrations that create their tables ran
            /// when the store was opened).
            pub fn new(store: &$store) -> Self {
                Self {
                    store: store.clone(),
                }
            }

            async fn load_now(&self, id: &ConversationId) -> Result<Option<Conversation>> {
                let step = |e| $err("load conversation", e);
                let mut tx = self.store.pool().begin_with($read).await.map_err(step)?;
                let head: Option<HeadRow> = sqlx::query_as(sql::HEAD)
                    .bind(id.as_str())
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(step)?;
                let Some(head) = head else {
                    // End the transaction now rather than when the connection returns.
                    tx.commit().await.map_err(step)?;
                    return Ok(None);
                };
                let bodies: Vec<String> = sqlx::query_scalar(sql::MESSAGES)
                    .bind(id.as_str())
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(|e| $err("load conversation messages", e))?;
                tx.commit().await.map_err(step)?;
                let messages = bodies
                    .iter()
                    .map(|body| json::<Message>(id, "message", body, $backend))
                    .collect::<Result<Vec<_>>>()?;
                restore(id, head, messages, $backend).map(Some)
            }

            async fn save_now(&self, conv: &Conversation, expected: u64) -> Result<u64> {
                let id = conv.id();
                let objective = to_json(id, "objective", conv.objective(), $backend)?;
                let stamps = to_json(id, "stamps", conv.stamps(), $backend)?;
                let state = to_json(id, "state", conv.state(), $backend)?;
                let count = i64::try_from(conv.messages().len()).unwrap_or(i64::MAX);
                let now = now_ms();
                let mut tx = self.begin_write().await?;
                let keep = if expected == 0 {
                    let done = sqlx::query(sql::CREATE)
                        .bind(id.as_str())
                        .bind(&objective)
                        .bind(&stamps)
                        .bind(&state)
                        .bind(conv.is_durable())
                        .bind(count)
                        .bind(now)
                        .bind(now)
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| $err("create conversation", e))?;
                    if done.rows_affected() == 0 {
                        return Err(Self::conflict(&mut tx, id, expected).await);
                    }
                    0
                } else {
                    let done = sqlx::query(sql::SAVE)
                        .bind(&objective)
                        .bind(&stamps)
                        .bind(&state)
                        .bind(conv.is_durable())
                        .bind(count)
                        .bind(now)
                        .bind(id.as_str())
                        .bind(version_param(expected))
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| $err("save conversation", e))?;
                    if done.rows_affected() == 0 {
                        return Err(Self::conflict(&mut tx, id, expected).await);
                    }
                    // The stored copy is the one the conversation was loaded as only when the
                    // versions agree; otherwise rewrite every message.
                    let keep = if conv.version() == expected {
                        conv.unchanged_prefix().min(conv.stored_len())
                    } else {
                        0
                    };
                    sqlx::query(sql::TRIM)
                        .bind(id.as_str())
                        .bind(i64::try_from(keep).unwrap_or(i64::MAX))
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| $err("save conversation messages", e))?;
                    keep
                };
                Self::insert_messages(&mut tx, id, keep, &conv.messages()[keep..]).await?;
                tx.commit()
                    .await
                    .map_err(|e| $err("save conversation", e))?;
                Ok(expected + 1)
            }

            async fn append_now(
                &self,
                id: &ConversationId,
                expected: u64,
                messages: &[Message],
            ) -> Result<u64> {
                let step = |e| $err("append to conversation", e);
                let added = i64::try_from(messages.len()).unwrap_or(i64::MAX);
                let mut tx = self.begin_write().await?;
                let count: Option<i64> = sqlx::query_scalar(sql::APPEND)
                    .bind(added)
                    .bind(now_ms())
                    .bind(id.as_str())
                    .bind(version_param(expected))
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(step)?;
                let Some(count) = count else {
                    return Err(Self::conflict(&mut tx, id, expected).await);
                };
                let first = usize::try_from(count - added)
                    .map_err(|_| super::corrupt_in($backend, "message count", count))?;
                Self::insert_messages(&mut tx, id, first, messages).await?;
                tx.commit().await.map_err(step)?;
                Ok(expected + 1)
            }

            async fn delete_now(&self, id: &ConversationId) -> Result<bool> {
                let step = |e| $err("delete conversation", e);
                let mut tx = self.begin_write().await?;
                sqlx::query(sql::DELETE_MESSAGES)
                    .bind(id.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(step)?;
                let done = sqlx::query(sql::DELETE)
                    .bind(id.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(step)?;
                tx.commit().await.map_err(step)?;
                Ok(done.rows_affected() > 0)
            }

            /// A write transaction whose version check and writes see the same database.
            async fn begin_write(&self) -> Result<Transaction<'static, $db>> {
                self.store
                    .pool()
                    .begin_with($write)
                    .await
                    .map_err(|e| $err("begin conversation write", e))
            }

            /// The error for a write whose version check failed (the transaction is rolled
            /// back on drop).
            async fn conflict(
                tx: &mut Transaction<'static, $db>,
                id: &ConversationId,
                expected: u64,
            ) -> Error {
                match sqlx::query_scalar(sql::VERSION)
                    .bind(id.as_str())
                    .fetch_optional(&mut **tx)
                    .await
                {
                    Ok(found) => conflict(id, expected, found),
                    Err(e) => $err("read conversation version", e),
                }
            }

            async fn insert_messages(
                tx: &mut Transaction<'static, $db>,
                id: &ConversationId,
                first_seq: usize,
                messages: &[Message],
            ) -> Result<()> {
                let bodies = messages
                    .iter()
                    .map(|m| to_json(id, "message", m, $backend))
                    .collect::<Result<Vec<_>>>()?;
                let sql: &'static [String; 4] = &INSERT_SQL;
                let mut at = 0;
                while at < bodies.len() {
                    let (k, rows) = chunk(bodies.len() - at);
                    let mut q = sqlx::query(sql[k].as_str());
                    for (i, body) in bodies[at..at + rows].iter().enumerate() {
                        let seq = i64::try_from(first_seq + at + i).unwrap_or(i64::MAX);
                        q = q.bind(id.as_str()).bind(seq).bind(body.as_str());
                    }
                    q.execute(&mut **tx)
                        .await
                        .map_err(|e| $err("write conversation messages", e))?;
                    at += rows;
                }
                Ok(())
            }
        }

        impl ConversationStore for $name {
            fn load<'a>(
                &'a self,
                id: &'a ConversationId,
            ) -> BoxFuture<'a, Result<Option<Conversation>>> {
                Box::pin(self.load_now(id))
            }

            fn save<'a>(
                &'a self,
                conversation: &'a Conversation,
                expected_version: u64,
            ) -> BoxFuture<'a, Result<u64>> {
                Box::pin(self.save_now(conversation, expected_version))
            }

            fn append<'a>(
                &'a self,
                id: &'a ConversationId,
                expected_version: u64,
                messages: &'a [Message],
            ) -> BoxFuture<'a, Result<u64>> {
                Box::pin(self.append_now(id, expected_version, messages))
            }

            fn delete<'a>(&'a self, id: &'a ConversationId) -> BoxFuture<'a, Result<bool>> {
                Box::pin(self.delete_now(id))
            }
        }
    };
}

conversation_store!(
    /// Durable conversations in a [`SqliteStore`]. Cheap to clone; clones share the pool.
    SqliteConversationStore(SqliteStore, sqlx::Sqlite, "sqlite", db_error,
        read: "BEGIN", write: "BEGIN IMMEDIATE")
);

#[cfg(feature = "postgres")]
conversation_store!(
    /// Durable conversations in a [`PgStore`](super::PgStore). Cheap to clone; clones share the
    /// pool.
    PgConversationStore(super::PgStore, sqlx::Postgres, "postgres", super::postgres::pg_error,
        read: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", write: "BEGIN")
);

/// The largest entry of [`CHUNKS`] that fits in `left` rows, and its index.
fn chunk(left: usize) -> (usize, usize) {
    CHUNKS
        .iter()
        .copied()
        .enumerate()
        .find(|&(_, rows)| rows <= left)
        .unwrap_or((CHUNKS.len() - 1, 1))
}

/// A stored version never exceeds `i64::MAX`; a larger expectation matches no row.
fn version_param(version: u64) -> i64 {
    i64::try_from(version).unwrap_or(-1)
}

/// A conflict naming the version the store holds (`found`), or an unknown conversation for an
/// append to nothing.
fn conflict(id: &ConversationId, expected: u64, found: Option<i64>) -> Error {
    match found {
        None if expected > 0 => thinkers::conversation::unknown_conversation(id),
        found => VersionConflict {
            conversation: id.clone(),
            expected,
            found: found.and_then(|v| u64::try_from(v).ok()),
        }
        .into_error(),
    }
}

fn restore(
    id: &ConversationId,
    head: HeadRow,
    messages: Vec<Message>,
    backend: &str,
) -> Result<Conversation> {
    let (objective, stamps, state, version, durable) = head;
    let objective: Objective = json(id, "objective", &objective, backend)?;
    let stamps: Stamps = json(id, "stamps", &stamps, backend)?;
    let state: ConversationState = json(id, "state", &state, backend)?;
    let version = u64::try_from(version)
        .map_err(|_| super::corrupt_in(backend, "conversation version", version))?;
    Ok(Conversation::restore(
        id.clone(),
        objective,
        stamps,
        state,
        messages,
        version,
        durable,
    ))
}

fn json<T: serde::de::DeserializeOwned>(
    id: &ConversationId,
    what: &str,
    text: &str,
    backend: &str,
) -> Result<T> {
    serde_json::from_str(text).map_err(|e| {
        Error::system(
            format!("{backend} store (decode)"),
            format!("conversation {id}: stored {what} does not decode: {e}"),
        )
        .with_source(e)
    })
}

fn to_json<T: serde::Serialize + ?Sized>(
    id: &ConversationId,
    what: &str,
    value: &T,
    backend: &str,
) -> Result<String> {
    serde_json::to_string(value).map_err(|e| {
        Error::system(
            format!("{backend} store (encode)"),
            format!("conversation {id}: {what} does not encode: {e}"),
        )
        .with_source(e)
    })
}
