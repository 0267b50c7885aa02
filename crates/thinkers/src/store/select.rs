//! [`open`]: one store, SQLite or PostgreSQL, chosen by the URL.

use std::sync::Arc;

use super::{RecordStore, SqliteConversationStore, SqliteRecorder, SqliteStore};
use crate::Result;
use crate::conversation::ConversationStore;
use crate::record::Recorder;

/// An open store of either backend.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Store {
    /// The embedded SQLite file.
    Sqlite(SqliteStore),
    /// A PostgreSQL database shared by several processes.
    #[cfg(feature = "postgres")]
    Postgres(super::PgStore),
}

/// Open the store `target` names: `postgres://…` or `postgresql://…` is PostgreSQL (feature
/// `postgres`); a `sqlite:` URL, `:memory:` or a file path is SQLite. Migrations are applied.
pub async fn open(target: &str) -> Result<Store> {
    let target = target.trim();
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        return Ok(Store::Postgres(super::PgStore::open(target).await?));
        #[cfg(not(feature = "postgres"))]
        return Err(crate::Error::invalid_input(
            "database",
            Some("postgres://…".to_owned()),
            "this build has no PostgreSQL support (enable the `postgres` feature)",
        ));
    }
    Ok(Store::Sqlite(SqliteStore::open(target).await?))
}

impl Store {
    /// A batching recorder writing to this store (spawns its writer on the current runtime),
    /// with durable model calls on.
    pub fn recorder(&self) -> Result<Arc<dyn Recorder>> {
        self.recorder_with(true)
    }

    /// A batching recorder writing to this store; `durable_calls` says whether a model call's
    /// row is committed before its answer is handed on (see
    /// [`SqliteRecorder::with_durable_calls`]).
    pub fn recorder_with(&self, durable_calls: bool) -> Result<Arc<dyn Recorder>> {
        Ok(match self {
            Self::Sqlite(s) => Arc::new(SqliteRecorder::new(s)?.with_durable_calls(durable_calls)),
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => {
                Arc::new(super::PgRecorder::new(s)?.with_durable_calls(durable_calls))
            }
        })
    }

    /// Durable conversations in this store.
    pub fn conversations(&self) -> Arc<dyn ConversationStore> {
        match self {
            Self::Sqlite(s) => Arc::new(SqliteConversationStore::new(s)),
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => Arc::new(super::PgConversationStore::new(s)),
        }
    }

    /// The journal of durable steps and the approvals in this store (see [`crate::durable`]).
    pub fn steps(&self) -> Arc<dyn crate::durable::StepStore> {
        match self {
            Self::Sqlite(s) => Arc::new(super::SqliteSteps::new(s)),
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => Arc::new(super::PgSteps::new(s)),
        }
    }

    /// The response cache in this store, registered for the model calls of durable runs only
    /// (see [`crate::llm::ResponseCacheService::for_durable_runs`]).
    pub fn durable_response_cache(&self) -> crate::llm::ResponseCacheService {
        let cache: Arc<dyn crate::llm::ResponseCache> = match self {
            Self::Sqlite(s) => Arc::new(super::SqliteResponseCache::new(s)),
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => Arc::new(super::PgResponseCache::new(s)),
        };
        crate::llm::ResponseCacheService::for_durable_runs(cache)
    }

    /// The read queries over this store.
    pub fn records(&self) -> Arc<dyn RecordStore> {
        match self {
            Self::Sqlite(s) => Arc::new(s.clone()),
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => Arc::new(s.clone()),
        }
    }

    /// Where the store lives, fit for messages: the SQLite path or URL it was opened with, or
    /// the PostgreSQL URL without its password.
    pub fn location(&self) -> String {
        match self {
            Self::Sqlite(s) => s.location().to_owned(),
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => s.location(),
        }
    }

    /// The SQLite store, when this is one.
    pub fn as_sqlite(&self) -> Option<&SqliteStore> {
        match self {
            Self::Sqlite(s) => Some(s),
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => None,
        }
    }

    /// Close every connection. Flush recorders writing to this store first.
    pub async fn close(&self) {
        match self {
            Self::Sqlite(s) => s.close().await,
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => s.close().await,
        }
    }
}
