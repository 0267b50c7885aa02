//! `pubmed_fetch`: PubMed articles by PMID, through NCBI E-utilities `efetch`.
//!
//! One call is one `efetch` request (`db=pubmed&retmode=xml&id=…`) for all the ids asked for; the
//! XML answer is read into typed [`PubmedArticle`]s.
//!
//! **Rate.** NCBI allows 3 requests per second without an API key and 10 with one. Every call
//! asks admission for one slot of the named budget [`PUBMED_BUDGET`], whose default limits carry
//! that rate, so any number of concurrent calls through one dispatcher stays under it. The window
//! is widened by [`RATE_MARGIN`]: admission stamps a request when it is granted, the service when
//! it arrives, and connection set-up can delay an early request more than a later one.
//!
//! Outcomes, as the model reads them:
//!
//! * an empty list, too many ids, or an id that is not a number → [`Error::InvalidInput`] on
//!   `pmids` (the tool's own checks, before any request);
//! * ids PubMed does not know: when none of them is known, [`Error::InvalidInput`] on `pmids`
//!   naming them; when some are, the known articles are returned and the rest listed in
//!   [`PubmedArticles::not_found`];
//! * a 400 → [`Error::InvalidInput`] on `pmids`; a 5xx or 401/403 → [`Error::ExternalService`]
//!   naming `pubmed` and `efetch`; a transport failure → the same;
//! * a 429 → a throttling retry signal on [`PUBMED_BUDGET`].

mod parse;

use std::borrow::Cow;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use url::Url;

use super::http;
use thinkers::dispatch::{Limits, Rate};
use thinkers::error::{FailureClass, ServiceFailure, ServiceStep};
use thinkers::job::Requirements;
use thinkers::tool::{Tool, ToolContext};
use thinkers::{Error, Result};

/// The admission budget every `pubmed_fetch` call takes a slot of.
pub const PUBMED_BUDGET: &str = "service:pubmed";

/// How much wider than one second the request window is; see the module docs.
pub const RATE_MARGIN: Duration = Duration::from_millis(100);

/// The most ids one call may ask for.
pub const MAX_PMIDS: usize = 200;

/// The largest efetch answer read.
const MAX_BODY: usize = 32 * 1024 * 1024;

/// Where and how `pubmed_fetch` calls E-utilities.
#[derive(Clone)]
pub struct PubmedConfig {
    /// The E-utilities base URL. Default `https://eutils.ncbi.nlm.nih.gov/entrez/eutils`.
    pub base_url: String,
    /// An NCBI API key; raises the allowed rate from 3 to 10 requests per second.
    pub api_key: Option<String>,
    /// The `tool` parameter NCBI asks callers to send. Default `thinkers`.
    pub tool: Option<String>,
    /// The `email` parameter NCBI asks callers to send, for contact about heavy use.
    pub email: Option<String>,
}

impl std::fmt::Debug for PubmedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PubmedConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("tool", &self.tool)
            .field("email", &self.email)
            .finish()
    }
}

impl Default for PubmedConfig {
    fn default() -> Self {
        Self {
            base_url: "https://eutils.ncbi.nlm.nih.gov/entrez/eutils".to_owned(),
            api_key: None,
            tool: Some("thinkers".to_owned()),
            email: None,
        }
    }
}

impl PubmedConfig {
    /// The defaults, with the API key taken from the `NCBI_API_KEY` environment variable when it
    /// is set and not empty.
    pub fn from_env() -> Self {
        Self {
            api_key: std::env::var("NCBI_API_KEY")
                .ok()
                .filter(|k| !k.trim().is_empty()),
            ..Self::default()
        }
    }

    /// The default limits of [`PUBMED_BUDGET`]: 3 requests per window without a key, 10 with
    /// one, the window one second plus [`RATE_MARGIN`].
    pub fn limits(&self) -> Limits {
        let amount = if self.api_key.is_some() { 10 } else { 3 };
        Limits {
            // No burst: requests are spaced evenly, so no second of the service's sees more
            // than `amount` of them.
            requests: Some(Rate {
                amount,
                per: Rate::per_second(1).per + RATE_MARGIN,
                burst: Some(std::time::Duration::ZERO),
            }),
            ..Limits::default()
        }
    }
}

/// The input of `pubmed_fetch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PubmedFetchInput {
    /// PubMed identifiers (PMIDs), each a number written as a string, for example "31452104".
    /// At most 200.
    pub pmids: Vec<String>,
}

/// The articles found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PubmedArticles {
    /// The articles PubMed returned, in the order asked for.
    pub articles: Vec<PubmedArticle>,
    /// Requested ids PubMed returned no article for.
    pub not_found: Vec<String>,
}

/// One PubMed record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PubmedArticle {
    /// The PubMed identifier.
    pub pmid: String,
    /// The title.
    pub title: String,
    /// The abstract, its labelled sections separated by blank lines.
    #[serde(rename = "abstract")]
    pub abstract_text: Option<String>,
    /// The authors, `Last First` or a collective name.
    pub authors: Vec<String>,
    /// The journal (for a book record, the publisher).
    pub journal: Option<String>,
    /// The year of publication.
    pub year: Option<i32>,
    /// The DOI, when the record has one.
    pub doi: Option<String>,
}

/// The `pubmed_fetch` tool.
#[derive(Debug, Clone)]
pub struct PubmedFetch {
    client: reqwest::Client,
    config: PubmedConfig,
    efetch: Url,
}

/// Ids PubMed answered for without an article: correctable, the model asked for them.
#[derive(Debug, thiserror::Error)]
#[error("PubMed has no article with the id(s) {0}")]
struct UnknownIds(String);

impl ServiceFailure for UnknownIds {
    fn class(&self) -> FailureClass {
        FailureClass::Correctable
    }
}

impl PubmedFetch {
    /// A `pubmed_fetch` tool using the shared HTTP client.
    pub fn new(config: PubmedConfig) -> Result<Self> {
        Self::with_client(config, http::shared_client()?)
    }

    /// A `pubmed_fetch` tool using `client`.
    pub fn with_client(config: PubmedConfig, client: reqwest::Client) -> Result<Self> {
        let raw = format!("{}/efetch.fcgi", config.base_url.trim_end_matches('/'));
        let efetch = Url::parse(&raw).map_err(|e| {
            Error::system(
                "pubmed_fetch configuration",
                format!("base_url {:?} is not a URL: {e}", config.base_url),
            )
        })?;
        Ok(Self {
            client,
            config,
            efetch,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &PubmedConfig {
        &self.config
    }

    fn validate(pmids: &[String]) -> Result<Vec<String>> {
        if pmids.is_empty() {
            return Err(Error::invalid_input(
                "pmids",
                Some("[]".to_owned()),
                "give at least one PubMed id",
            ));
        }
        if pmids.len() > MAX_PMIDS {
            return Err(Error::invalid_input(
                "pmids",
                Some(format!("{} ids", pmids.len())),
                format!("at most {MAX_PMIDS} ids per call"),
            ));
        }
        let mut ids = Vec::with_capacity(pmids.len());
        for raw in pmids {
            let id = raw.trim();
            if id.is_empty() || id.len() > 12 || !id.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Error::invalid_input(
                    "pmids",
                    Some(raw.clone()),
                    "a PubMed id is a number, such as 31452104",
                ));
            }
            if !ids.iter().any(|known| known == id) {
                ids.push(id.to_owned());
            }
        }
        Ok(ids)
    }

    fn request_url(&self, ids: &[String]) -> Url {
        let mut url = self.efetch.clone();
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("db", "pubmed")
                .append_pair("retmode", "xml")
                .append_pair("id", &ids.join(","));
            if let Some(tool) = &self.config.tool {
                q.append_pair("tool", tool);
            }
            if let Some(email) = &self.config.email {
                q.append_pair("email", email);
            }
            if let Some(key) = &self.config.api_key {
                q.append_pair("api_key", key);
            }
        }
        url
    }
}

impl Tool for PubmedFetch {
    const NAME: &'static str = "pubmed_fetch";
    type Input = PubmedFetchInput;
    type Output = PubmedArticles;

    fn description(&self) -> Cow<'static, str> {
        "Fetch PubMed articles by their PubMed ids (PMIDs): title, abstract, authors, journal, \
         year and DOI of each."
            .into()
    }

    fn read_only(&self) -> bool {
        true
    }

    fn requirements(&self, _input: &PubmedFetchInput, req: &mut Requirements) -> Result<()> {
        req.resource(PUBMED_BUDGET, Some(self.config.limits()));
        Ok(())
    }

    async fn call(
        &self,
        input: &PubmedFetchInput,
        _cx: &ToolContext<'_>,
    ) -> Result<PubmedArticles> {
        let ids = Self::validate(&input.pmids)?;
        let value = ids.join(",");
        let step = ServiceStep {
            service: "pubmed",
            step: "efetch",
            parameter: "pmids",
            value: &value,
        };
        let sent = self
            .client
            .get(self.request_url(&ids))
            .header(reqwest::header::ACCEPT, "application/xml")
            .send()
            .await;
        let resp = step.wrap(sent.map_err(http::HttpFailure))?;
        let resp = http::check_status(&step, Some(PUBMED_BUDGET), resp).await?;
        let body = http::read_text(&step, resp, MAX_BODY).await?;
        let found = parse::articles(&body).map_err(|e| {
            Error::external("pubmed", "efetch", format!("unreadable answer: {e}")).with_source(e)
        })?;

        let mut articles = Vec::with_capacity(ids.len());
        let mut not_found = Vec::new();
        for id in &ids {
            match found.iter().find(|a| &a.pmid == id) {
                Some(a) => articles.push(a.clone()),
                None => not_found.push(id.clone()),
            }
        }
        if articles.is_empty() {
            let missing = not_found.join(",");
            let unknown = ServiceStep {
                value: &missing,
                ..step
            };
            return unknown.wrap(Err(UnknownIds(missing.clone())));
        }
        Ok(PubmedArticles {
            articles,
            not_found,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_numbers() {
        assert_eq!(
            PubmedFetch::validate(&[" 123 ".into(), "123".into(), "45".into()]).unwrap(),
            vec!["123", "45"]
        );
        for bad in [vec![], vec!["PMC123".to_owned()], vec!["12a".to_owned()]] {
            let err = PubmedFetch::validate(&bad).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidInput { parameter, .. } if parameter == "pmids"),
                "{err}"
            );
        }
    }

    #[test]
    fn the_rate_follows_the_key() {
        let without = PubmedConfig::default().limits().requests.unwrap();
        assert_eq!(without.amount, 3);
        assert_eq!(without.per, Duration::from_secs(1) + RATE_MARGIN);
        let with = PubmedConfig {
            api_key: Some("k".into()),
            ..PubmedConfig::default()
        };
        assert_eq!(with.limits().requests.unwrap().amount, 10);
        assert!(!format!("{with:?}").contains("\"k\""));
    }

    #[test]
    fn the_request_carries_the_parameters() {
        let t = PubmedFetch::with_client(
            PubmedConfig {
                base_url: "http://127.0.0.1:9/eutils/".into(),
                api_key: Some("KEY".into()),
                email: Some("a@b.c".into()),
                ..PubmedConfig::default()
            },
            reqwest::Client::new(),
        )
        .unwrap();
        let url = t.request_url(&["1".into(), "2".into()]);
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:9/eutils/efetch.fcgi?db=pubmed&retmode=xml&id=1%2C2&tool=thinkers\
             &email=a%40b.c&api_key=KEY"
        );
    }
}
