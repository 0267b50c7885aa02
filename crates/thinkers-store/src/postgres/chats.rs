//! [`PgChatStore`]: the chat list in PostgreSQL (the SQLite store's queries, from
//! [`chat_queries!`](crate::chats)), and the lock that keeps a chat's turns one at a time
//! across every host process sharing the database.
//!
//! The lock is a session-level advisory lock, `pg_advisory_lock(CHAT_LOCKS, hashtext(chat id))`,
//! taken on a connection opened for the turn (not one of the pool's, which a waiting turn would
//! starve and which would go back to the pool still holding the lock if the turn were dropped).
//! PostgreSQL frees it when the session ends, so a host that crashes or loses its network frees
//! its chats without an expiry to tune. Waiting is bounded by the session's `lock_timeout`, which
//! makes the server itself give up (a client-side timeout would leave the server waiting and
//! taking the lock later). Two chats whose ids hash alike merely take turns.

use std::time::Duration;

use sqlx::{Connection as _, PgConnection};

use super::{PgStore, pg_error};
use crate::chats::chat_queries;
use thinkers::{Error, Result};

/// The first key of every chat turn lock: "thkc". The two-key advisory locks do not overlap the
/// one-key space sqlx's migrator locks in.
const CHAT_LOCKS: i32 = 0x7468_6b63;

/// Chats in a [`PgStore`]. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct PgChatStore {
    store: PgStore,
}

impl PgChatStore {
    /// Chats in `store`'s database.
    pub fn new(store: &PgStore) -> Self {
        Self {
            store: store.clone(),
        }
    }

    fn pool(&self) -> &sqlx::PgPool {
        self.store.pool()
    }

    /// Hold chat `id`'s turn lock, waiting at most `wait` for another session holding it.
    pub(crate) async fn lock_turn(&self, id: &str, wait: Duration) -> Result<PgTurnLock> {
        let options = self.pool().connect_options();
        let mut conn = PgConnection::connect_with(&options)
            .await
            .map_err(|e| pg_error("connect for a chat turn lock", e))?;
        let timeout = format!("{}ms", wait.as_millis().max(1));
        sqlx::query("SELECT set_config('lock_timeout', $1, false)")
            .bind(&timeout)
            .execute(&mut conn)
            .await
            .map_err(|e| pg_error("set the chat turn lock's timeout", e))?;
        let locked = sqlx::query("SELECT pg_advisory_lock($1, hashtext($2))")
            .bind(CHAT_LOCKS)
            .bind(id)
            .execute(&mut conn)
            .await;
        match locked {
            Ok(_) => Ok(PgTurnLock {
                conn: Some(conn),
                chat_id: id.to_owned(),
            }),
            // 55P03 lock_not_available: lock_timeout ran out.
            Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("55P03") => {
                Err(Error::external(
                    "postgres",
                    "wait for the chat's turn",
                    format!(
                        "chat `{id}` is busy: another host instance has been running a turn of \
                         it for more than {} s",
                        wait.as_secs_f64()
                    ),
                ))
            }
            Err(e) => Err(pg_error("lock the chat's turn", e)),
        }
    }
}

chat_queries!(PgChatStore, pg_error);

/// A held chat turn lock: the session that holds it. Dropped without
/// [`PgTurnLock::release`], the connection closes and PostgreSQL frees the lock.
#[derive(Debug)]
pub(crate) struct PgTurnLock {
    conn: Option<PgConnection>,
    chat_id: String,
}

impl PgTurnLock {
    /// Unlock and close the session.
    pub(crate) async fn release(mut self) -> Result<()> {
        let Some(mut conn) = self.conn.take() else {
            return Ok(());
        };
        let unlocked: bool = sqlx::query_scalar("SELECT pg_advisory_unlock($1, hashtext($2))")
            .bind(CHAT_LOCKS)
            .bind(&self.chat_id)
            .fetch_one(&mut conn)
            .await
            .map_err(|e| pg_error("unlock the chat's turn", e))?;
        // Closing ends the session, which frees the lock in any case.
        conn.close()
            .await
            .map_err(|e| pg_error("close the chat turn lock's connection", e))?;
        if unlocked {
            Ok(())
        } else {
            Err(Error::system(
                "chat turn lock",
                format!(
                    "chat `{}`: the session did not hold its turn lock",
                    self.chat_id
                ),
            ))
        }
    }
}
