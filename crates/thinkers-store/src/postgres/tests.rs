//! PostgreSQL-only tests (the conformance suite in `store/tests.rs` runs on both backends).

use anyhow::{Context as _, Result};

use super::*;
use crate::test_services::{drop_schema, fresh_pg_schema};
use crate::{Store, open};
use thinkers::error::ErrorKind;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_processes_may_open_and_migrate_one_database_at_once() -> Result<()> {
    let Some((url, schema)) = fresh_pg_schema().await? else {
        return Ok(());
    };
    let opens = (0..4).map(|_| PgStore::open(&url));
    let stores = futures::future::try_join_all(opens).await?;
    let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
        .fetch_one(stores[0].pool())
        .await?;
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres"))?
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sql"))
        })
        .count();
    assert_eq!(
        applied,
        i64::try_from(files)?,
        "each migration applied once"
    );
    for s in &stores {
        s.close().await;
    }
    drop_schema(&schema).await
}

#[tokio::test]
async fn open_picks_the_backend_from_the_url_and_names_a_bad_one() -> Result<()> {
    let sqlite = open("sqlite::memory:").await?;
    assert!(matches!(sqlite, Store::Sqlite(_)));

    let err = PgStore::open("mysql://nobody@127.0.0.1/x")
        .await
        .err()
        .context("not a postgres URL")?;
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("database"), "{err}");

    // Nothing listens on port 1: the failure names the service and the step.
    let err = PgStore::open("postgres://u:secret@127.0.0.1:1/none")
        .await
        .err()
        .context("no server")?;
    assert_eq!(err.kind(), ErrorKind::ExternalService);
    assert!(err.to_string().contains("postgres"), "{err}");

    if let Some((url, schema)) = fresh_pg_schema().await? {
        let store = open(&url).await?;
        assert!(matches!(store, Store::Postgres(_)));
        store.close().await;
        drop_schema(&schema).await?;
    }
    Ok(())
}

#[test]
fn a_password_never_reaches_messages() {
    assert_eq!(
        redact("postgres://app:hunter2@db:5432/x"),
        "postgres://app:***@db:5432/x"
    );
    assert_eq!(redact("postgres://app@db/x"), "postgres://app@db/x");
}
