//! Provider failures mapped onto the error hierarchy, in one place.
//!
//! | what the provider said | what the caller gets |
//! |---|---|
//! | 429 (not quota, not "request too large"), 529, `overloaded_error`, Bedrock `ThrottlingException` | [`RetrySignal::Throttled`] with the provider's wait |
//! | Bedrock `ServiceQuotaExceededException` | [`Error::ExternalService`] at step `quota` (never retried) |
//! | Bedrock `ModelNotReadyException` (429) | [`RetrySignal::Transient`] |
//! | 429 `insufficient_quota` | [`Error::ExternalService`] at step `quota` (never retried) |
//! | 429 "Request too large" | [`Error::ExternalService`] at step `request size` (never retried) |
//! | 400, 413, 422 | [`Error::InvalidInput`] naming the provider's `param`, else `request` |
//! | 404 | [`Error::ExternalService`] at step `configuration`: the model or the endpoint is not there |
//! | 401, 403 | [`Error::ExternalService`] at step `authentication` |
//! | 402 | [`Error::ExternalService`] at step `billing` |
//! | 408, 409, other 5xx | [`RetrySignal::Transient`] with the provider's wait |
//! | a redirect (never followed: a key is not sent on to another address) | [`Error::ExternalService`] at step `redirect` |
//! | any other status | [`Error::ExternalService`] at step `request` |
//! | an error event before any content of a stream | as its type says (overloaded → throttled, server error → transient) |
//! | a refused or broken connection, or the attempt's timeout, before any content | [`RetrySignal::Transient`] |
//! | TLS refused: the server's certificate is not trusted | [`Error::ExternalService`] at step `tls` (never retried) |
//! | an error event, a broken connection or a stall after content was delivered | [`Error::ExternalService`] at step `stream`: a streamed request is never replayed |
//!
//! Every error the client returns names where it happened ([`Origin`]: the catalog provider key,
//! the entry and the endpoint) and has passed `llm::redact::Redactor::error`, which removes the
//! request's secrets from every text the error carries, its source chain included.

use std::time::Duration;

use serde_json::Value;

use crate::llm::encoded::EncodedRequest;
use crate::llm::target::Dialect;
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

const MAX_MESSAGE: usize = 600;

fn truncated(s: &str) -> String {
    if s.len() <= MAX_MESSAGE {
        return s.to_owned();
    }
    let mut end = MAX_MESSAGE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
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
            message: truncated(&s("message").unwrap_or_else(|| e.to_string())),
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
                Some(Value::String(m)) => Self {
                    message: truncated(m),
                    ..Self::default()
                },
                _ => Self {
                    message: truncated(&v.to_string()),
                    ..Self::default()
                },
            },
            Err(_) => Self {
                message: truncated(String::from_utf8_lossy(body).trim()),
                ..Self::default()
            },
        }
    }

    fn is(&self, what: &str) -> bool {
        self.kind.as_deref() == Some(what) || self.code.as_deref() == Some(what)
    }

    fn describe(&self) -> String {
        match &self.kind {
            Some(k) => format!("{k}: {}", self.message),
            None => self.message.clone(),
        }
    }
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
            _ => {}
        }
        e
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
        if err.is("overloaded_error") || err.is("ThrottlingException") || status == 529 {
            return Error::throttled(None, retry_after);
        }
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
            429 => Error::throttled(None, retry_after),
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
            408 | 409 | 500..=599 => Error::transient(service, detail, retry_after),
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
    if err.is("overloaded_error")
        || err.is("rate_limit_error")
        || err.is("rate_limit_exceeded")
        || err.is("ThrottlingException")
    {
        return Error::throttled(None, None);
    }
    if err.is("api_error")
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
mod tests {
    use super::*;
    use crate::ErrorKind;
    use crate::llm::redact::{Redactor, chain};

    fn err(body: &str) -> ProviderError {
        ProviderError::from_body(body.as_bytes())
    }

    fn origin(dialect: Dialect) -> Origin {
        let path = if dialect == Dialect::Anthropic {
            "/v1/messages"
        } else {
            "/v1/chat/completions"
        };
        Origin {
            service: "prov".into(),
            dialect,
            entry: Some("ent".into()),
            endpoint: format!("POST http://h{path}"),
            path: path.into(),
        }
    }

    fn from_status(
        dialect: Dialect,
        status: u16,
        err: &ProviderError,
        retry_after: Option<Duration>,
    ) -> Error {
        origin(dialect).refusal(status, err, retry_after, None, Some("m"))
    }

    #[test]
    fn rate_limits_throttle_but_quota_and_size_do_not() {
        let rl = err(
            r#"{"error":{"message":"Rate limit reached","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#,
        );
        let e = from_status(Dialect::OpenAi, 429, &rl, Some(Duration::from_secs(3)));
        assert_eq!(
            e.retry_signal(),
            Some(&RetrySignal::Throttled {
                budget: None,
                retry_after: Some(Duration::from_secs(3))
            })
        );
        let quota = err(
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#,
        );
        let e = from_status(Dialect::OpenAi, 429, &quota, None);
        assert_eq!(e.kind(), ErrorKind::ExternalService);
        assert!(e.to_string().contains("quota"));
        let big = err(
            r#"{"error":{"message":"Request too large for gpt-4o in organization org-x on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}"#,
        );
        assert_eq!(
            from_status(Dialect::OpenAi, 429, &big, None).kind(),
            ErrorKind::ExternalService
        );
    }

    #[test]
    fn anthropic_overload_throttles_whatever_the_status() {
        let o = err(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}"#,
        );
        assert_eq!(o.kind.as_deref(), Some("overloaded_error"));
        for status in [529, 503] {
            assert!(matches!(
                from_status(Dialect::Anthropic, status, &o, None),
                Error::Retry(RetrySignal::Throttled { .. })
            ));
        }
    }

    #[test]
    fn bad_requests_name_the_parameter() {
        let e = from_status(
            Dialect::OpenAi,
            400,
            &err(
                r#"{"error":{"message":"Invalid value: 'sometimes'","type":"invalid_request_error","param":"tool_choice","code":null}}"#,
            ),
            None,
        );
        assert!(
            matches!(&e, Error::InvalidInput { parameter, reason, .. }
                if parameter == "tool_choice" && reason.contains("Invalid value")),
            "{e:?}"
        );
        let e = from_status(Dialect::Anthropic, 422, &err("not json at all"), None);
        assert!(matches!(e, Error::InvalidInput { ref parameter, .. } if parameter == "request"));
    }

    #[test]
    fn echoed_keys_are_redacted_from_every_text() {
        let e = err(r#"{"error":{"message":"Incorrect API key provided: sk-CANARY-1."}}"#);
        let redactor = Redactor {
            secrets: vec!["sk-CANARY-1".into()],
        };
        let mapped = redactor.error(from_status(Dialect::OpenAi, 401, &e, None));
        assert!(!mapped.to_string().contains("CANARY"), "{mapped}");
        assert!(mapped.to_string().contains("authentication"));
        let with_source = Error::external("p", "s", "d")
            .with_source(std::io::Error::other("inner sk-CANARY-1 text"));
        let clean = redactor.error(with_source);
        let shown = format!("{clean:?} {}", chain(&clean));
        assert!(!shown.contains("CANARY"), "{shown}");
        assert!(shown.contains("inner <redacted> text"), "{shown}");
    }

    #[test]
    fn not_found_names_the_model_the_provider_or_the_doubled_version() {
        let e = err(
            r#"{"error":{"message":"model 'm' not found","type":"invalid_request_error","code":"model_not_found"}}"#,
        );
        let shown = from_status(Dialect::OpenAi, 404, &e, None).to_string();
        assert!(
            shown.contains("model `m` not found at provider `prov`"),
            "{shown}"
        );
        assert!(shown.contains("entry `ent`"), "{shown}");
        let mut doubled = origin(Dialect::Anthropic);
        doubled.path = "/v1/v1/messages".into();
        let shown = doubled
            .refusal(404, &err("Not Found"), None, None, Some("m"))
            .to_string();
        assert!(shown.contains("already ends in `/v1`"), "{shown}");
        let shown = from_status(Dialect::OpenAi, 404, &err("404 page not found"), None).to_string();
        assert!(
            shown.contains("was not found at provider `prov`"),
            "{shown}"
        );
    }

    #[test]
    fn stream_errors_are_final_once_the_answer_started() {
        let o = ProviderError {
            kind: Some("overloaded_error".into()),
            ..ProviderError::default()
        };
        assert!(in_stream(Dialect::Anthropic, false, &o).is_retry_signal());
        assert_eq!(
            in_stream(Dialect::Anthropic, true, &o).kind(),
            ErrorKind::ExternalService
        );
        assert!(transport(Dialect::OpenAi, false, "reset").is_retry_signal());
        assert_eq!(
            transport(Dialect::OpenAi, true, "reset").kind(),
            ErrorKind::ExternalService
        );
    }
}
