//! [`SqliteResponseCache`]: the [`ResponseCache`] of the embedded store, which a runtime with a
//! SQLite store registers for the model calls of durable runs (see [`thinkers::durable`]).
//! Answers live in `response_cache` (the first stored wins), hits in `response_cache_hits`, as
//! in the PostgreSQL store.

use futures::future::BoxFuture;

use super::SqliteStore;
use super::sqlite::{corrupt, db_error};
use thinkers::Result;
use thinkers::llm::{CacheKey, CacheUse, ChatResponse, ResponseCache};
use thinkers::record::now_ms;

/// Store an answer (the first one stored under a key wins); `$n` parameters, shared with the
/// PostgreSQL cache.
pub(crate) const PUT_SQL: &str = "INSERT INTO response_cache \
     (key, entry, response, workflow, job, stored_at_ms) VALUES ($1, $2, $3, $4, $5, $6) \
     ON CONFLICT (key) DO NOTHING";

/// How many calls of a workflow were answered from the cache; shared with PostgreSQL.
pub(crate) const HITS_SQL: &str = "SELECT COUNT(*) FROM response_cache_hits WHERE workflow = $1";

/// Model answers by exact request, in a [`SqliteStore`]. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct SqliteResponseCache {
    store: SqliteStore,
}

impl SqliteResponseCache {
    /// The cache in `store`'s database (its tables were created when the store was opened).
    pub fn new(store: &SqliteStore) -> Self {
        Self {
            store: store.clone(),
        }
    }

    /// How many calls of `workflow` were answered from the cache.
    pub async fn hits(&self, workflow: thinkers::job::JobId) -> Result<u64> {
        let n: i64 = sqlx::query_scalar(HITS_SQL)
            .bind(workflow.to_string())
            .fetch_one(self.store.pool())
            .await
            .map_err(|e| db_error("count cache hits", e))?;
        u64::try_from(n).map_err(|_| corrupt("hit count", n))
    }
}

impl ResponseCache for SqliteResponseCache {
    fn get<'a>(
        &'a self,
        key: &'a CacheKey,
        by: CacheUse,
    ) -> BoxFuture<'a, Result<Option<ChatResponse>>> {
        Box::pin(async move {
            let row: Option<String> =
                sqlx::query_scalar("SELECT response FROM response_cache WHERE key = $1")
                    .bind(key.as_bytes().as_slice())
                    .fetch_optional(self.store.pool())
                    .await
                    .map_err(|e| db_error("response cache lookup", e))?;
            let Some(json) = row else {
                return Ok(None);
            };
            sqlx::query(
                "INSERT INTO response_cache_hits (key, workflow, job, at_ms) VALUES ($1, $2, $3, $4)",
            )
            .bind(key.as_bytes().as_slice())
            .bind(by.workflow.to_string())
            .bind(by.job.to_string())
            .bind(now_ms())
            .execute(self.store.pool())
            .await
            .map_err(|e| db_error("note a response cache hit", e))?;
            serde_json::from_str(&json)
                .map(Some)
                .map_err(|_| corrupt("cached response", key.to_hex()))
        })
    }

    fn put<'a>(
        &'a self,
        key: &'a CacheKey,
        entry: &'a str,
        response: &'a ChatResponse,
        by: CacheUse,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let json = serde_json::to_string(response).map_err(|e| {
                thinkers::Error::system("response cache", "the answer did not serialize")
                    .with_source(e)
            })?;
            sqlx::query(PUT_SQL)
                .bind(key.as_bytes().as_slice())
                .bind(entry)
                .bind(json)
                .bind(by.workflow.to_string())
                .bind(by.job.to_string())
                .bind(now_ms())
                .execute(self.store.pool())
                .await
                .map_err(|e| db_error("response cache store", e))?;
            Ok(())
        })
    }
}
