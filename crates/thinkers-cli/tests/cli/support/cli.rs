//! Helpers of the CLI tests: the real `thinkers` binary (`submit`, `worker`, `status`, `run`)
//! against a PostgreSQL schema and thinkers-sim.

use std::time::{Duration, Instant};

use anyhow::{Result, bail, ensure};
use serde_json::Value;
use sqlx::Connection as _;
use tokio::process::Command;

pub(crate) fn thinkers() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_thinkers"));
    c.env_remove("THINKERS_DB")
        .env_remove("THINKERS_SIM_URL")
        .env_remove("THINKERS_REDIS_URL")
        .env("RUST_LOG", "warn");
    c
}

pub(crate) async fn run_ok(args: &[&str]) -> Result<String> {
    let out = thinkers().args(args).output().await?;
    ensure!(
        out.status.success(),
        "thinkers {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?.trim().to_owned())
}

pub(crate) async fn status(db: &str, id: &str) -> Result<Value> {
    let out = run_ok(&["status", id, "--json", "--db", db]).await?;
    Ok(serde_json::from_str(&out)?)
}

pub(crate) async fn wait_for<F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool>>,
{
    let deadline = Instant::now() + timeout;
    while !check().await? {
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

pub(crate) async fn count(db: &str, sql: &str) -> Result<i64> {
    let mut c = sqlx::PgConnection::connect(db).await?;
    let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(&mut c)
        .await?;
    c.close().await.ok();
    Ok(n)
}

pub(crate) fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

pub(crate) async fn finish(db: &str, id: &str, timeout: Duration) -> Result<Value> {
    let deadline = Instant::now() + timeout;
    loop {
        let s = status(db, id).await?;
        if s["status"] == "succeeded" || s["status"] == "failed" {
            return Ok(s);
        }
        ensure!(
            Instant::now() < deadline,
            "the workflow did not finish: {s}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
