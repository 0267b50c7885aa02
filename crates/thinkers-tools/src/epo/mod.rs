//! `epo_claims`: the numbered claims of a patent publication, from EPO Open Patent Services.
//!
//! A call normalises the publication number (see [`PublicationNumber::parse`]), obtains an
//! access token (OAuth2 client credentials against `/3.2/auth/accesstoken`, cached until shortly
//! before it expires) and asks
//! `/3.2/rest-services/published-data/publication/epodoc/{number}/claims`. A 401 from that
//! request means the token went stale early: the tool fetches a new one and asks once more.
//!
//! Outcomes, as the model reads them:
//!
//! * a publication number of the wrong shape → [`Error::InvalidInput`] on `publication_number`
//!   (the tool's own check, before any request);
//! * a 404 (OPS knows no such publication, or has no claims for it) or a 400 →
//!   [`Error::InvalidInput`] on `publication_number`, through [`ServiceStep::wrap`];
//! * a failed token request, a second 401, a 403 (quota) or a 5xx → [`Error::ExternalService`]
//!   naming `epo-ops` and the step (`authentication` or `claims`); a transport failure → the same;
//! * a 429 (or a 503 with `Retry-After`) → a throttling retry signal on [`EPO_BUDGET`].

mod auth;
mod number;
mod parse;

pub use number::PublicationNumber;

use std::borrow::Cow;

use reqwest::StatusCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use url::Url;

use super::http;
use thinkers::dispatch::Limits;
use thinkers::error::ServiceStep;
use thinkers::job::Requirements;
use thinkers::tool::{Tool, ToolContext};
use thinkers::{Error, Result};

/// The admission budget every `epo_claims` call takes a slot of. Unlimited unless the deployment
/// configures it (OPS
/// throttles dynamically); a throttling answer pauses it.
pub const EPO_BUDGET: &str = "service:epo-ops";

/// The largest claims answer read.
const MAX_BODY: usize = 16 * 1024 * 1024;

/// OPS consumer credentials.
#[derive(Clone)]
pub struct EpoCredentials {
    key: String,
    secret: String,
}

impl std::fmt::Debug for EpoCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EpoCredentials")
            .field("key", &self.key)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl EpoCredentials {
    /// Credentials from a consumer key and secret.
    pub fn new(key: impl Into<String>, secret: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            secret: secret.into(),
        }
    }

    /// Credentials from the `EPO_OPS_KEY` and `EPO_OPS_SECRET` environment variables.
    pub fn from_env() -> Result<Self> {
        let read = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| {
                    Error::external(
                        "epo-ops",
                        "authentication",
                        format!("no OPS credentials: the environment variable {name} is not set"),
                    )
                })
        };
        Ok(Self::new(read("EPO_OPS_KEY")?, read("EPO_OPS_SECRET")?))
    }
}

/// Where and as whom `epo_claims` calls OPS.
#[derive(Debug, Clone)]
pub struct EpoClaimsConfig {
    /// The OPS base URL, without the version. Default `https://ops.epo.org`.
    pub base_url: String,
    /// The consumer credentials.
    pub credentials: EpoCredentials,
}

impl EpoClaimsConfig {
    /// The default base URL with these credentials.
    pub fn new(credentials: EpoCredentials) -> Self {
        Self {
            base_url: "https://ops.epo.org".to_owned(),
            credentials,
        }
    }

    /// The default base URL with credentials from the environment.
    pub fn from_env() -> Result<Self> {
        Ok(Self::new(EpoCredentials::from_env()?))
    }
}

/// The input of `epo_claims`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EpoClaimsInput {
    /// The publication number, for example "EP1000000A1" or "EP1000000" (the kind code is
    /// optional).
    pub publication_number: String,
    /// The language of the claims wanted, for example "EN", "DE" or "FR". Default: English when
    /// present, otherwise the first language published.
    #[serde(default)]
    pub language: Option<String>,
}

/// The claims of one publication, in one language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PatentClaims {
    /// The publication number as asked of OPS, in epodoc form (`EP1000000.A1`).
    pub publication_number: String,
    /// The language of these claims.
    pub language: Option<String>,
    /// Every language the claims are published in.
    pub languages: Vec<String>,
    /// The claims, in order.
    pub claims: Vec<Claim>,
}

/// One numbered claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Claim {
    /// The claim's number.
    pub number: u32,
    /// The claim's text, without its number.
    pub text: String,
}

/// The `epo_claims` tool.
#[derive(Debug)]
pub struct EpoClaims {
    client: reqwest::Client,
    config: EpoClaimsConfig,
    auth_url: Url,
    rest_base: Url,
    tokens: auth::TokenCache,
}

impl EpoClaims {
    /// An `epo_claims` tool using the shared HTTP client.
    pub fn new(config: EpoClaimsConfig) -> Result<Self> {
        Self::with_client(config, http::shared_client()?)
    }

    /// An `epo_claims` tool using `client`.
    pub fn with_client(config: EpoClaimsConfig, client: reqwest::Client) -> Result<Self> {
        let base = config.base_url.trim_end_matches('/');
        let parse = |raw: String| {
            Url::parse(&raw).map_err(|e| {
                Error::system(
                    "epo_claims configuration",
                    format!("base_url {:?} is not a URL: {e}", config.base_url),
                )
            })
        };
        let auth_url = parse(format!("{base}/3.2/auth/accesstoken"))?;
        let rest_base = parse(format!(
            "{base}/3.2/rest-services/published-data/publication/epodoc/"
        ))?;
        Ok(Self {
            client,
            auth_url,
            rest_base,
            config,
            tokens: auth::TokenCache::default(),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &EpoClaimsConfig {
        &self.config
    }

    async fn token(&self) -> Result<String> {
        self.tokens
            .token(
                &self.client,
                &self.auth_url,
                &self.config.credentials,
                EPO_BUDGET,
            )
            .await
    }

    /// Ask for the claims, renewing the token once if the service rejects it.
    async fn request(&self, step: &ServiceStep<'_>, url: &Url) -> Result<reqwest::Response> {
        let mut renewed = false;
        loop {
            let token = self.token().await?;
            let sent = self
                .client
                .get(url.clone())
                .bearer_auth(&token)
                .header(reqwest::header::ACCEPT, "application/xml")
                .send()
                .await;
            let resp = step.wrap(sent.map_err(http::HttpFailure))?;
            if resp.status() == StatusCode::UNAUTHORIZED && !renewed {
                self.tokens.invalidate(&token).await;
                renewed = true;
                continue;
            }
            return http::check_status(step, Some(EPO_BUDGET), resp).await;
        }
    }
}

impl Tool for EpoClaims {
    const NAME: &'static str = "epo_claims";
    type Input = EpoClaimsInput;
    type Output = PatentClaims;

    fn description(&self) -> Cow<'static, str> {
        "Fetch the numbered claims of a patent publication (for example EP1000000A1) from the \
         European Patent Office."
            .into()
    }

    fn read_only(&self) -> bool {
        true
    }

    fn requirements(&self, _input: &EpoClaimsInput, req: &mut Requirements) -> Result<()> {
        req.resource(EPO_BUDGET, Some(Limits::default()));
        Ok(())
    }

    async fn call(&self, input: &EpoClaimsInput, _cx: &ToolContext<'_>) -> Result<PatentClaims> {
        let number = PublicationNumber::parse(&input.publication_number).ok_or_else(|| {
            Error::invalid_input(
                "publication_number",
                Some(input.publication_number.clone()),
                "expected a country code, the serial number and an optional kind code, such as \
                 EP1000000A1",
            )
        })?;
        let epodoc = number.epodoc();
        let step = ServiceStep {
            service: "epo-ops",
            step: "claims",
            parameter: "publication_number",
            value: &input.publication_number,
        };
        let url = self
            .rest_base
            .join(&format!("{epodoc}/claims"))
            .map_err(|e| Error::system("epo_claims", format!("building the claims URL: {e}")))?;
        let resp = self.request(&step, &url).await?;
        let body = http::read_text(&step, resp, MAX_BODY).await?;
        let sets = parse::claim_sets(&body).map_err(|e| {
            Error::external("epo-ops", "claims", format!("unreadable answer: {e}")).with_source(e)
        })?;
        let languages: Vec<String> = sets.iter().filter_map(|s| s.language.clone()).collect();
        let wanted = input.language.as_deref().map(str::to_ascii_uppercase);
        let chosen = match &wanted {
            Some(lang) => sets.iter().find(|s| s.language.as_deref() == Some(lang)),
            None => sets
                .iter()
                .find(|s| s.language.as_deref() == Some("EN"))
                .or_else(|| sets.first()),
        };
        let Some(chosen) = chosen else {
            return Err(match wanted {
                Some(lang) if !sets.is_empty() => Error::invalid_input(
                    "language",
                    Some(lang),
                    format!("the claims are published in {} only", languages.join(", ")),
                ),
                _ => Error::external("epo-ops", "claims", "the answer holds no claims element"),
            });
        };
        Ok(PatentClaims {
            publication_number: epodoc,
            language: chosen.language.clone(),
            languages,
            claims: chosen.claims.clone(),
        })
    }
}
