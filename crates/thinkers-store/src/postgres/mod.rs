//! The PostgreSQL store (feature `postgres`): the same tables, recorder, queries, durable
//! conversations and chat list as the SQLite store, for several workers (and chat hosts) sharing
//! one database.
//!
//! The migrations live in `crates/thinkers-store/migrations/postgres/`, numbered like the SQLite ones
//! and differing only where the dialects do (identity column, BIGINT for small integers).
//! The statements and bodies are the SQLite store's (the record queries in `store/query.rs` and
//! the conversations in `store/conversations.rs` are written there for both backends, the rest
//! here from shared macros), so one conformance suite runs against both.

mod chats;
mod response_cache;
mod steps;
#[cfg(test)]
mod tests;
pub(crate) mod workflow_rows;
mod workflows;
mod writer;

pub use chats::PgChatStore;
pub(crate) use chats::PgTurnLock;
pub use response_cache::PgResponseCache;
pub use steps::PgSteps;
pub use writer::PgRecorder;

use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgPool, PgPoolOptions};

use thinkers::{Error, Result};

/// The PostgreSQL migrations (`crates/thinkers-store/migrations/postgres`).
static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// Connections per pool: the batch writer plus concurrent readers and conversation writers.
const CONNECTIONS: u32 = 8;

/// How long to wait for a free connection (or to connect) before failing.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// A PostgreSQL database with the migrations applied. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    location: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &redact(&self.location))
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connect to `url` (`postgres://user@host:port/database`, `postgresql://…`; options such
    /// as `?options=-c%20search_path%3Dmy_schema` pass through to PostgreSQL) and apply the
    /// migrations. Several processes may open the same database at once: sqlx serialises
    /// migrations with an advisory lock.
    pub async fn open(url: &str) -> Result<Self> {
        let url = url.trim();
        if !is_postgres_url(url) {
            return Err(Error::invalid_input(
                "database",
                Some(redact(url)),
                "a PostgreSQL store needs a postgres:// or postgresql:// URL",
            ));
        }
        let pool = PgPoolOptions::new()
            .max_connections(CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect(url)
            .await
            .map_err(|e| match e {
                sqlx::Error::Configuration(_) => {
                    Error::invalid_input("database", Some(redact(url)), e.to_string())
                }
                other => pg_error("connect", other),
            })?;
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|e| pg_error("migrate", sqlx::Error::Migrate(Box::new(e))))?;
        tracing::debug!(location = %redact(url), "postgres store open");
        let store = Self {
            pool,
            location: url.to_owned(),
        };
        crate::owner::sweep_at_open(&store, "postgres").await;
        Ok(store)
    }

    /// The URL the store was opened with, password removed.
    pub fn location(&self) -> String {
        redact(&self.location)
    }

    /// Close every connection, waiting for those in use to be returned. Flush any
    /// [`PgRecorder`] writing to this store first.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The connection pool.
    pub(crate) fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// Whether `url` names a PostgreSQL database.
pub(crate) fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// `url` without its password, for messages and logs.
pub(crate) fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_owned(),
    }
}

/// Map a sqlx error from `step`: a row that does not decode or a value that does not encode is
/// our bug ([`Error::System`]); anything else is the database failing ([`Error::ExternalService`]
/// naming `postgres` and the step).
pub(crate) fn pg_error(step: &str, err: sqlx::Error) -> Error {
    let detail = err.to_string();
    match err {
        sqlx::Error::Decode(_)
        | sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. }
        | sqlx::Error::TypeNotFound { .. }
        | sqlx::Error::Encode(_) => {
            Error::system(format!("postgres store ({step})"), detail).with_source(err)
        }
        other => Error::external("postgres", step, detail).with_source(other),
    }
}

/// Whether retrying may succeed: a serialization failure or deadlock (SQLSTATE 40001, 40P01),
/// no free connection in time, or the network hiccuped.
pub(crate) fn is_transient(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => matches!(db.code().as_deref(), Some("40001" | "40P01")),
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => true,
        _ => false,
    }
}

/// A stored value that does not fit the record type: corrupt data or a bug.
pub(crate) fn corrupt(what: &str, value: impl std::fmt::Display) -> Error {
    crate::corrupt_in("postgres", what, value)
}
