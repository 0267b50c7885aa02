//! [`PgConversationStore`]: durable conversations in a PostgreSQL database.
//!
//! Same tables and the same optimistic versioning as [`crate::store::PgConversationStore`].
//! Every write runs in one transaction whose first statement is the versioned update (or the
//! insert of a new head): the row lock it takes makes a concurrent writer based on the same
//! version wait, re-check the version once the first commits, match nothing and change nothing.
//! A load reads the head and the messages in one repeatable-read snapshot, so it never sees half
//! a write.

use std::sync::LazyLock;

use futures::future::BoxFuture;
use sqlx::postgres::PgRow;
use sqlx::{Postgres, Row, Transaction};

use super::{PgStore, corrupt, pg_error};
use crate::conversation::{
    Conversation, ConversationId, ConversationState, ConversationStore, Message, Objective, Stamps,
    VersionConflict,
};
use crate::record::now_ms;
use crate::{Error, Result};

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

/// Durable conversations in a [`PgStore`]. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct PgConversationStore {
    store: PgStore,
}

impl PgConversationStore {
    /// Conversations in `store`'s database (the migrations that create their tables ran when the
    /// store was opened).
    pub fn new(store: &PgStore) -> Self {
        Self {
            store: store.clone(),
        }
    }

    async fn load_now(&self, id: &ConversationId) -> Result<Option<Conversation>> {
        let mut tx = self
            .store
            .pool()
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
            .map_err(|e| pg_error("load conversation", e))?;
        let head = sqlx::query(
            "SELECT objective, stamps, state, version, durable FROM conversations WHERE id = $1",
        )
        .bind(id.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| pg_error("load conversation", e))?;
        let Some(head) = head else {
            // End the snapshot now rather than on a lazy rollback when the connection returns.
            tx.commit()
                .await
                .map_err(|e| pg_error("load conversation", e))?;
            return Ok(None);
        };
        let bodies: Vec<String> = sqlx::query_scalar(
            "SELECT message FROM conversation_messages WHERE conversation_id = $1 ORDER BY seq",
        )
        .bind(id.as_str())
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| pg_error("load conversation messages", e))?;
        tx.commit()
            .await
            .map_err(|e| pg_error("load conversation", e))?;
        let messages = bodies
            .iter()
            .map(|body| json::<Message>(id, "message", body))
            .collect::<Result<Vec<_>>>()?;
        restore(id, &head, messages).map(Some)
    }

    async fn save_now(&self, conv: &Conversation, expected: u64) -> Result<u64> {
        let id = conv.id();
        let objective = to_json(id, "objective", conv.objective())?;
        let stamps = to_json(id, "stamps", conv.stamps())?;
        let state = to_json(id, "state", conv.state())?;
        let count = i64::try_from(conv.messages().len()).unwrap_or(i64::MAX);
        let now = now_ms();
        let mut tx = self.begin_write().await?;
        let keep = if expected == 0 {
            let done = sqlx::query(
                "INSERT INTO conversations (id, objective, stamps, state, version, durable, \
                 message_count, created_at_ms, updated_at_ms) \
                 VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
            )
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
            .map_err(|e| pg_error("create conversation", e))?;
            if done.rows_affected() == 0 {
                return Err(conflict(&mut tx, id, expected).await);
            }
            0
        } else {
            let done = sqlx::query(
                "UPDATE conversations SET objective = $1, stamps = $2, state = $3, \
                 version = version + 1, durable = $4, message_count = $5, updated_at_ms = $6 \
                 WHERE id = $7 AND version = $8",
            )
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
            .map_err(|e| pg_error("save conversation", e))?;
            if done.rows_affected() == 0 {
                return Err(conflict(&mut tx, id, expected).await);
            }
            // The stored copy is the one the conversation was loaded as only when the versions
            // agree; otherwise rewrite every message.
            let keep = if conv.version() == expected {
                conv.unchanged_prefix().min(conv.stored_len())
            } else {
                0
            };
            sqlx::query(
                "DELETE FROM conversation_messages WHERE conversation_id = $1 AND seq >= $2",
            )
            .bind(id.as_str())
            .bind(i64::try_from(keep).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await
            .map_err(|e| pg_error("save conversation messages", e))?;
            keep
        };
        insert_messages(&mut tx, id, keep, &conv.messages()[keep..]).await?;
        tx.commit()
            .await
            .map_err(|e| pg_error("save conversation", e))?;
        Ok(expected + 1)
    }

    async fn append_now(
        &self,
        id: &ConversationId,
        expected: u64,
        messages: &[Message],
    ) -> Result<u64> {
        let added = i64::try_from(messages.len()).unwrap_or(i64::MAX);
        let mut tx = self.begin_write().await?;
        let count: Option<i64> = sqlx::query_scalar(
            "UPDATE conversations SET version = version + 1, \
             message_count = message_count + $1, updated_at_ms = $2 \
             WHERE id = $3 AND version = $4 RETURNING message_count",
        )
        .bind(added)
        .bind(now_ms())
        .bind(id.as_str())
        .bind(version_param(expected))
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| pg_error("append to conversation", e))?;
        let Some(count) = count else {
            return Err(conflict(&mut tx, id, expected).await);
        };
        let first = usize::try_from(count - added).map_err(|_| corrupt("message count", count))?;
        insert_messages(&mut tx, id, first, messages).await?;
        tx.commit()
            .await
            .map_err(|e| pg_error("append to conversation", e))?;
        Ok(expected + 1)
    }

    async fn delete_now(&self, id: &ConversationId) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        sqlx::query("DELETE FROM conversation_messages WHERE conversation_id = $1")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(|e| pg_error("delete conversation", e))?;
        let done = sqlx::query("DELETE FROM conversations WHERE id = $1")
            .bind(id.as_str())
            .execute(&mut *tx)
            .await
            .map_err(|e| pg_error("delete conversation", e))?;
        tx.commit()
            .await
            .map_err(|e| pg_error("delete conversation", e))?;
        Ok(done.rows_affected() > 0)
    }

    /// A write transaction; its first statement locks the conversation's head row.
    async fn begin_write(&self) -> Result<Transaction<'static, Postgres>> {
        self.store
            .pool()
            .begin()
            .await
            .map_err(|e| pg_error("begin conversation write", e))
    }
}

impl ConversationStore for PgConversationStore {
    fn load<'a>(&'a self, id: &'a ConversationId) -> BoxFuture<'a, Result<Option<Conversation>>> {
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

/// A stored version never exceeds `i64::MAX`; a larger expectation matches no row.
fn version_param(version: u64) -> i64 {
    i64::try_from(version).unwrap_or(-1)
}

/// The error for a write whose version check failed: a conflict naming what the store holds, or
/// an unknown conversation for an append to nothing. The transaction is rolled back on drop.
async fn conflict(
    tx: &mut Transaction<'static, Postgres>,
    id: &ConversationId,
    expected: u64,
) -> Error {
    let found: std::result::Result<Option<i64>, sqlx::Error> =
        sqlx::query_scalar("SELECT version FROM conversations WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&mut **tx)
            .await;
    match found {
        Err(e) => pg_error("read conversation version", e),
        Ok(None) if expected > 0 => crate::conversation::unknown_conversation(id),
        Ok(found) => VersionConflict {
            conversation: id.clone(),
            expected,
            found: found.and_then(|v| u64::try_from(v).ok()),
        }
        .into_error(),
    }
}

async fn insert_messages(
    tx: &mut Transaction<'static, Postgres>,
    id: &ConversationId,
    first_seq: usize,
    messages: &[Message],
) -> Result<()> {
    let bodies = messages
        .iter()
        .map(|m| to_json(id, "message", m))
        .collect::<Result<Vec<_>>>()?;
    let sql: &'static [String; 4] = &INSERT_SQL;
    let mut at = 0;
    while at < bodies.len() {
        let left = bodies.len() - at;
        let (k, rows) = CHUNKS
            .iter()
            .copied()
            .enumerate()
            .find(|&(_, rows)| rows <= left)
            .unwrap_or((CHUNKS.len() - 1, 1));
        let mut q = sqlx::query(sql[k].as_str());
        for (i, body) in bodies[at..at + rows].iter().enumerate() {
            let seq = i64::try_from(first_seq + at + i).unwrap_or(i64::MAX);
            q = q.bind(id.as_str()).bind(seq).bind(body.as_str());
        }
        q.execute(&mut **tx)
            .await
            .map_err(|e| pg_error("write conversation messages", e))?;
        at += rows;
    }
    Ok(())
}

fn restore(id: &ConversationId, head: &PgRow, messages: Vec<Message>) -> Result<Conversation> {
    let text = |column: &str| -> Result<String> {
        head.try_get::<String, _>(column)
            .map_err(|e| pg_error("load conversation", e))
    };
    let objective: Objective = json(id, "objective", &text("objective")?)?;
    let stamps: Stamps = json(id, "stamps", &text("stamps")?)?;
    let state: ConversationState = json(id, "state", &text("state")?)?;
    let version: i64 = head
        .try_get("version")
        .map_err(|e| pg_error("load conversation", e))?;
    let version = u64::try_from(version).map_err(|_| corrupt("conversation version", version))?;
    let durable: bool = head
        .try_get("durable")
        .map_err(|e| pg_error("load conversation", e))?;
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

fn json<T: serde::de::DeserializeOwned>(id: &ConversationId, what: &str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| {
        Error::system(
            "postgres store (decode)",
            format!("conversation {id}: stored {what} does not decode: {e}"),
        )
        .with_source(e)
    })
}

fn to_json<T: serde::Serialize + ?Sized>(
    id: &ConversationId,
    what: &str,
    value: &T,
) -> Result<String> {
    serde_json::to_string(value).map_err(|e| {
        Error::system(
            "postgres store (encode)",
            format!("conversation {id}: {what} does not encode: {e}"),
        )
        .with_source(e)
    })
}
