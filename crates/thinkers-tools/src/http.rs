//! HTTP plumbing shared by the service tools: one client, and one way to turn a response into
//! the error hierarchy.
//!
//! Every helper here takes the [`ServiceStep`] the tool is on, so a failure names the service,
//! the step and (when the model can correct it) the parameter. A throttling answer (429, or 503
//! with `Retry-After`) becomes [`Error::throttled`] carrying the tool's admission budget, so the
//! dispatcher pauses the budget, waits and re-admits the call.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Response, StatusCode};

use thinkers::error::{FailureClass, ServiceFailure, ServiceStep, StatusFailure};
use thinkers::{Error, Result};

/// A transport or status failure of reqwest, classified for [`ServiceStep`]: a timeout, a refused
/// connection or a body cut short is I/O; a 4xx other than 401, 403, 408 and 429 is correctable;
/// anything else is the service's.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(crate) struct HttpFailure(pub(crate) reqwest::Error);

impl ServiceFailure for HttpFailure {
    fn class(&self) -> FailureClass {
        let e = &self.0;
        if e.is_timeout() || e.is_connect() || e.is_request() && e.status().is_none() {
            return FailureClass::Io;
        }
        match e.status() {
            Some(s) if s.as_u16() == 408 || s.as_u16() == 429 => FailureClass::Uncorrectable,
            Some(s) if s.is_client_error() && s.as_u16() != 401 && s.as_u16() != 403 => {
                FailureClass::Correctable
            }
            Some(_) => FailureClass::Uncorrectable,
            None if e.is_body() || e.is_decode() => FailureClass::Io,
            None => FailureClass::Uncorrectable,
        }
    }
}

/// The user agent the service tools send.
pub(crate) const USER_AGENT: &str = concat!("thinkers/", env!("CARGO_PKG_VERSION"));

/// How much of an error body is quoted in an error message.
const ERROR_EXCERPT: usize = 300;

/// The reqwest client the service tools share (connection pools, TLS configuration).
///
/// Built once per process. `web_fetch` does not use it: it needs redirects off, no proxy and its
/// own address-checking resolver, so it builds a client of its own.
pub fn shared_client() -> Result<reqwest::Client> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c.clone());
    }
    let client = reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| {
            Error::system("building the shared HTTP client", e.to_string()).with_source(e)
        })?;
    Ok(CLIENT.get_or_init(|| client).clone())
}

/// Pass a successful response through; turn any other into the hierarchy: a throttling answer
/// into a retry signal on `budget`, a client error into the step's classification (correctable
/// for most 4xx), anything else into an external-service failure.
pub(crate) async fn check_status(
    step: &ServiceStep<'_>,
    budget: Option<&str>,
    resp: Response,
) -> Result<Response> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let resp = throttle_check(step.service, step.step, budget, resp).await?;
    Err(step.classify(failure(resp).await))
}

/// A throttling answer (429, or 503 with `Retry-After`) as a retry signal on `budget` that names
/// the service, the step, the status, the URL (without its query, which may carry a key) and the
/// start of the service's message; any other response passes through.
pub(crate) async fn throttle_check(
    service: &str,
    step: &str,
    budget: Option<&str>,
    resp: Response,
) -> Result<Response> {
    let status = resp.status();
    let retry_after = retry_after(resp.headers());
    if !is_throttle(status, retry_after) {
        return Ok(resp);
    }
    let mut url = resp.url().clone();
    url.set_query(None);
    url.set_fragment(None);
    let _ = url.set_password(None);
    let _ = url.set_username("");
    let failure = failure(resp).await;
    let message = if failure.message.is_empty() {
        String::new()
    } else {
        format!(": {}", failure.message)
    };
    Err(Error::throttled_because(
        budget.map(str::to_owned),
        retry_after,
        format!("{service} {step}: HTTP {status} from {url}{message}"),
    ))
}

/// Whether a response with `status` (and the wait it asked for) is a throttle.
fn is_throttle(status: StatusCode, retry_after: Option<Duration>) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || (status == StatusCode::SERVICE_UNAVAILABLE && retry_after.is_some())
}

/// A non-success response as a [`StatusFailure`], quoting the start of its body.
pub(crate) async fn failure(mut resp: Response) -> StatusFailure {
    let status = resp.status().as_u16();
    // Only the start is quoted, so only the start is read; a failure to read leaves it shorter.
    let mut body = Vec::new();
    while body.len() < 16 * 1024 {
        match resp.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    StatusFailure {
        status,
        message: excerpt(&String::from_utf8_lossy(&body)),
    }
}

/// The start of an error body as one line: markup removed, whitespace collapsed, cut short.
pub(crate) fn excerpt(body: &str) -> String {
    let mut text = String::with_capacity(body.len().min(4 * ERROR_EXCERPT));
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' if in_tag => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
        if text.len() > 4 * ERROR_EXCERPT {
            break;
        }
    }
    let line = super::xml::collapse_whitespace(&text);
    if line.is_empty() {
        return "(no body)".to_owned();
    }
    match line.char_indices().nth(ERROR_EXCERPT) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The wait a `Retry-After` header asks for: delay-seconds or an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = at.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

/// Read a body up to `cap` bytes. Returns the bytes and whether the body was longer (the rest is
/// not read). A transport failure while reading is the step's I/O failure.
pub(crate) async fn read_capped(
    step: &ServiceStep<'_>,
    resp: &mut Response,
    cap: usize,
) -> Result<(Vec<u8>, bool)> {
    let mut body = Vec::new();
    while let Some(chunk) = step.wrap(resp.chunk().await.map_err(HttpFailure))? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// Read a whole body up to `cap` bytes as text; a longer body is a protocol failure of the step
/// (the services these tools call never answer with that much).
pub(crate) async fn read_text(
    step: &ServiceStep<'_>,
    mut resp: Response,
    cap: usize,
) -> Result<String> {
    let (body, truncated) = read_capped(step, &mut resp, cap).await?;
    if truncated {
        return Err(Error::external(
            step.service,
            step.step,
            format!("the response is larger than {cap} bytes"),
        ));
    }
    String::from_utf8(body).map_err(|e| {
        Error::external(step.service, step.step, "the response is not UTF-8 text").with_source(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn throttling_is_429_or_503_with_a_wait() {
        assert!(is_throttle(StatusCode::TOO_MANY_REQUESTS, None));
        assert!(!is_throttle(StatusCode::SERVICE_UNAVAILABLE, None));
        assert!(is_throttle(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(Duration::from_secs(2))
        ));
        assert!(!is_throttle(StatusCode::NOT_FOUND, Some(Duration::ZERO)));
    }

    #[test]
    fn excerpts_drop_markup_and_stay_short() {
        assert_eq!(
            excerpt("<fault><message>No results</message></fault>"),
            "No results"
        );
        assert_eq!(excerpt(""), "(no body)");
        let long = "word ".repeat(500);
        assert!(excerpt(&long).chars().count() <= ERROR_EXCERPT + 1);
    }
}
