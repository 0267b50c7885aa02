//! OPS access tokens: OAuth2 client credentials, cached until shortly before they expire.
//!
//! One token is shared by every call of a tool instance. Fetching it holds the cache's lock, so
//! concurrent calls that find no valid token wait for one request instead of each making their
//! own. A call whose token the service rejected (401) invalidates exactly that token, so a
//! rejection seen late by a slow call cannot throw away a fresh token another call just fetched.

use std::time::Duration;

use serde::Deserialize;
use tokio::sync::Mutex;
use tokio::time::Instant;
use url::Url;

use super::EpoCredentials;
use crate::http;
use thinkers::{Error, Result};

/// A token is renewed this long before the expiry the service announced.
const EXPIRY_MARGIN: Duration = Duration::from_secs(60);

/// The service name in errors.
const SERVICE: &str = "epo-ops";
/// The step name in errors.
const STEP: &str = "authentication";

#[derive(Debug, Clone)]
struct Cached {
    token: String,
    renew_at: Instant,
}

/// The token cache of one tool instance.
#[derive(Debug, Default)]
pub(crate) struct TokenCache {
    current: Mutex<Option<Cached>>,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    /// OPS sends the lifetime in seconds as a string; a number is accepted too.
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
}

impl TokenCache {
    /// A valid token: the cached one, or a new one from the service.
    pub(crate) async fn token(
        &self,
        client: &reqwest::Client,
        endpoint: &Url,
        credentials: &EpoCredentials,
        budget: &str,
    ) -> Result<String> {
        let mut current = self.current.lock().await;
        if let Some(c) = current.as_ref()
            && Instant::now() < c.renew_at
        {
            return Ok(c.token.clone());
        }
        let fresh = fetch(client, endpoint, credentials, budget).await?;
        let token = fresh.token.clone();
        *current = Some(fresh);
        Ok(token)
    }

    /// Forget `used` if it is still the cached token.
    pub(crate) async fn invalidate(&self, used: &str) {
        let mut current = self.current.lock().await;
        if current.as_ref().is_some_and(|c| c.token == used) {
            *current = None;
        }
    }
}

async fn fetch(
    client: &reqwest::Client,
    endpoint: &Url,
    credentials: &EpoCredentials,
    budget: &str,
) -> Result<Cached> {
    let sent = client
        .post(endpoint.clone())
        .basic_auth(&credentials.key, Some(&credentials.secret))
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body("grant_type=client_credentials")
        .send()
        .await;
    // Nothing here is the model's doing: every failure is the service's (or the deployment's
    // credentials'), never a correctable one.
    let resp = sent.map_err(|e| {
        Error::external(SERVICE, STEP, format!("transport failure: {e}")).with_source(e)
    })?;
    if !resp.status().is_success() {
        let resp = http::throttle_check(SERVICE, STEP, Some(budget), resp).await?;
        let failure = http::failure(resp).await;
        return Err(Error::external(
            SERVICE,
            STEP,
            format!("the token request was refused: {failure}"),
        )
        .with_source(failure));
    }
    let answer: TokenAnswer = resp.json().await.map_err(|e| {
        Error::external(SERVICE, STEP, format!("unreadable token answer: {e}")).with_source(e)
    })?;
    let lifetime = answer
        .expires_in
        .as_ref()
        .and_then(|v| match v {
            serde_json::Value::String(s) => s.trim().parse::<u64>().ok(),
            other => other.as_u64(),
        })
        .map_or(Duration::from_secs(20 * 60), Duration::from_secs);
    Ok(Cached {
        token: answer.access_token,
        renew_at: Instant::now() + lifetime.saturating_sub(EXPIRY_MARGIN),
    })
}
