//! Test-only access to the external services of the scale-out tests (Redis).
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

/// A Redis URL that answers: `THINKERS_TEST_REDIS_URL`, else `redis://127.0.0.1:6379`.
/// `None` means skip.
pub(crate) async fn redis_url() -> Result<Option<String>> {
    let url = std::env::var("THINKERS_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned());
    let answer = async {
        let client = redis::Client::open(url.as_str())?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await
    }
    .await;
    match answer {
        Ok(_) => Ok(Some(url)),
        Err(e) => {
            missing("Redis", &url, &e.to_string())?;
            Ok(None)
        }
    }
}
