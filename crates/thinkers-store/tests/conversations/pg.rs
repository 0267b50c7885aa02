//! PostgreSQL for the conversation tests: a store in a fresh schema of the test database.
//! `None` (with a loud message) when PostgreSQL does not answer, unless
//! `THINKERS_REQUIRE_SERVICES=1`, which makes that a failure.
//!
//! Schemas are named `tc_<unix seconds>_<uuid>`; each call drops those older than an hour, so
//! test runs never pile them up (dropping at the end of a test could wait on a rollback that a
//! blocked single-threaded runtime never sends).

use std::sync::Arc;

use anyhow::{Result, bail};
use sqlx::Connection as _;
use thinkers::conversation::ConversationStore;
use thinkers_store::{PgConversationStore, PgStore};

async fn base_url() -> Result<Option<String>> {
    // The configured URL first, then the local defaults (user `postgres`, then `root`).
    let mut candidates: Vec<String> = std::env::var("THINKERS_TEST_PG_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .into_iter()
        .collect();
    for url in [
        "postgres://postgres@127.0.0.1:5432/test",
        "postgres://root@127.0.0.1:5432/test",
    ] {
        if !candidates.iter().any(|c| c == url) {
            candidates.push(url.to_owned());
        }
    }
    let mut last = String::new();
    for url in &candidates {
        match sqlx::PgConnection::connect(url).await {
            Ok(c) => {
                let _ = c.close().await;
                return Ok(Some(url.clone()));
            }
            Err(e) => last = e.to_string(),
        }
    }
    if std::env::var("THINKERS_REQUIRE_SERVICES").is_ok_and(|v| v == "1") {
        bail!("PostgreSQL is required but does not answer at {candidates:?}: {last}");
    }
    eprintln!("\n*** SKIPPED the PostgreSQL part: no answer at {candidates:?} ({last}) ***\n");
    Ok(None)
}

/// Conversations in a fresh PostgreSQL schema, or `None` when PostgreSQL is not there.
pub(crate) async fn pg_conversations() -> Result<Option<Arc<dyn ConversationStore>>> {
    let Some(url) = fresh_schema_url().await? else {
        return Ok(None);
    };
    let store = PgStore::open(&url).await?;
    Ok(Some(Arc::new(PgConversationStore::new(&store))))
}

/// A URL whose connections use a fresh schema of the test database, or `None` when PostgreSQL
/// is not there.
pub(crate) async fn fresh_schema_url() -> Result<Option<String>> {
    let Some(base) = base_url().await? else {
        return Ok(None);
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let name = format!("tc_{now}_{}", uuid::Uuid::new_v4().simple());
    let mut c = sqlx::PgConnection::connect(&base).await?;
    let old: Vec<String> =
        sqlx::query_scalar("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'tc\\_%'")
            .fetch_all(&mut c)
            .await?;
    for schema in old {
        let made = schema.split('_').nth(1).and_then(|t| t.parse::<u64>().ok());
        if made.is_some_and(|t| t + 3_600 < now) {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE"
            )))
            .execute(&mut c)
            .await?;
        }
    }
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {name}")))
        .execute(&mut c)
        .await?;
    c.close().await?;
    Ok(Some(format!("{base}?options[search_path]={name}")))
}
