//! Errors the sim serves, rendered in each provider's real shape.
//!
//! - OpenAI: `{"error": {"message", "type", "param", "code"}}`, with an `x-request-id` header.
//! - Anthropic: `{"type": "error", "error": {"type", "message"}, "request_id"}`, with a
//!   `request-id` header.
//!
//! - Gemini: a `google.rpc` error `{"error": {"code", "message", "status", "details"}}`; a 429 is
//!   `RESOURCE_EXHAUSTED` with a `QuotaFailure` and a `RetryInfo` detail (`retryDelay`) and no
//!   `Retry-After` header, as the real API answers. The `QuotaFailure` names the quota broken and
//!   its per-minute figure (`quotaId`, `quotaValue`), as Gemini's do
//!   (`GenerateRequestsPerMinutePerProjectPerModel`, `GenerateContentInputTokensPerModelPerMinute`).
//!   Gemini has no quota on input and output tokens together; the sim names its `tpm` limit
//!   `GenerateContentTokensPerModelPerMinute`, so a client can tell it from the input quota.
//! - Bedrock: `{"message"}`, the exception's name in the `x-amzn-ErrorType` header
//!   (`ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/`), with an
//!   `x-amzn-RequestId` header and no rate-limit or retry headers.
//!
//! Statuses follow each provider: an overloaded Anthropic answers 529 `overloaded_error`, an
//! overloaded OpenAI 503 with a `server_error` body.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::exchange::Dialect;
use crate::limits::{LimitKind, RateState, Refusal};
use crate::rate_headers;

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ApiError {
    /// 400: the request is malformed or asks for something the model does not support.
    Invalid {
        message: String,
        param: Option<String>,
    },
    /// 401: no API key.
    MissingKey,
    /// 400 (Anthropic): no `anthropic-version` header.
    MissingVersion,
    /// 404: the model is not served.
    ModelNotFound(String),
    /// 500.
    Server,
    /// 500 whose message is a request validation error, as llama-cpp-python's server answers
    /// a body its schema refuses (`internal_server_error`, the error's text as the message).
    ServerValidation(String),
    /// 529 (Anthropic) / 503 (OpenAI).
    Overloaded,
    /// 429 because a limit was exceeded.
    RateLimited {
        model: String,
        refusal: Box<Refusal>,
    },
    /// 429 served as a fault, with the current window state when the model has limits.
    RateLimitFault { state: Option<Box<RateState>> },
}

impl ApiError {
    /// A 400 naming the offending parameter.
    pub(crate) fn invalid(message: impl Into<String>, param: Option<&str>) -> Self {
        Self::Invalid {
            message: message.into(),
            param: param.map(str::to_owned),
        }
    }

    fn status(&self, dialect: Dialect) -> StatusCode {
        if dialect == Dialect::Bedrock {
            return StatusCode::from_u16(self.bedrock_error().0).unwrap_or(StatusCode::BAD_REQUEST);
        }
        match (self, dialect) {
            (Self::Invalid { .. } | Self::MissingVersion, _) => StatusCode::BAD_REQUEST,
            (Self::MissingKey, Dialect::Gemini) => StatusCode::FORBIDDEN,
            (Self::MissingKey, _) => StatusCode::UNAUTHORIZED,
            (Self::ModelNotFound(_), _) => StatusCode::NOT_FOUND,
            (Self::Server | Self::ServerValidation(_), _) => StatusCode::INTERNAL_SERVER_ERROR,
            (
                Self::Overloaded,
                Dialect::OpenAi | Dialect::OpenAiResponses | Dialect::Gemini | Dialect::Bedrock,
            ) => StatusCode::SERVICE_UNAVAILABLE,
            (Self::Overloaded, Dialect::Anthropic) => {
                StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE)
            }
            (Self::RateLimited { .. } | Self::RateLimitFault { .. }, _) => {
                StatusCode::TOO_MANY_REQUESTS
            }
        }
    }

    fn openai_body(&self) -> Value {
        let (message, kind, param, code): (String, &str, Option<String>, Option<&str>) = match self
        {
            Self::Invalid { message, param } => (
                message.clone(),
                "invalid_request_error",
                param.clone(),
                None,
            ),
            Self::MissingKey => (
                "You didn't provide an API key. You need to provide your API key in an \
                     Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
                    .into(),
                "invalid_request_error",
                None,
                None,
            ),
            Self::MissingVersion => (
                "anthropic-version: header is required".into(),
                "invalid_request_error",
                None,
                None,
            ),
            Self::ModelNotFound(model) => (
                format!("The model `{model}` does not exist or you do not have access to it."),
                "invalid_request_error",
                None,
                Some("model_not_found"),
            ),
            Self::Server => (
                "The server had an error while processing your request. Sorry about that!".into(),
                "server_error",
                None,
                None,
            ),
            Self::ServerValidation(message) => {
                (message.clone(), "internal_server_error", None, None)
            }
            Self::Overloaded => (
                "The engine is currently overloaded, please try again later.".into(),
                "server_error",
                None,
                None,
            ),
            Self::RateLimited { model, refusal } => (
                openai_rate_message(model, refusal),
                match refusal.kind {
                    LimitKind::Requests | LimitKind::Concurrency => "requests",
                    LimitKind::Tokens | LimitKind::InputTokens | LimitKind::OutputTokens => {
                        "tokens"
                    }
                },
                None,
                Some("rate_limit_exceeded"),
            ),
            Self::RateLimitFault { .. } => (
                "Rate limit reached (served by the simulated provider as a fault). \
                     Please try again in 1s."
                    .into(),
                "requests",
                None,
                Some("rate_limit_exceeded"),
            ),
        };
        json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
    }

    fn anthropic_body(&self, request_id: &str) -> Value {
        let (kind, message): (&str, String) = match self {
            Self::Invalid { message, .. } => ("invalid_request_error", message.clone()),
            Self::MissingKey => (
                "authentication_error",
                "x-api-key header is required".into(),
            ),
            Self::MissingVersion => (
                "invalid_request_error",
                "anthropic-version: header is required".into(),
            ),
            Self::ModelNotFound(model) => ("not_found_error", format!("model: {model}")),
            Self::Server | Self::ServerValidation(_) => {
                ("api_error", "Internal server error".into())
            }
            Self::Overloaded => ("overloaded_error", "Overloaded".into()),
            Self::RateLimited { refusal, .. } => {
                ("rate_limit_error", anthropic_rate_message(refusal))
            }
            Self::RateLimitFault { .. } => (
                "rate_limit_error",
                "This request would exceed the rate limit (served by the simulated provider \
                 as a fault)."
                    .into(),
            ),
        };
        json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id})
    }

    fn gemini_body(&self, status: StatusCode) -> Value {
        let (kind, message): (&str, String) = match self {
            Self::Invalid { message, .. } => ("INVALID_ARGUMENT", message.clone()),
            Self::MissingVersion => ("INVALID_ARGUMENT", "Invalid request.".into()),
            Self::MissingKey => (
                "PERMISSION_DENIED",
                "Method doesn't allow unregistered callers (callers without established \
                 identity). Please use API Key or other form of API consumer identity to call \
                 this API."
                    .into(),
            ),
            Self::ModelNotFound(model) => (
                "NOT_FOUND",
                format!(
                    "models/{model} is not found for API version v1beta, or is not supported for \
                     generateContent. Call ListModels to see the list of available models and \
                     their supported methods."
                ),
            ),
            Self::Server | Self::ServerValidation(_) => (
                "INTERNAL",
                "An internal error has occurred. Please retry or report in \
                 https://developers.generativeai.google/guide/troubleshooting"
                    .into(),
            ),
            Self::Overloaded => (
                "UNAVAILABLE",
                "The model is overloaded. Please try again later.".into(),
            ),
            Self::RateLimited { .. } | Self::RateLimitFault { .. } => (
                "RESOURCE_EXHAUSTED",
                "You exceeded your current quota, please check your plan and billing details. \
                 For more information on this error, head to: \
                 https://ai.google.dev/gemini-api/docs/rate-limits."
                    .into(),
            ),
        };
        let mut error = json!({"code": status.as_u16(), "message": message, "status": kind});
        let details = match self {
            Self::Invalid {
                message,
                param: Some(field),
            } => vec![json!({
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [{"field": field, "description": message}]
            })],
            Self::RateLimited { model, refusal } => {
                let (metric, id) = match refusal.kind {
                    LimitKind::Requests => (
                        "generate_content_requests",
                        "GenerateRequestsPerMinutePerProjectPerModel",
                    ),
                    LimitKind::Concurrency => (
                        "generate_content_concurrent_requests",
                        "GenerateContentConcurrentRequestsPerProjectPerModel",
                    ),
                    LimitKind::Tokens => (
                        "generate_content_token_count",
                        "GenerateContentTokensPerModelPerMinute",
                    ),
                    LimitKind::InputTokens => (
                        "generate_content_input_token_count",
                        "GenerateContentInputTokensPerModelPerMinute",
                    ),
                    LimitKind::OutputTokens => (
                        "generate_content_output_token_count",
                        "GenerateContentOutputTokensPerModelPerMinute",
                    ),
                };
                let value = refusal.figure;
                let mut details = vec![json!({
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{
                        "quotaMetric": format!("generativelanguage.googleapis.com/{metric}"),
                        "quotaId": id,
                        "quotaDimensions": {"location": "global", "model": model},
                        "quotaValue": value.to_string()
                    }]
                })];
                if !refusal.too_large {
                    details.push(retry_info(refusal.retry_after));
                }
                details
            }
            Self::RateLimitFault { .. } => vec![retry_info(Duration::from_secs(1))],
            _ => Vec::new(),
        };
        if !details.is_empty() {
            error["details"] = json!(details);
        }
        json!({ "error": error })
    }

    /// Bedrock's status, exception name and message.
    fn bedrock_error(&self) -> (u16, &'static str, String) {
        match self {
            Self::Invalid { message, .. } => (400, "ValidationException", message.clone()),
            Self::MissingKey => (
                403,
                "MissingAuthenticationTokenException",
                "Missing Authentication Token".into(),
            ),
            Self::MissingVersion => (400, "ValidationException", "Malformed request".into()),
            Self::ModelNotFound(_) => (
                400,
                "ValidationException",
                "The provided model identifier is invalid.".into(),
            ),
            Self::Server | Self::ServerValidation(_) => (
                500,
                "InternalServerException",
                "The server encountered an internal error.".into(),
            ),
            Self::Overloaded => (
                503,
                "ServiceUnavailableException",
                "Bedrock is unable to process your request.".into(),
            ),
            Self::RateLimited { refusal, .. } if refusal.too_large => (
                400,
                "ValidationException",
                "Input is too long for requested model.".into(),
            ),
            Self::RateLimited { refusal, .. } => (
                429,
                "ThrottlingException",
                match refusal.kind {
                    LimitKind::Requests | LimitKind::Concurrency => {
                        "Too many requests, please wait before trying again."
                    }
                    LimitKind::Tokens | LimitKind::InputTokens | LimitKind::OutputTokens => {
                        "Too many tokens, please wait before trying again."
                    }
                }
                .into(),
            ),
            Self::RateLimitFault { .. } => (
                429,
                "ThrottlingException",
                "Too many requests, please wait before trying again.".into(),
            ),
        }
    }

    /// The full response: status, body and headers (request id, rate-limit headers on 429).
    pub(crate) fn into_response_for(self, dialect: Dialect, request_id: &str) -> Response {
        let status = self.status(dialect);
        let mut headers = HeaderMap::new();
        insert_request_id(&mut headers, dialect, request_id);
        let (state, retry_after) = match &self {
            Self::RateLimited { refusal, .. } => {
                let retry = (!refusal.too_large).then_some(refusal.retry_after);
                (Some(refusal.state), retry)
            }
            Self::RateLimitFault { state } => {
                (state.as_deref().copied(), Some(Duration::from_secs(1)))
            }
            _ => (None, None),
        };
        if let Some(state) = state {
            rate_headers::insert(&mut headers, dialect, &state);
        }
        if let Some(wait) = retry_after.filter(|_| dialect != Dialect::Bedrock) {
            rate_headers::insert_retry_after(&mut headers, dialect, wait);
        }
        let body = match dialect {
            Dialect::OpenAi | Dialect::OpenAiResponses => self.openai_body(),
            Dialect::Anthropic => self.anthropic_body(request_id),
            Dialect::Gemini => self.gemini_body(status),
            Dialect::Bedrock => {
                let (_, kind, message) = self.bedrock_error();
                crate::bedrock::insert_error_type(&mut headers, kind);
                json!({"message": message})
            }
        };
        (status, headers, axum::Json(body)).into_response()
    }
}

/// A `google.rpc.RetryInfo` detail asking for `wait`.
fn retry_info(wait: Duration) -> Value {
    json!({
        "@type": "type.googleapis.com/google.rpc.RetryInfo",
        "retryDelay": crate::gemini::proto_duration(wait)
    })
}

/// "Please try again in …" as OpenAI writes it: `250ms`, `3.89s`.
fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let text = format!("{:.3}", d.as_secs_f64());
    format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
}

/// How OpenAI names a limit in its messages.
fn openai_limit_name(kind: LimitKind) -> &'static str {
    match kind {
        LimitKind::Requests => "requests per min (RPM)",
        LimitKind::Tokens => "tokens per min (TPM)",
        LimitKind::InputTokens => "input tokens per min (ITPM)",
        LimitKind::OutputTokens => "output tokens per min (OTPM)",
        LimitKind::Concurrency => "concurrent requests",
    }
}

fn openai_rate_message(model: &str, refusal: &Refusal) -> String {
    let name = openai_limit_name(refusal.kind);
    if refusal.too_large {
        return format!(
            "Request too large for {model} in organization org-sim on {name}: Limit {}, \
             Requested {}. The input or output tokens must be reduced in order to run \
             successfully.",
            refusal.figure, refusal.requested
        );
    }
    format!(
        "Rate limit reached for {model} in organization org-sim on {name}: Limit {}, Used {}, \
         Requested {}. Please try again in {}.",
        refusal.figure,
        refusal.used,
        refusal.requested,
        seconds(refusal.retry_after)
    )
}

fn anthropic_rate_message(refusal: &Refusal) -> String {
    let what = match refusal.kind {
        LimitKind::Requests => "requests per minute",
        LimitKind::Tokens => "tokens per minute",
        LimitKind::InputTokens => "input tokens per minute",
        LimitKind::OutputTokens => "output tokens per minute",
        LimitKind::Concurrency => {
            return format!(
                "This request would exceed your organization's limit of {} concurrent requests. \
                 Please try again later.",
                refusal.figure
            );
        }
    };
    if refusal.kind == LimitKind::Requests {
        return format!(
            "This request would exceed your organization's rate limit of {} {what}. Please reduce \
             the prompt length or the maximum tokens requested, or try again later.",
            refusal.figure
        );
    }
    format!(
        "This request would exceed your organization's rate limit of {} {what} (used {}, \
         requested {}). Please reduce the prompt length or the maximum tokens requested, or try \
         again later.",
        refusal.figure, refusal.used, refusal.requested
    )
}

/// Adds the request id under the dialect's header name (Gemini sends none).
pub(crate) fn insert_request_id(headers: &mut HeaderMap, dialect: Dialect, request_id: &str) {
    let name = match dialect {
        Dialect::OpenAi | Dialect::OpenAiResponses => "x-request-id",
        Dialect::Anthropic => "request-id",
        Dialect::Gemini => return,
        Dialect::Bedrock => "x-amzn-requestid",
    };
    if let Ok(v) = HeaderValue::from_str(request_id) {
        headers.insert(HeaderName::from_static(name), v);
    }
}
