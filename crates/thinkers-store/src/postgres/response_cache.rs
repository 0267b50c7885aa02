//! [`PgResponseCache`]: the [`ResponseCache`] of workers sharing a PostgreSQL database.
//!
//! Answers live in `response_cache` (one row per key, never replaced: the first answer stored
//! wins), hits in `response_cache_hits` (one row per call answered from the cache, with the job
//! and workflow that made it), so a workflow's trajectory shows which of its model calls were not
//! paid for. A lookup and the note of its hit are one statement.

use futures::future::BoxFuture;

use super::{PgStore, corrupt, pg_error};
use crate::response_cache::{HITS_SQL, PUT_SQL};
use thinkers::Result;
use thinkers::llm::{CacheKey, CacheUse, ChatResponse, ResponseCache};
use thinkers::record::now_ms;

const GET_SQL: &str = "WITH hit AS (SELECT key, response FROM response_cache WHERE key = $1), \
     noted AS (INSERT INTO response_cache_hits (key, workflow, job, at_ms) \
               SELECT key, $2, $3, $4 FROM hit) \
     SELECT response FROM hit";

/// Model answers by exact request, in a [`PgStore`]. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct PgResponseCache {
    store: PgStore,
}

impl PgResponseCache {
    /// The cache in `store`'s database (its tables were created when the store was opened).
    pub fn new(store: &PgStore) -> Self {
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
            .map_err(|e| pg_error("count cache hits", e))?;
        u64::try_from(n).map_err(|_| corrupt("hit count", n))
    }
}

impl ResponseCache for PgResponseCache {
    fn get<'a>(
        &'a self,
        key: &'a CacheKey,
        by: CacheUse,
    ) -> BoxFuture<'a, Result<Option<ChatResponse>>> {
        Box::pin(async move {
            let row: Option<String> = sqlx::query_scalar(GET_SQL)
                .bind(key.as_bytes().as_slice())
                .bind(by.workflow.to_string())
                .bind(by.job.to_string())
                .bind(now_ms())
                .fetch_optional(self.store.pool())
                .await
                .map_err(|e| pg_error("response cache lookup", e))?;
            row.map(|json| {
                serde_json::from_str(&json).map_err(|_| corrupt("cached response", key.to_hex()))
            })
            .transpose()
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
                .map_err(|e| pg_error("response cache store", e))?;
            Ok(())
        })
    }
}
