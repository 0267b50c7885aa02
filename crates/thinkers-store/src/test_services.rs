//! Test-only access to the external services of the scale-out tests (PostgreSQL).
//!
//! A service that does not answer fails the test when `THINKERS_REQUIRE_SERVICES=1` (CI, set by
//! `scripts/test.sh`); otherwise the test is skipped with a loud message on stderr.

use anyhow::{Result, bail};

/// Whether a missing service must fail the test.
fn required() -> bool {
    std::env::var("THINKERS_REQUIRE_SERVICES").is_ok_and(|v| v == "1")
}

fn missing(service: &str, tried: &str, why: &str) -> Result<()> {
    if required() {
        bail!("{service} is required (THINKERS_REQUIRE_SERVICES=1) but {tried} failed: {why}");
    }
    eprintln!(
        "\n*** SKIPPED: {service} does not answer at {tried} ({why}); \
         set THINKERS_REQUIRE_SERVICES=1 to make this a failure ***\n"
    );
    Ok(())
}

/// A PostgreSQL URL that answers: `THINKERS_TEST_PG_URL`, else the local `test` database as
/// user `postgres`, then `root`. `None` means skip.
pub(crate) async fn postgres_url() -> Result<Option<String>> {
    use sqlx::Connection as _;
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
            Ok(conn) => {
                let _ = conn.close().await;
                return Ok(Some(url.clone()));
            }
            Err(e) => last = e.to_string(),
        }
    }
    missing("PostgreSQL", &candidates.join(", "), &last)?;
    Ok(None)
}

/// A fresh schema in the test database, and a URL whose connections use it. Drop it with
/// [`drop_schema`].
pub(crate) async fn fresh_pg_schema() -> Result<Option<(String, String)>> {
    use sqlx::Connection as _;
    let Some(base) = postgres_url().await? else {
        return Ok(None);
    };
    let schema = format!("t_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(&base).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&mut conn)
        .await?;
    conn.close().await?;
    let sep = if base.contains('?') { '&' } else { '?' };
    Ok(Some((
        format!("{base}{sep}options[search_path]={schema}"),
        schema,
    )))
}

/// Remove a schema made by [`fresh_pg_schema`].
pub(crate) async fn drop_schema(schema: &str) -> Result<()> {
    use sqlx::Connection as _;
    if let Some(base) = postgres_url().await? {
        let mut conn = sqlx::PgConnection::connect(&base).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE"
        )))
        .execute(&mut conn)
        .await?;
        conn.close().await?;
    }
    Ok(())
}
