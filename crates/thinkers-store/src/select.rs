//! [`open`]: one store, SQLite or PostgreSQL, chosen by the URL.

use std::sync::Arc;

use futures::future::BoxFuture;
use thinkers::conversation::ConversationStore;
use thinkers::job::JobId;
use thinkers::record::Recorder;
use thinkers::runtime::{RuntimeBuilder, RuntimeStore};
use thinkers::{Result, Runtime};

use super::{RecordStore, SqliteConversationStore, SqliteRecorder, SqliteStore};

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
        return Err(thinkers::Error::invalid_input(
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

    /// The journal of durable steps and the approvals in this store (see [`thinkers::durable`]).
    pub fn steps(&self) -> Arc<dyn thinkers::durable::StepStore> {
        match self {
            Self::Sqlite(s) => Arc::new(super::SqliteSteps::new(s)),
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => Arc::new(super::PgSteps::new(s)),
        }
    }

    /// The response cache in this store, registered for the model calls of durable runs only
    /// (see [`thinkers::llm::ResponseCacheService::for_durable_runs`]).
    pub fn durable_response_cache(&self) -> thinkers::llm::ResponseCacheService {
        let cache: Arc<dyn thinkers::llm::ResponseCache> = match self {
            Self::Sqlite(s) => Arc::new(super::SqliteResponseCache::new(s)),
            #[cfg(feature = "postgres")]
            Self::Postgres(s) => Arc::new(super::PgResponseCache::new(s)),
        };
        thinkers::llm::ResponseCacheService::for_durable_runs(cache)
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

impl RuntimeStore for Store {
    fn recorder(&self, durable_calls: bool) -> Result<Arc<dyn Recorder>> {
        self.recorder_with(durable_calls)
    }

    fn conversations(&self) -> Arc<dyn ConversationStore> {
        Self::conversations(self)
    }

    fn steps(&self) -> Arc<dyn thinkers::durable::StepStore> {
        Self::steps(self)
    }

    fn durable_response_cache(&self) -> thinkers::llm::ResponseCacheService {
        Self::durable_response_cache(self)
    }

    fn save_benchmark_report(
        &self,
        workflow: JobId,
        job: JobId,
        report: serde_json::Value,
    ) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move { Self::save_benchmark_report(self, workflow, job, &report).await })
    }
}

/// `.database(url)` on a [`RuntimeBuilder`]: a runtime that keeps its record
/// in a store of this crate.
pub trait RuntimeBuilderExt: Sized {
    /// Record to this SQLite file or URL (for example `thinkers.db` or `sqlite::memory:`), or,
    /// with the `postgres` feature, to a `postgres://` URL (see [`open`]). The store is opened,
    /// and its migrations applied, when the runtime is built; a store that cannot be opened
    /// fails the build.
    fn database(self, path_or_url: impl Into<String>) -> Self;
}

impl RuntimeBuilderExt for RuntimeBuilder {
    fn database(self, path_or_url: impl Into<String>) -> Self {
        let target = path_or_url.into();
        self.store(async move {
            let store: Arc<dyn RuntimeStore> = Arc::new(open(&target).await?);
            Ok(store)
        })
    }
}

/// The store of a [`Runtime`] built with [`RuntimeBuilderExt::database`], by its type.
pub trait RuntimeExt {
    /// The store the runtime records to, whichever the backend; `None` without one.
    fn open_store(&self) -> Option<&Store>;

    /// The SQLite store, when the runtime records to one.
    fn store(&self) -> Option<&SqliteStore> {
        self.open_store().and_then(Store::as_sqlite)
    }
}

impl RuntimeExt for Runtime {
    fn open_store(&self) -> Option<&Store> {
        let store: &dyn std::any::Any = self.record_store()?.as_ref();
        store.downcast_ref::<Store>()
    }
}
