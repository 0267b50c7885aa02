//! `web_fetch`: an http(s) URL the model chose, as readable text.
//!
//! The tool follows redirects itself (at most [`WebFetchConfig::max_redirects`]), checks every
//! hop's address with the [`AddressPolicy`] before connecting (see [`guard`] for how the check is
//! tied to the connection), reads at most [`WebFetchConfig::max_bytes`] of the body (setting
//! `truncated` when there was more) and renders HTML as plain text that reads like Markdown.
//!
//! [`WebFetchConfig::timeout`] bounds the whole call, rendering included: HTML is parsed and
//! rendered on a blocking thread (never on the async runtime's workers), by a parse whose work is
//! linear in the page's size (markup nested deeper than a limit is flattened, and a page whose
//! standard tree would grow out of proportion to its markup is rendered up to that point and
//! marked `truncated`). The renderer stops soon after the deadline even when the call has already
//! answered.
//!
//! Outcomes, as the model reads them:
//!
//! * a URL that is not http(s), does not parse, points at a refused address, redirects too often
//!   or serves something that is not text → [`Error::InvalidInput`] on `url` (the tool's own
//!   checks);
//! * a 4xx answer (404, 410, 400…) → [`Error::InvalidInput`] on `url` with the status, through
//!   [`ServiceStep::wrap`]; a 401/403 or 5xx → [`Error::ExternalService`] naming the site and the
//!   `fetch` step; a connection failure or timeout → the same, as a transport failure;
//! * a 429 (or a 503 with `Retry-After`) → a throttling retry signal on the site's budget
//!   `web:<host>`, which every call to that host asks admission for: the dispatcher pauses the
//!   budget, waits and runs the call again;
//! * no complete answer within the timeout (fetching or rendering) → [`Error::ExternalService`]
//!   on the `fetch` step, naming the URL and the timeout.
//!
//! Bodies are decoded as UTF-8 (invalid sequences replaced); a page in another charset reads with
//! replacement characters where it is not ASCII.

mod bounded;
pub mod guard;
mod html;

pub use guard::{AddressPolicy, Refused};

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{CONTENT_TYPE, LOCATION};
use reqwest::redirect::Policy;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use url::Url;

use super::http;
use thinkers::dispatch::Limits;
use thinkers::error::ServiceStep;
use thinkers::job::Requirements;
use thinkers::tool::{Tool, ToolContext};
use thinkers::{Error, Result};

/// How `web_fetch` behaves. The defaults suit a model reading pages on the public web.
#[derive(Debug, Clone)]
pub struct WebFetchConfig {
    /// The most body bytes read; the rest is dropped and the result marked truncated.
    /// Default 2 MiB.
    pub max_bytes: usize,
    /// A bound on one whole call: redirects, reading and rendering included. Default 30 s.
    pub timeout: Duration,
    /// The most redirects followed. Default 5.
    pub max_redirects: u32,
    /// Which addresses may be connected to. Default [`AddressPolicy::strict`].
    pub policy: AddressPolicy,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        Self {
            max_bytes: 2 * 1024 * 1024,
            timeout: Duration::from_secs(30),
            max_redirects: 5,
            policy: AddressPolicy::strict(),
        }
    }
}

/// The input of `web_fetch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WebFetchInput {
    /// The http or https URL of the page to read.
    pub url: String,
}

/// A fetched page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebPage {
    /// The URL the content came from, after redirects.
    pub url: String,
    /// The HTTP status of the final response.
    pub status: u16,
    /// The content type the server declared, if any.
    pub content_type: Option<String>,
    /// The page title, for HTML pages that have one.
    pub title: Option<String>,
    /// The readable text: HTML rendered as plain text, other text as served.
    pub text: String,
    /// Whether `text` holds only the start of the page: the body was longer than the size cap and
    /// only its start was read, or its markup would have grown a tree out of proportion to its
    /// size and only its start was rendered.
    pub truncated: bool,
}

/// The `web_fetch` tool. Cheap to share; holds its own HTTP client (redirects off, no proxy, the
/// guarded resolver), which is why it does not use [`super::shared_client`].
#[derive(Debug, Clone)]
pub struct WebFetch {
    client: reqwest::Client,
    config: Arc<WebFetchConfig>,
}

impl WebFetch {
    /// A `web_fetch` tool with this configuration.
    pub fn new(config: WebFetchConfig) -> Result<Self> {
        let policy = Arc::new(config.policy.clone());
        let client = reqwest::Client::builder()
            .user_agent(http::USER_AGENT)
            .redirect(Policy::none())
            // A proxy would resolve and connect on our behalf, out of the guard's sight.
            .no_proxy()
            .dns_resolver(Arc::new(guard::GuardedResolver::new(policy)))
            .connect_timeout(config.timeout)
            .build()
            .map_err(|e| {
                Error::system("building the web_fetch HTTP client", e.to_string()).with_source(e)
            })?;
        Ok(Self {
            client,
            config: Arc::new(config),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &WebFetchConfig {
        &self.config
    }

    async fn fetch(&self, input: &WebFetchInput, deadline: Instant) -> Result<WebPage> {
        let mut url = parse_url(&input.url, &input.url)?;
        let mut redirects = 0;
        loop {
            let host = url.host_str().unwrap_or_default().to_owned();
            let step = ServiceStep {
                service: &host,
                step: "fetch",
                parameter: "url",
                value: &input.url,
            };
            let hop = (redirects > 0).then_some(&url);
            check_literal(&self.config.policy, &url, hop, &input.url)?;
            let resp = match self.client.get(url.clone()).send().await {
                Ok(r) => r,
                Err(e) => {
                    return Err(match guard::refusal_in(&e) {
                        Some(r) => refused(&input.url, hop, r),
                        None => step.classify(http::HttpFailure(e)),
                    });
                }
            };
            if resp.status().is_redirection()
                && let Some(location) = resp.headers().get(LOCATION)
            {
                redirects += 1;
                if redirects > self.config.max_redirects {
                    return Err(Error::invalid_input(
                        "url",
                        Some(input.url.clone()),
                        format!(
                            "the page redirects more than {} times",
                            self.config.max_redirects
                        ),
                    ));
                }
                let location = location.to_str().unwrap_or_default();
                let next = url.join(location).map_err(|e| {
                    Error::invalid_input(
                        "url",
                        Some(input.url.clone()),
                        format!("the page redirects to an invalid URL {location:?}: {e}"),
                    )
                })?;
                url = parse_url(next.as_str(), &input.url)?;
                continue;
            }
            let budget = budget_for(&host);
            let resp = http::check_status(&step, Some(&budget), resp).await?;
            return self.read_page(&step, url, resp, &input.url, deadline).await;
        }
    }

    async fn read_page(
        &self,
        step: &ServiceStep<'_>,
        url: Url,
        mut resp: reqwest::Response,
        value: &str,
        deadline: Instant,
    ) -> Result<WebPage> {
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let declared = content_type.as_deref().map(Kind::of);
        if let Some(Kind::Other) = declared {
            return Err(Error::invalid_input(
                "url",
                Some(value.to_owned()),
                format!(
                    "the page is {}, which cannot be read as text",
                    content_type.as_deref().unwrap_or_default()
                ),
            ));
        }
        let (body, truncated) = http::read_capped(step, &mut resp, self.config.max_bytes).await?;
        let body = String::from_utf8_lossy(&body);
        let kind = declared.unwrap_or_else(|| Kind::sniff(&body));
        let (title, text, cut) = match kind {
            Kind::Html => {
                self.render(step, body.into_owned(), &url, value, deadline)
                    .await?
            }
            Kind::Text | Kind::Other => (None, body.into_owned(), false),
        };
        Ok(WebPage {
            url: url.to_string(),
            status,
            content_type,
            title,
            text,
            truncated: truncated || cut,
        })
    }

    /// The title, the text and whether the text was cut, rendered on a blocking thread so the
    /// CPU-bound parse never holds an async worker. Past `deadline` the answer is the timeout
    /// error; the blocking thread stops soon after (see [`bounded`]).
    async fn render(
        &self,
        step: &ServiceStep<'_>,
        body: String,
        url: &Url,
        value: &str,
        deadline: Instant,
    ) -> Result<(Option<String>, String, bool)> {
        let base = url.clone();
        let rendering = tokio::task::spawn_blocking(move || {
            let rendered = html::to_text(&body, &base, deadline)?;
            Ok::<_, html::RenderError>((html::title(&body), rendered))
        });
        match rendering.await {
            Ok(Ok((title, rendered))) => Ok((title, rendered.text, rendered.cut)),
            Ok(Err(html::RenderError::Deadline(_))) => Err(timed_out(value, self.config.timeout)),
            Ok(Err(e @ html::RenderError::Html(_))) => {
                Err(Error::external(step.service, "rendering HTML", e.to_string()).with_source(e))
            }
            // A panic in the renderer is this page's failure, caught on its thread.
            Err(e) => Err(Error::external(
                step.service,
                "rendering HTML",
                format!("the HTML renderer failed on this page: {e}"),
            )),
        }
    }
}

/// The answer when a call found no complete answer within `limit`: naming the URL the model
/// sent (`value`) and the limit, on the `fetch` step of its host.
fn timed_out(value: &str, limit: Duration) -> Error {
    let host = Url::parse(value.trim())
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    Error::external(
        host,
        "fetch",
        format!("no complete answer from {value} within {limit:?}"),
    )
}

/// The admission budget of one site: throttling by a site pauses further calls to it.
fn budget_for(host: &str) -> String {
    format!("web:{host}")
}

/// Parse a URL and refuse anything but http(s). `value` is what the model sent.
fn parse_url(raw: &str, value: &str) -> Result<Url> {
    let url = Url::parse(raw.trim()).map_err(|e| {
        Error::invalid_input(
            "url",
            Some(value.to_owned()),
            format!("not a valid URL: {e}"),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Error::invalid_input(
            "url",
            Some(value.to_owned()),
            format!(
                "only http and https URLs can be fetched, not {}:",
                url.scheme()
            ),
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(Error::invalid_input(
            "url",
            Some(value.to_owned()),
            "the URL has no host",
        ));
    }
    Ok(url)
}

/// Check an IP-literal host before connecting (names are checked by the resolver). `hop` is the
/// URL when it was reached through a redirect.
fn check_literal(policy: &AddressPolicy, url: &Url, hop: Option<&Url>, value: &str) -> Result<()> {
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => std::net::IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => std::net::IpAddr::V6(v6),
        Some(url::Host::Domain(_)) | None => return Ok(()),
    };
    policy.check(ip).map_err(|r| refused(value, hop, &r))
}

/// The refusal as the model reads it: on its `url`, saying which redirect led there if one did.
fn refused(value: &str, hop: Option<&Url>, r: &Refused) -> Error {
    let hop = hop
        .map(|u| format!(" (reached through a redirect to {u})"))
        .unwrap_or_default();
    Error::invalid_input(
        "url",
        Some(value.to_owned()),
        format!("{r}{hop}; only public addresses can be fetched"),
    )
    .with_source(r.clone())
}

/// What a body is, for rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Other,
}

impl Kind {
    fn of(content_type: &str) -> Self {
        let mime = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        match mime.as_str() {
            "text/html" | "application/xhtml+xml" => Self::Html,
            m if m.starts_with("text/")
                || m.ends_with("+json")
                || m.ends_with("+xml")
                || matches!(
                    m,
                    "application/json" | "application/xml" | "application/javascript"
                ) =>
            {
                Self::Text
            }
            _ => Self::Other,
        }
    }

    /// A body that declared no type: HTML if it looks like markup, text otherwise.
    fn sniff(body: &str) -> Self {
        let head: String = body.trim_start().chars().take(16).collect();
        let head = head.to_ascii_lowercase();
        if head.starts_with("<!doctype html") || head.starts_with("<html") {
            Self::Html
        } else {
            Self::Text
        }
    }
}

impl Tool for WebFetch {
    const NAME: &'static str = "web_fetch";
    type Input = WebFetchInput;
    type Output = WebPage;

    fn description(&self) -> Cow<'static, str> {
        "Fetch a web page by its http or https URL and return its readable text, its title, the \
         final URL after redirects and its content type. Addresses on private or local networks \
         are refused."
            .into()
    }

    fn read_only(&self) -> bool {
        true
    }

    fn requirements(&self, input: &WebFetchInput, req: &mut Requirements) -> Result<()> {
        // A URL that does not parse is refused by `call`, with the reason.
        if let Ok(url) = Url::parse(input.url.trim())
            && let Some(host) = url.host_str()
        {
            req.resource(budget_for(host), Some(Limits::default()));
        }
        Ok(())
    }

    async fn call(&self, input: &WebFetchInput, _cx: &ToolContext<'_>) -> Result<WebPage> {
        let limit = self.config.timeout;
        // A timeout too large for the clock is a deadline a year away.
        let deadline = Instant::now()
            .checked_add(limit)
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
        match tokio::time::timeout_at(deadline.into(), self.fetch(input, deadline)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(timed_out(&input.url, limit)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_hosts() {
        assert!(parse_url("https://example.com/a", "v").is_ok());
        for bad in [
            "ftp://example.com/",
            "file:///etc/passwd",
            "not a url",
            "http://",
        ] {
            let err = parse_url(bad, bad).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidInput { parameter, .. } if parameter == "url"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn content_kinds() {
        assert_eq!(Kind::of("text/html; charset=utf-8"), Kind::Html);
        assert_eq!(Kind::of("application/ld+json"), Kind::Text);
        assert_eq!(Kind::of("text/plain"), Kind::Text);
        assert_eq!(Kind::of("image/png"), Kind::Other);
        assert_eq!(Kind::sniff("  <!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(Kind::sniff("plain"), Kind::Text);
    }

    #[test]
    fn literal_hosts_are_checked_in_every_notation() {
        let p = AddressPolicy::strict();
        // The URL parser normalises decimal and hex IPv4 notations to the address.
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://[::127.0.0.1]/",
            "http://[::ffff:0:127.0.0.1]/",
            "http://[64:ff9b:1::7f00:1]/",
            "http://[2002:7f00:1::]/",
            "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            "http://[100::1]/",
        ] {
            let u = parse_url(url, url).unwrap();
            let err = check_literal(&p, &u, None, url).unwrap_err();
            assert!(!err.to_string().contains("redirect"), "{err}");
        }
        for public in [
            "http://example.com/",
            "http://8.8.8.8/",
            "http://[2001:4860:4860::8888]/",
            "http://[64:ff9b::808:808]/",
        ] {
            let u = parse_url(public, public).unwrap();
            assert!(check_literal(&p, &u, None, public).is_ok(), "{public}");
        }
    }
}
