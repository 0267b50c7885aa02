//! Rate-limit response headers, in each provider's style.
//!
//! OpenAI: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as Go durations
//! (`6m0s`, `1s`, `250ms`), plus `retry-after` (whole seconds) and `retry-after-ms` on a 429.
//!
//! Anthropic: `anthropic-ratelimit-requests-*`, `anthropic-ratelimit-input-tokens-*`,
//! `anthropic-ratelimit-output-tokens-*` and `anthropic-ratelimit-tokens-*` with `-limit`,
//! `-remaining` and `-reset` (RFC 3339 timestamps), plus `retry-after` on a 429. The sim enforces
//! one combined token budget per model, so the three token families carry the same figures.
//!
//! Gemini: none (its 429 says how long to wait in the body, see `api_error`).
//!
//! Headers are sent only for limits the model has; a model without limits gets none. A limit
//! header states what the window admits: the per-minute figure, or its share of a shorter window.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use chrono::{SecondsFormat, Utc};

use crate::exchange::Dialect;
use crate::limits::{RateState, go_duration};

fn put(headers: &mut HeaderMap, name: &str, value: &str) {
    if let (Ok(name), Ok(value)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        headers.insert(name, value);
    }
}

fn timestamp_after(d: Duration) -> String {
    let at = Utc::now() + chrono::Duration::from_std(d).unwrap_or_default();
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Adds the limit, remaining and reset headers describing `state`.
pub(crate) fn insert(headers: &mut HeaderMap, dialect: Dialect, state: &RateState) {
    match dialect {
        // Gemini and Bedrock send no rate-limit headers.
        Dialect::Gemini | Dialect::Bedrock => {}
        Dialect::OpenAi | Dialect::OpenAiResponses => {
            if let Some(rpm) = state.limits.requests() {
                put(headers, "x-ratelimit-limit-requests", &rpm.to_string());
                put(
                    headers,
                    "x-ratelimit-remaining-requests",
                    &state.remaining_requests.to_string(),
                );
                put(
                    headers,
                    "x-ratelimit-reset-requests",
                    &go_duration(state.reset_requests),
                );
            }
            if let Some(tpm) = state.limits.tokens() {
                put(headers, "x-ratelimit-limit-tokens", &tpm.to_string());
                put(
                    headers,
                    "x-ratelimit-remaining-tokens",
                    &state.remaining_tokens.to_string(),
                );
                put(
                    headers,
                    "x-ratelimit-reset-tokens",
                    &go_duration(state.reset_tokens),
                );
            }
        }
        Dialect::Anthropic => {
            if let Some(rpm) = state.limits.requests() {
                put(
                    headers,
                    "anthropic-ratelimit-requests-limit",
                    &rpm.to_string(),
                );
                put(
                    headers,
                    "anthropic-ratelimit-requests-remaining",
                    &state.remaining_requests.to_string(),
                );
                put(
                    headers,
                    "anthropic-ratelimit-requests-reset",
                    &timestamp_after(state.reset_requests),
                );
            }
            if let Some(tpm) = state.limits.tokens() {
                let reset = timestamp_after(state.reset_tokens);
                for family in ["input-tokens", "output-tokens", "tokens"] {
                    put(
                        headers,
                        &format!("anthropic-ratelimit-{family}-limit"),
                        &tpm.to_string(),
                    );
                    put(
                        headers,
                        &format!("anthropic-ratelimit-{family}-remaining"),
                        &state.remaining_tokens.to_string(),
                    );
                    put(
                        headers,
                        &format!("anthropic-ratelimit-{family}-reset"),
                        &reset,
                    );
                }
            }
        }
    }
}

/// Adds `retry-after` (whole seconds, at least 1) and, for OpenAI, `retry-after-ms`.
pub(crate) fn insert_retry_after(headers: &mut HeaderMap, dialect: Dialect, wait: Duration) {
    if dialect == Dialect::Gemini {
        // Gemini states its wait in the error body (`RetryInfo`), never in a header.
        return;
    }
    let secs = wait.as_millis().div_ceil(1000).max(1);
    put(headers, "retry-after", &secs.to_string());
    if matches!(dialect, Dialect::OpenAi | Dialect::OpenAiResponses) {
        put(
            headers,
            "retry-after-ms",
            &wait.as_millis().max(1).to_string(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    fn state() -> RateState {
        RateState {
            limits: Limits {
                rpm: Some(10),
                tpm: Some(1000),
                window: crate::limits::WINDOW,
            },
            remaining_requests: 9,
            remaining_tokens: 900,
            reset_requests: Duration::from_millis(250),
            reset_tokens: Duration::from_secs(360),
        }
    }

    #[test]
    fn openai_headers_use_go_durations() {
        let mut h = HeaderMap::new();
        insert(&mut h, Dialect::OpenAi, &state());
        insert_retry_after(&mut h, Dialect::OpenAi, Duration::from_millis(1500));
        assert_eq!(h["x-ratelimit-limit-requests"], "10");
        assert_eq!(h["x-ratelimit-remaining-tokens"], "900");
        assert_eq!(h["x-ratelimit-reset-requests"], "250ms");
        assert_eq!(h["x-ratelimit-reset-tokens"], "6m0s");
        assert_eq!(h["retry-after"], "2");
        assert_eq!(h["retry-after-ms"], "1500");
    }

    #[test]
    fn anthropic_headers_use_timestamps() {
        let mut h = HeaderMap::new();
        insert(&mut h, Dialect::Anthropic, &state());
        assert_eq!(h["anthropic-ratelimit-requests-remaining"], "9");
        assert_eq!(h["anthropic-ratelimit-output-tokens-limit"], "1000");
        let reset = h["anthropic-ratelimit-tokens-reset"]
            .to_str()
            .unwrap_or_default();
        assert!(
            chrono::DateTime::parse_from_rfc3339(reset).is_ok(),
            "{reset}"
        );
        assert!(!h.contains_key("retry-after-ms"));
    }
}
