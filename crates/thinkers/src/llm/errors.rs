//! Provider failures mapped onto the error hierarchy, in one place.
//!
//! | what the provider said | what the caller gets |
//! |---|---|
//! | 429 (not quota, not "request too large"), 529, `overloaded_error` | [`RetrySignal::Throttled`] with the provider's wait |
//! | 429 `insufficient_quota` | [`Error::ExternalService`] at step `quota` (never retried) |
//! | 429 "Request too large" | [`Error::ExternalService`] at step `request size` (never retried) |
//! | 400, 404, 413, 422 | [`Error::InvalidInput`] naming the provider's `param`, else `request` |
//! | 401, 403 | [`Error::ExternalService`] at step `authentication` |
//! | 402 | [`Error::ExternalService`] at step `billing` |
//! | 408, 409, other 5xx | [`RetrySignal::Transient`] |
//! | an error event before any other event of a stream | as its type says (overloaded → throttled, server error → transient) |
//! | a refused or broken connection, or the request timeout, before any stream event | [`RetrySignal::Transient`] |
//! | TLS refused: the server's certificate is not trusted | [`Error::ExternalService`] at step `tls` (never retried) |
//! | any other status, a redirect included (redirects are not followed) | [`Error::ExternalService`] at step `request` |
//! | an error event, or a broken connection, after a stream event | [`Error::ExternalService`] at step `stream`: a streamed request is never replayed |
//!
//! A provider's message is kept, with the request's API key scrubbed out of it should the
//! provider echo it.

use std::time::Duration;

use serde_json::Value;

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
    /// Read an error object `{"type", "message", "param", "code"}`.
    pub(crate) fn from_error_object(e: &Value) -> Self {
        let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
        Self {
            kind: s("type"),
            code: s("code"),
            message: truncated(&s("message").unwrap_or_else(|| e.to_string())),
            param: s("param"),
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

    /// Remove a secret the provider may have echoed.
    pub(crate) fn scrub(&mut self, secret: &str) {
        if secret.len() >= 4 && self.message.contains(secret) {
            self.message = self.message.replace(secret, "<redacted>");
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

/// Map an HTTP failure status onto the hierarchy. `retry_after` is the provider's wait, read from
/// its headers by the client.
pub(crate) fn from_status(
    dialect: Dialect,
    status: u16,
    err: &ProviderError,
    retry_after: Option<Duration>,
) -> Error {
    let service = dialect.as_str();
    let detail = format!("HTTP {status}: {}", err.describe());
    if err.is("overloaded_error") || status == 529 {
        return Error::throttled(None, retry_after);
    }
    match status {
        429 if err.is("insufficient_quota") => Error::external(service, "quota", detail),
        429 if err
            .message
            .to_ascii_lowercase()
            .contains("request too large") =>
        {
            Error::external(service, "request size", detail)
        }
        429 => Error::throttled(None, retry_after),
        400 | 404 | 413 | 422 => Error::InvalidInput {
            parameter: err.param.clone().unwrap_or_else(|| "request".to_owned()),
            value: None,
            reason: format!(
                "{service} rejected the request (HTTP {status}): {}",
                err.message
            ),
            source: None,
        },
        401 | 403 => Error::external(service, "authentication", detail),
        402 => Error::external(service, "billing", detail),
        408 | 409 | 500..=599 => Error::Retry(RetrySignal::Transient {
            service: service.to_owned(),
            detail,
        }),
        _ => Error::external(service, "request", detail),
    }
}

/// Map an error reported inside a stream. Before any other event it is classified like an HTTP
/// failure; after one, it is final.
pub(crate) fn in_stream(dialect: Dialect, seen_event: bool, err: &ProviderError) -> Error {
    let service = dialect.as_str();
    if seen_event {
        return Error::external(
            service,
            "stream",
            format!(
                "the stream failed after the answer had started: {}",
                err.describe()
            ),
        );
    }
    if err.is("overloaded_error") || err.is("rate_limit_error") || err.is("rate_limit_exceeded") {
        return Error::throttled(None, None);
    }
    if err.is("api_error") || err.is("timeout_error") || err.is("server_error") {
        return Error::Retry(RetrySignal::Transient {
            service: service.to_owned(),
            detail: err.describe(),
        });
    }
    Error::external(service, "stream", err.describe())
}

/// Map a transport failure (connect, timeout, reset). Before any stream event it is transient;
/// after one, final.
pub(crate) fn transport(dialect: Dialect, seen_event: bool, what: &str) -> Error {
    if seen_event {
        Error::external(
            dialect.as_str(),
            "stream",
            format!("the connection failed after the answer had started: {what}"),
        )
    } else {
        Error::Retry(RetrySignal::Transient {
            service: dialect.as_str().to_owned(),
            detail: what.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn err(body: &str) -> ProviderError {
        ProviderError::from_body(body.as_bytes())
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
        let e = from_status(Dialect::Anthropic, 404, &err("not json at all"), None);
        assert!(matches!(e, Error::InvalidInput { ref parameter, .. } if parameter == "request"));
    }

    #[test]
    fn echoed_keys_are_scrubbed() {
        let mut e = err(r#"{"error":{"message":"Incorrect API key provided: sk-CANARY-1."}}"#);
        e.scrub("sk-CANARY-1");
        let mapped = from_status(Dialect::OpenAi, 401, &e, None);
        assert!(!mapped.to_string().contains("CANARY"));
        assert!(mapped.to_string().contains("authentication"));
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
