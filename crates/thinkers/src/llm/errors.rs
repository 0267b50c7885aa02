//! Provider failures mapped onto the error hierarchy, in one place.
//!
//! | what the provider said | what the caller gets |
//! |---|---|
//! | 429 (not quota, not "request too large"), Bedrock `ThrottlingException` | [`RetrySignal::Throttled`] with the provider's wait, naming provider, entry, status, URL and message |
//! | Bedrock `ServiceQuotaExceededException` | [`Error::ExternalService`] at step `quota` (never retried) |
//! | Bedrock `ModelNotReadyException` (429) | [`RetrySignal::Transient`] |
//! | 429 `insufficient_quota` | [`Error::ExternalService`] at step `quota` (never retried) |
//! | 429 "Request too large" | [`Error::ExternalService`] at step `request size` (never retried) |
//! | 400, 413, 422 | [`Error::InvalidInput`] naming the provider's `param`, else `request` |
//! | 404 | [`Error::ExternalService`] at step `configuration`: the model or the endpoint is not there |
//! | 401, 403 | [`Error::ExternalService`] at step `authentication` |
//! | 402 | [`Error::ExternalService`] at step `billing` |
//! | 408, 409, every 5xx (502, 503, 504 and Anthropic's 529 included), `overloaded_error` | [`RetrySignal::Transient`] with the provider's wait |
//! | a request carrying a `response_format` an OpenAI-compatible server refuses: 400, 415, 422, 500 or 501 naming `response_format` (or `json_schema`, `json_object`) and no other parameter (llama-cpp-python answers `json_schema` with a 500 validation error) | [`Error::ExternalService`] at step `structured output`, naming the form and the catalog's `structured_output` (never retried as an outage; `llm::negotiate` may ask in the next form) |
//! | while `llm::negotiate` finds a provider's `stream_tools`: a streamed answer that may call a tool ending before any content | [`Error::ExternalService`] at step `tool-call stream` (`llm::negotiate` asks for it whole) |
//! | a redirect (never followed: a key is not sent on to another address) | [`Error::ExternalService`] at step `redirect` |
//! | any other status | [`Error::ExternalService`] at step `request` |
//! | an error event before any content of a stream | as its type says (rate limit → throttled, overloaded or server error → transient) |
//! | an unreadable event before any content of a stream | [`RetrySignal::Transient`] |
//! | an answer with no content and no stop reason | [`RetrySignal::UnreadableAnswer`] (asked again at most `max_unreadable_answers` times) |
//! | a refused or broken connection, or the attempt's timeout, before any content | [`RetrySignal::Transient`] |
//! | TLS refused: the server's certificate is not trusted | [`Error::ExternalService`] at step `tls` (never retried) |
//! | an error event, an unreadable event, a broken connection or a stall after content was delivered | [`Error::ExternalService`] at step `stream`: a streamed request is never replayed |
//!
//! **One classification of outages.** A server that is down or overloaded (502, 503, 504, 529,
//! `overloaded_error`, `UNAVAILABLE`, `ServiceUnavailableException`) is a transient fault in every
//! dialect: retried at most `max_transient_retries` times, after the server's wait when it named
//! one (`Retry-After`), and the final error names provider, entry, status and URL. Anthropic
//! documents its 529 `overloaded_error` as an overload across all customers, not a limit of the
//! account, to be retried a few times with backoff: so it does not pause the entry's budget as a
//! throttle (429) does.
//!
//! **Bodies on one line.** What a provider said (a JSON error's message, or a whole body that is
//! not JSON: an HTML page of a proxy, a stack trace) reaches an error as one line of at most
//! [`MAX_MESSAGE_CHARS`] characters: an HTML page by its `<title>` (else its text without tags),
//! anything else by its first non-empty line, cut with `…`.
//!
//! Every error the client returns names where it happened ([`Origin`]: the catalog provider key,
//! the entry and the endpoint) and has passed `llm::redact::Redactor::error`, which removes the
//! request's secrets from every text the error carries, its source chain included.

use std::time::Duration;

use serde_json::Value;

use crate::llm::encoded::EncodedRequest;
use crate::llm::negotiate::{ANSWER_FORM_STEP, TOOL_STREAM_STEP};
use crate::llm::target::{Dialect, StructuredOutput};
use crate::{Error, RetrySignal};

/// What a provider said about a failure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProviderError {
    /// `error.type` (OpenAI `type`, Anthropic `error.type`).
    pub(crate) kind: Option<String>,
    /// `error.code` (OpenAI).
    pub(crate) code: Option<String>,
    /// The human-readable message.
    pub(crate) message: String,
    /// The parameter at fault (OpenAI `param`).
    pub(crate) param: Option<String>,
}

/// The longest provider message an error carries, in characters (an ellipsis marks a cut).
pub(crate) const MAX_MESSAGE_CHARS: usize = 200;

/// A provider's text as one line of at most [`MAX_MESSAGE_CHARS`] characters: an HTML page by
/// its `<title>` (else its text with the tags stripped), anything else by its first non-empty
/// line; whitespace runs become one space.
pub(crate) fn one_line(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    let html = lower.contains("<html") || lower.contains("<!doctype") || lower.contains("<title");
    let text = if html {
        match html_title(s, &lower) {
            Some(title) => title,
            None => strip_tags(s),
        }
    } else {
        s.to_owned()
    };
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The text of an HTML page's `<title>`, when it has a non-empty one. `lower` is `page` in ASCII
/// lower case (same byte offsets).
fn html_title(page: &str, lower: &str) -> Option<String> {
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = strip_tags(page.get(start..end)?);
    let title = title.trim();
    (!title.is_empty()).then(|| title.to_owned())
}

/// `page` without its tags, the text of `<script>`/`<style>` elements, or its entities
/// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&#39;`, `&nbsp;` (decoded); each tag becomes a line break
/// so that block elements keep their lines.
fn strip_tags(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut rest = page;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        let after = &rest[lt..];
        let lower = after.get(..8).unwrap_or(after).to_ascii_lowercase();
        let skip_to = if lower.starts_with("<script") {
            Some("</script")
        } else if lower.starts_with("<style") {
            Some("</style")
        } else {
            None
        };
        let tag_end = match skip_to {
            Some(close) => after
                .to_ascii_lowercase()
                .find(close)
                .and_then(|c| after[c..].find('>').map(|g| c + g + 1)),
            None => after.find('>').map(|g| g + 1),
        };
        match tag_end {
            Some(end) => {
                out.push('\n');
                rest = &after[end..];
            }
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

impl ProviderError {
    /// Read an error object `{"type", "message", "param", "code"}` (a `google.rpc` error's
    /// `status`, such as `RESOURCE_EXHAUSTED`, stands in for a missing `type`).
    pub(crate) fn from_error_object(e: &Value) -> Self {
        let s = |k: &str| match e.get(k) {
            Some(Value::String(v)) => Some(v.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        };
        Self {
            kind: s("type").or_else(|| s("status")),
            code: s("code"),
            message: one_line(&s("message").unwrap_or_else(|| e.to_string())),
            // A `google.rpc` error names the field in a `BadRequest` detail.
            param: s("param").or_else(|| crate::llm::gemini::violated_field(e)),
        }
    }

    /// Read an error body: OpenAI `{"error": {…}}`, Anthropic `{"type":"error","error":{…}}`,
    /// or anything else (kept as text).
    pub(crate) fn from_body(body: &[u8]) -> Self {
        match serde_json::from_slice::<Value>(body) {
            Ok(v) => match v.get("error") {
                Some(e @ Value::Object(_)) => Self::from_error_object(e),
                Some(Value::String(m)) => Self::from_message(m),
                _ => Self::from_message(&v.to_string()),
            },
            Err(_) => Self::from_message(&String::from_utf8_lossy(body)),
        }
    }

    /// A bare message (a body or an error value that is not an error object), on one line.
    pub(crate) fn from_message(message: &str) -> Self {
        Self {
            message: one_line(message),
            ..Self::default()
        }
    }

    fn is(&self, what: &str) -> bool {
        self.kind.as_deref() == Some(what) || self.code.as_deref() == Some(what)
    }

    /// `type: message`, or the message alone.
    pub(crate) fn describe(&self) -> String {
        match &self.kind {
            Some(k) => format!("{k}: {}", self.message),
            None => self.message.clone(),
        }
    }
}

/// Whether a failure status refuses the form of the request's `response_format` rather than
/// its content, and if so what the provider said of it on one line: a 4xx a request's content
/// earns (400, 415, 422) or a server error that is no outage (500, 501), whose body names the
/// field (`response_format`, or a form of it) and names no other parameter as the one at fault.
/// The body is read whole: llama-cpp-python's 500 names the field on the second line of its
/// message (`1 validation error:` first). A status alone is not enough: a 400 for an overlong
/// prompt must not teach a provider to drop its structured answers.
pub(crate) fn refuses_form(status: u16, err: &ProviderError, body: &[u8]) -> Option<String> {
    fn names_format(text: &str) -> bool {
        let text = text.to_ascii_lowercase();
        ["response_format", "json_schema", "json_object"]
            .iter()
            .any(|name| text.contains(name))
    }
    if !matches!(status, 400 | 415 | 422 | 500 | 501) {
        return None;
    }
    if let Some(param) = &err.param {
        return names_format(param).then(|| err.describe());
    }
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(v) => match v.pointer("/error/message").or_else(|| v.get("message")) {
            Some(Value::String(m)) => m.clone(),
            _ => v.to_string(),
        },
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    };
    let line = text.lines().find(|l| names_format(l))?;
    Some(match &err.kind {
        Some(kind) => format!("{kind}: {}", one_line(line)),
        None => one_line(line),
    })
}

/// Where a request went: what every error of the client names.
#[derive(Debug, Clone)]
pub(crate) struct Origin {
    /// The catalog provider key, or the dialect's name when the caller gave none.
    pub(crate) service: String,
    pub(crate) dialect: Dialect,
    /// The catalog entry, when the caller named it.
    pub(crate) entry: Option<String>,
    /// `POST <url>`, without credentials or query.
    pub(crate) endpoint: String,
    /// The request's URL path.
    pub(crate) path: String,
}

impl Origin {
    pub(crate) fn new(enc: &EncodedRequest, provider: Option<&str>, entry: Option<&str>) -> Self {
        let dialect = enc.plan.dialect;
        let (shown, path) = match url::Url::parse(&enc.url) {
            Ok(mut u) => {
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.set_query(None);
                u.set_fragment(None);
                let path = u.path().to_owned();
                (u.to_string(), path)
            }
            Err(_) => (enc.url.clone(), enc.url.clone()),
        };
        Self {
            service: provider.unwrap_or(dialect.as_str()).to_owned(),
            dialect,
            entry: entry.map(str::to_owned),
            endpoint: format!("POST {shown}"),
            path,
        }
    }

    /// ` (entry `e`, POST url)`: appended to every detail.
    pub(crate) fn whereabouts(&self) -> String {
        match &self.entry {
            Some(e) => format!(" (entry `{e}`, {})", self.endpoint),
            None => format!(" ({})", self.endpoint),
        }
    }

    /// An error of a decoder or of a lower layer, named after this origin: a service named by
    /// its dialect becomes the provider, and the detail says where.
    pub(crate) fn name(&self, mut e: Error) -> Error {
        let dialect = self.dialect.as_str();
        let rename = |service: &mut String, detail: &mut String| {
            if service == dialect {
                service.clone_from(&self.service);
            }
            if !detail.contains(&self.endpoint) {
                detail.push_str(&self.whereabouts());
            }
        };
        match &mut e {
            Error::ExternalService {
                service, detail, ..
            }
            | Error::Retry(
                RetrySignal::Transient {
                    service, detail, ..
                }
                | RetrySignal::UnreadableAnswer { service, detail },
            ) => rename(service, detail),
            Error::Retry(RetrySignal::Throttled { detail, .. }) => {
                let said = detail.take();
                *detail = Some(match said {
                    Some(d) if d.contains(&self.endpoint) => d,
                    Some(d) => self.throttle_detail(&d),
                    None => self.throttle_detail("it gave no reason"),
                });
            }
            _ => {}
        }
        e
    }

    /// What a throttle signal says: the provider, what it said (`what`), the entry and the URL.
    pub(crate) fn throttle_detail(&self, what: &str) -> String {
        format!(
            "provider `{}` throttled the request: {what}{}",
            self.service,
            self.whereabouts()
        )
    }

    /// Map an HTTP failure status. `retry_after` is the provider's wait, `location` a redirect's
    /// target (both read by the client from the headers; the location already redacted).
    pub(crate) fn refusal(
        &self,
        status: u16,
        err: &ProviderError,
        retry_after: Option<Duration>,
        location: Option<&str>,
        model: Option<&str>,
    ) -> Error {
        let service = self.service.clone();
        let at = self.whereabouts();
        let detail = format!("HTTP {status}: {}{at}", err.describe());
        let throttled = || {
            let what = format!("HTTP {status}: {}", err.describe());
            Error::throttled_because(None, retry_after, self.throttle_detail(&what))
        };
        match status {
            _ if err.is("ServiceQuotaExceededException") => {
                Error::external(service, "quota", detail)
            }
            429 if err.is("ModelNotReadyException") => {
                Error::transient(service, detail, retry_after)
            }
            429 if err.is("insufficient_quota") => Error::external(service, "quota", detail),
            429 if err
                .message
                .to_ascii_lowercase()
                .contains("request too large") =>
            {
                Error::external(service, "request size", detail)
            }
            429 => throttled(),
            _ if err.is("ThrottlingException") => throttled(),
            404 => Error::external(service, "configuration", self.not_found(err, model)),
            400 | 413 | 422 => Error::InvalidInput {
                parameter: err.param.clone().unwrap_or_else(|| "request".to_owned()),
                value: None,
                reason: format!(
                    "{service} rejected the request (HTTP {status}): {}{at}",
                    err.message
                ),
                source: None,
            },
            401 | 403 => Error::external(service, "authentication", detail),
            402 => Error::external(service, "billing", detail),
            // An outage or an overload, whatever the dialect: transient, never a throttle.
            408 | 409 | 500..=599 => Error::transient(service, detail, retry_after),
            _ if err.is("overloaded_error") => Error::transient(service, detail, retry_after),
            300..=399 => Error::external(
                service,
                "redirect",
                format!(
                    "HTTP {status} to {}: redirects are not followed (a key is never sent on to \
                     another address); point the provider's base_url at the final address{at}",
                    location.unwrap_or("an address it did not name")
                ),
            ),
            _ => Error::external(service, "request", detail),
        }
    }

    /// What a 404 means: an Anthropic base URL that already holds the version, a model the
    /// provider does not serve, or an endpoint that is not there.
    fn not_found(&self, err: &ProviderError, model: Option<&str>) -> String {
        let at = self.whereabouts();
        let provider = &self.service;
        if self.dialect == Dialect::Anthropic && self.path.contains("/v1/v1/") {
            return format!(
                "the base URL of provider `{provider}` already ends in `/v1`; the anthropic \
                 dialect adds `/v1/messages` itself, so set base_url to the host root (HTTP 404: \
                 {}){at}",
                err.message
            );
        }
        let about_model = err.is("model_not_found")
            || err.is("not_found_error")
            || err.message.to_ascii_lowercase().contains("model");
        match model {
            Some(m) if about_model => format!(
                "model `{m}` not found at provider `{provider}`: check the entry's model name \
                 (HTTP 404: {}){at}",
                err.message
            ),
            _ => format!(
                "the endpoint {} was not found at provider `{provider}`: check its base_url \
                 (HTTP 404: {}){at}",
                self.endpoint, err.message
            ),
        }
    }

    /// A `response_format` in `form` the server refused ([`refuses_form`]): final, naming the
    /// form, the catalog field that chooses it, the entry and the URL.
    pub(crate) fn form_refused(&self, status: u16, said: &str, form: StructuredOutput) -> Error {
        Error::external(
            self.service.clone(),
            ANSWER_FORM_STEP,
            format!(
                "provider `{}` refused a structured answer asked as `{form}` in \
                 `response_format` (HTTP {status}: {}); the provider's `structured_output` in \
                 the catalog chooses the form (`json_schema`, `json_object` or `prompt`){}",
                self.service,
                said,
                self.whereabouts()
            ),
        )
    }

    /// A streamed answer that may call a tool ended before any content, while the provider's
    /// `stream_tools` is being found: the server may not stream such answers.
    pub(crate) fn tool_stream_empty(&self) -> Error {
        Error::external(
            self.service.clone(),
            TOOL_STREAM_STEP,
            format!(
                "provider `{}` ended a streamed answer that could call a tool before any \
                 content; the provider's `stream_tools` in the catalog says whether such answers \
                 are streamed{}",
                self.service,
                self.whereabouts()
            ),
        )
    }

    /// A transport failure before any content (connect, reset, the attempt's timeout): transient.
    pub(crate) fn transport(&self, what: &str) -> Error {
        Error::transient(
            self.service.clone(),
            format!("{what}{}", self.whereabouts()),
            None,
        )
    }

    /// A stream that failed or stalled after content was delivered: final.
    pub(crate) fn broken_stream(&self, what: &str) -> Error {
        Error::external(
            self.service.clone(),
            "stream",
            format!(
                "the stream failed after the answer had started ({what}); a streamed request is \
                 never replayed{}",
                self.whereabouts()
            ),
        )
    }
}

/// Map an error reported inside a stream (or inside a 200 body). Before any content it is
/// classified like an HTTP failure; after content, it is final. The service is the dialect's
/// name until [`Origin::name`] names the provider.
pub(crate) fn in_stream(dialect: Dialect, delivered: bool, err: &ProviderError) -> Error {
    let service = dialect.as_str();
    if delivered {
        return Error::external(
            service,
            "stream",
            format!(
                "the stream failed after the answer had started: {}",
                err.describe()
            ),
        );
    }
    if err.is("rate_limit_error") || err.is("rate_limit_exceeded") || err.is("ThrottlingException")
    {
        return Error::throttled_because(None, None, err.describe());
    }
    if err.is("overloaded_error")
        || err.is("api_error")
        || err.is("timeout_error")
        || err.is("server_error")
        || err.is("InternalServerException")
        || err.is("ServiceUnavailableException")
        || err.is("ModelStreamErrorException")
    {
        return Error::transient(service, err.describe(), None);
    }
    Error::external(service, "stream", err.describe())
}

/// An event of a stream that could not be read (not JSON, or not the shape the protocol
/// defines). Before any content it is transient, like a stream cut off before content (the
/// request may be sent again); after, final: delivered content is never replayed.
pub(crate) fn malformed_event(dialect: Dialect, delivered: bool, what: &str) -> Error {
    if delivered {
        Error::external(
            dialect.as_str(),
            "stream",
            format!(
                "the stream failed after the answer had started (an event was unreadable: \
                 {what}); a streamed request is never replayed"
            ),
        )
    } else {
        Error::transient(
            dialect.as_str(),
            format!("an event before any answer was unreadable: {what}"),
            None,
        )
    }
}

/// An answer that holds nothing, no content and no stop reason (`what` says which fields were
/// missing): the provider failed to produce one. An unreadable answer: asked again at most
/// `max_unreadable_answers` times (each time it is paid again), then an
/// [`Error::ExternalService`] at step `response` saying the answer was empty.
pub(crate) fn empty_answer(dialect: Dialect, what: &str) -> Error {
    Error::Retry(RetrySignal::UnreadableAnswer {
        service: dialect.as_str().to_owned(),
        detail: format!("the answer was empty: {what}"),
    })
}

/// Map a transport failure seen by a decoder. Before any content it is transient; after, final.
pub(crate) fn transport(dialect: Dialect, delivered: bool, what: &str) -> Error {
    if delivered {
        Error::external(
            dialect.as_str(),
            "stream",
            format!("the connection failed after the answer had started: {what}"),
        )
    } else {
        Error::transient(dialect.as_str(), what, None)
    }
}

#[cfg(test)]
#[path = "errors_tests.rs"]
mod tests;
