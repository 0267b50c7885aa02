//! Rate-limit response headers, in each provider's style.
//!
//! OpenAI (Chat Completions and Responses): `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`:
//! the limit is the per-minute figure (`rpm`, `tpm`), the remaining what could be admitted right
//! now, the reset the time until the limit is fully replenished as a Go duration (`6m0s`, `1s`,
//! `250ms`); plus `retry-after` (whole seconds, rounded up) and `retry-after-ms` on a 429.
//!
//! Anthropic: `anthropic-ratelimit-requests-*`, `anthropic-ratelimit-tokens-*`,
//! `anthropic-ratelimit-input-tokens-*` and `anthropic-ratelimit-output-tokens-*` with `-limit`
//! (the per-minute figure), `-remaining` and `-reset` (when fully replenished, RFC 3339), plus
//! `retry-after` on a 429. Each family carries its own limit: input tokens `itpm` (else `tpm`,
//! which binds input too), output tokens `otpm` (else `tpm`), tokens `tpm` (else the most
//! restrictive of `itpm` and `otpm`, as Anthropic's `tokens-*` headers report the most
//! restrictive limit in effect). OpenAI's `tokens` headers follow the same rule.
//!
//! Gemini and Bedrock: none (Gemini's 429 says how long to wait in the body, see `api_error`;
//! Bedrock's `ThrottlingException` says nothing).
//!
//! Headers are sent only for limits the model has; a model without limits gets none. A
//! concurrency limit has no header.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use chrono::{SecondsFormat, Utc};

use crate::exchange::Dialect;
use crate::limits::{MeterState, RateState, go_duration};

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

/// The most restrictive of two limits: the one with less remaining.
fn tighter(a: Option<MeterState>, b: Option<MeterState>) -> Option<MeterState> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.remaining < a.remaining { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// The token families' states: (tokens, input tokens, output tokens).
fn token_families(
    state: &RateState,
) -> (Option<MeterState>, Option<MeterState>, Option<MeterState>) {
    let tokens = state
        .tokens
        .or_else(|| tighter(state.input_tokens, state.output_tokens));
    let input = state.input_tokens.or(state.tokens);
    let output = state.output_tokens.or(state.tokens);
    (tokens, input, output)
}

/// Adds the limit, remaining and reset headers describing `state`.
pub(crate) fn insert(headers: &mut HeaderMap, dialect: Dialect, state: &RateState) {
    let (tokens, input, output) = token_families(state);
    match dialect {
        // Gemini and Bedrock send no rate-limit headers.
        Dialect::Gemini | Dialect::Bedrock => {}
        Dialect::OpenAi | Dialect::OpenAiResponses => {
            for (family, meter) in [("requests", state.requests), ("tokens", tokens)] {
                if let Some(m) = meter {
                    put(
                        headers,
                        &format!("x-ratelimit-limit-{family}"),
                        &m.figure.to_string(),
                    );
                    put(
                        headers,
                        &format!("x-ratelimit-remaining-{family}"),
                        &m.remaining.to_string(),
                    );
                    put(
                        headers,
                        &format!("x-ratelimit-reset-{family}"),
                        &go_duration(m.reset),
                    );
                }
            }
        }
        Dialect::Anthropic => {
            let families = [
                ("requests", state.requests),
                ("tokens", tokens),
                ("input-tokens", input),
                ("output-tokens", output),
            ];
            for (family, meter) in families {
                if let Some(m) = meter {
                    put(
                        headers,
                        &format!("anthropic-ratelimit-{family}-limit"),
                        &m.figure.to_string(),
                    );
                    put(
                        headers,
                        &format!("anthropic-ratelimit-{family}-remaining"),
                        &m.remaining.to_string(),
                    );
                    put(
                        headers,
                        &format!("anthropic-ratelimit-{family}-reset"),
                        &timestamp_after(m.reset),
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

    fn meter(figure: u64, remaining: u64, reset: Duration) -> Option<MeterState> {
        Some(MeterState {
            figure,
            remaining,
            reset,
        })
    }

    fn state() -> RateState {
        RateState {
            requests: meter(10, 9, Duration::from_millis(250)),
            tokens: meter(1000, 900, Duration::from_secs(360)),
            ..RateState::default()
        }
    }

    fn header<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// Seconds from now until an RFC 3339 header.
    fn seconds_until(h: &HeaderMap, name: &str) -> i64 {
        let at = chrono::DateTime::parse_from_rfc3339(header(h, name)).unwrap();
        (at.with_timezone(&Utc) - Utc::now()).num_seconds()
    }

    #[test]
    fn openai_headers_use_go_durations() {
        let mut h = HeaderMap::new();
        insert(&mut h, Dialect::OpenAi, &state());
        insert_retry_after(&mut h, Dialect::OpenAi, Duration::from_millis(1500));
        assert_eq!(h["x-ratelimit-limit-requests"], "10");
        assert_eq!(h["x-ratelimit-limit-tokens"], "1000");
        assert_eq!(h["x-ratelimit-remaining-requests"], "9");
        assert_eq!(h["x-ratelimit-remaining-tokens"], "900");
        assert_eq!(h["x-ratelimit-reset-requests"], "250ms");
        assert_eq!(h["x-ratelimit-reset-tokens"], "6m0s");
        assert_eq!(h["retry-after"], "2");
        assert_eq!(h["retry-after-ms"], "1500");
        let mut r = HeaderMap::new();
        insert(&mut r, Dialect::OpenAiResponses, &state());
        assert_eq!(r, {
            let mut h = h.clone();
            h.remove("retry-after");
            h.remove("retry-after-ms");
            h
        });
    }

    #[test]
    fn anthropic_headers_use_timestamps() {
        let mut h = HeaderMap::new();
        insert(&mut h, Dialect::Anthropic, &state());
        insert_retry_after(&mut h, Dialect::Anthropic, Duration::from_millis(2001));
        assert_eq!(h["anthropic-ratelimit-requests-limit"], "10");
        assert_eq!(h["anthropic-ratelimit-requests-remaining"], "9");
        // With only `tpm`, every token family carries it.
        for family in ["tokens", "input-tokens", "output-tokens"] {
            assert_eq!(
                h[format!("anthropic-ratelimit-{family}-limit").as_str()],
                "1000"
            );
            assert_eq!(
                h[format!("anthropic-ratelimit-{family}-remaining").as_str()],
                "900"
            );
            let until = seconds_until(&h, &format!("anthropic-ratelimit-{family}-reset"));
            assert!((358..=360).contains(&until), "{until}");
        }
        assert_eq!(h["retry-after"], "3", "whole seconds, rounded up");
        assert!(!h.contains_key("retry-after-ms"));
        assert!(!h.contains_key("x-ratelimit-limit-tokens"));
    }

    #[test]
    fn anthropic_families_carry_their_own_figures() {
        let state = RateState {
            input_tokens: meter(40_000, 30_000, Duration::from_secs(15)),
            output_tokens: meter(8_000, 2_000, Duration::from_secs(45)),
            ..RateState::default()
        };
        let mut h = HeaderMap::new();
        insert(&mut h, Dialect::Anthropic, &state);
        assert_eq!(h["anthropic-ratelimit-input-tokens-limit"], "40000");
        assert_eq!(h["anthropic-ratelimit-input-tokens-remaining"], "30000");
        assert_eq!(h["anthropic-ratelimit-output-tokens-limit"], "8000");
        assert_eq!(h["anthropic-ratelimit-output-tokens-remaining"], "2000");
        // `tokens-*` reports the most restrictive limit in effect: the output one.
        assert_eq!(h["anthropic-ratelimit-tokens-limit"], "8000");
        assert_eq!(h["anthropic-ratelimit-tokens-remaining"], "2000");
        let until = seconds_until(&h, "anthropic-ratelimit-output-tokens-reset");
        assert!((43..=45).contains(&until), "{until}");
        assert!(!h.contains_key("anthropic-ratelimit-requests-limit"));
        // With `tpm` too, the tokens family is `tpm`'s, the others their own.
        let state = RateState {
            tokens: meter(100_000, 99_000, Duration::from_secs(1)),
            ..state
        };
        let mut h = HeaderMap::new();
        insert(&mut h, Dialect::Anthropic, &state);
        assert_eq!(h["anthropic-ratelimit-tokens-limit"], "100000");
        assert_eq!(h["anthropic-ratelimit-input-tokens-limit"], "40000");
        assert_eq!(h["anthropic-ratelimit-output-tokens-limit"], "8000");
    }

    #[test]
    fn gemini_and_bedrock_send_no_limit_headers() {
        for dialect in [Dialect::Gemini, Dialect::Bedrock] {
            let mut h = HeaderMap::new();
            insert(&mut h, dialect, &state());
            assert!(h.is_empty(), "{dialect:?}");
        }
        let mut h = HeaderMap::new();
        insert_retry_after(&mut h, Dialect::Gemini, Duration::from_secs(3));
        assert!(h.is_empty());
    }
}
