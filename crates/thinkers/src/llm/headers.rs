//! What providers say in response headers: how long to wait, and how much budget remains.
//!
//! The wait is read in the order the official SDKs use: `retry-after-ms`, then `retry-after`
//! (seconds, possibly fractional, or an HTTP date), then the reset header of an exhausted
//! rate-limit bucket (OpenAI `x-ratelimit-reset-*` as Go-style durations such as `6m0s`, `1s`,
//! `250ms`; Anthropic `anthropic-ratelimit-*-reset` as RFC 3339 timestamps). When no bucket says
//! it is exhausted, the longest reset is used.

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use reqwest::header::{AsHeaderName, HeaderMap, HeaderName};

use crate::dispatch::RateObservation;

fn get(h: &HeaderMap, name: impl AsHeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

fn number(h: &HeaderMap, name: impl AsHeaderName) -> Option<u64> {
    // Azure sends -1 for "unknown"; a negative count means nothing.
    get(h, name)?
        .parse::<i64>()
        .ok()
        .and_then(|n| u64::try_from(n).ok())
}

/// Parse a Go-style duration (`1h2m3.5s`, `6m0s`, `250ms`, `0.1s`, `12us`).
pub(crate) fn go_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut total = 0.0_f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return None;
        }
        let value: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" | "" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).ok()
}

fn until(at: SystemTime, now: SystemTime) -> Duration {
    at.duration_since(now).unwrap_or(Duration::ZERO)
}

fn rfc3339_from(s: &str, now: SystemTime) -> Option<Duration> {
    let at: DateTime<Utc> = DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&Utc);
    Some(until(at.into(), now))
}

fn http_date_from(s: &str, now: SystemTime) -> Option<Duration> {
    let at: DateTime<Utc> = DateTime::parse_from_rfc2822(s).ok()?.with_timezone(&Utc);
    Some(until(at.into(), now))
}

// Each bucket's (remaining, reset) header names, spelled out once rather than formatted on every
// answer.
const OPENAI_TOKENS: [HeaderName; 2] = [
    HeaderName::from_static("x-ratelimit-remaining-tokens"),
    HeaderName::from_static("x-ratelimit-reset-tokens"),
];
const OPENAI_REQUESTS: [HeaderName; 2] = [
    HeaderName::from_static("x-ratelimit-remaining-requests"),
    HeaderName::from_static("x-ratelimit-reset-requests"),
];
const ANTHROPIC_TOKENS: [HeaderName; 2] = [
    HeaderName::from_static("anthropic-ratelimit-tokens-remaining"),
    HeaderName::from_static("anthropic-ratelimit-tokens-reset"),
];
const ANTHROPIC_INPUT_TOKENS: [HeaderName; 2] = [
    HeaderName::from_static("anthropic-ratelimit-input-tokens-remaining"),
    HeaderName::from_static("anthropic-ratelimit-input-tokens-reset"),
];
/// Each bucket's stated limit, in the same order of preference as the buckets.
const LIMITS: [[&str; 3]; 2] = [
    [
        "x-ratelimit-limit-tokens",
        "anthropic-ratelimit-tokens-limit",
        "anthropic-ratelimit-input-tokens-limit",
    ],
    [
        "x-ratelimit-limit-requests",
        "anthropic-ratelimit-requests-limit",
        "anthropic-ratelimit-requests-limit",
    ],
];
const ANTHROPIC_REQUESTS: [HeaderName; 2] = [
    HeaderName::from_static("anthropic-ratelimit-requests-remaining"),
    HeaderName::from_static("anthropic-ratelimit-requests-reset"),
];

/// Which providers' rate-limit spellings the headers hold at all: one pass over the names, so an
/// answer without them (a local server, a proxy that strips them) costs no lookups.
fn spellings(h: &HeaderMap) -> (bool, bool) {
    let (mut openai, mut anthropic) = (false, false);
    for name in h.keys() {
        let name = name.as_str();
        openai |= name.starts_with("x-ratelimit-");
        anthropic |= name.starts_with("anthropic-ratelimit-");
    }
    (openai, anthropic)
}

/// One bucket's remaining count and time to reset, whichever provider spelled it.
fn buckets(h: &HeaderMap, now: SystemTime) -> [(Option<u64>, Option<Duration>); 2] {
    let (has_openai, has_anthropic) = spellings(h);
    let openai = |[remaining, reset]: [HeaderName; 2]| {
        if !has_openai {
            return (None, None);
        }
        (number(h, remaining), get(h, reset).and_then(go_duration))
    };
    let anthropic = |[remaining, reset]: [HeaderName; 2]| {
        if !has_anthropic {
            return (None, None);
        }
        (
            number(h, remaining),
            get(h, reset).and_then(|s| rfc3339_from(s, now)),
        )
    };
    // The first spelling that says anything wins; the others are not looked up (each lookup
    // hashes a header name, on every answer).
    let pick = |a: (Option<u64>, Option<Duration>),
                b: &dyn Fn() -> (Option<u64>, Option<Duration>)| {
        if a.0.is_some() || a.1.is_some() {
            a
        } else {
            b()
        }
    };
    // Anthropic's `tokens-*` is the most restrictive token limit in force; input tokens next.
    [
        pick(openai(OPENAI_TOKENS), &|| {
            pick(anthropic(ANTHROPIC_TOKENS), &|| {
                anthropic(ANTHROPIC_INPUT_TOKENS)
            })
        }),
        pick(openai(OPENAI_REQUESTS), &|| anthropic(ANTHROPIC_REQUESTS)),
    ]
}

/// How long the provider asked us to wait, if it said.
pub(crate) fn retry_after(h: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = get(h, "retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Ok(d) = Duration::try_from_secs_f64(ms / 1000.0)
    {
        return Some(d);
    }
    if let Some(v) = get(h, "retry-after") {
        if let Ok(secs) = v.parse::<f64>() {
            if let Ok(d) = Duration::try_from_secs_f64(secs) {
                return Some(d);
            }
        } else if let Some(d) = http_date_from(v, now) {
            return Some(d);
        }
    }
    let b = buckets(h, now);
    let exhausted = b
        .iter()
        .filter(|(remaining, _)| *remaining == Some(0))
        .filter_map(|(_, reset)| *reset)
        .max();
    exhausted.or_else(|| b.iter().filter_map(|(_, reset)| *reset).max())
}

/// The provider's view of our rate-limit budget, if it sent one.
pub(crate) fn rate_observation(h: &HeaderMap, now: SystemTime) -> Option<RateObservation> {
    let [
        (remaining_tokens, tokens_reset),
        (remaining_requests, requests_reset),
    ] = buckets(h, now);
    let (has_openai, has_anthropic) = spellings(h);
    let limit = |names: [&str; 3]| {
        let openai = has_openai.then(|| number(h, names[0])).flatten();
        openai.or_else(|| {
            has_anthropic
                .then(|| number(h, names[1]).or_else(|| number(h, names[2])))
                .flatten()
        })
    };
    let [limit_tokens, limit_requests] = LIMITS.map(limit);
    let obs = RateObservation {
        remaining_tokens,
        tokens_reset,
        remaining_requests,
        requests_reset,
        limit_tokens,
        limit_requests,
    };
    (obs != RateObservation::default()).then_some(obs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            if let Ok(v) = HeaderValue::from_str(v) {
                h.insert(HeaderName::from_static(k), v);
            }
        }
        h
    }

    fn at(s: &str) -> SystemTime {
        DateTime::parse_from_rfc3339(s)
            .map(|d| d.with_timezone(&Utc).into())
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }

    #[test]
    fn go_durations_parse() {
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(go_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(go_duration("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(go_duration("0.1s"), Some(Duration::from_millis(100)));
        assert_eq!(
            go_duration("1h2m3.5s"),
            Some(Duration::from_millis(3_723_500))
        );
        assert_eq!(go_duration("soon"), None);
        assert_eq!(go_duration(""), None);
    }

    #[test]
    fn waits_are_read_in_sdk_order() {
        let now = at("2025-08-21T12:40:00Z");
        let h = headers(&[("retry-after-ms", "1500"), ("retry-after", "7")]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(1500)));
        let h = headers(&[("retry-after", "7")]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(7)));
        let h = headers(&[("retry-after", "Thu, 21 Aug 2025 12:40:30 GMT")]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(30)));
        let h = headers(&[
            ("x-ratelimit-remaining-requests", "10"),
            ("x-ratelimit-reset-requests", "12ms"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(360)));
        let h = headers(&[
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", "2025-08-21T12:40:59Z"),
            ("anthropic-ratelimit-tokens-remaining", "5000"),
            ("anthropic-ratelimit-tokens-reset", "2025-08-21T12:40:10Z"),
        ]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(59)));
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn each_bucket_is_read_from_whichever_spelling_is_present() {
        let now = at("2025-08-21T12:40:00Z");
        let h = headers(&[
            ("content-type", "application/json"),
            ("x-ratelimit-remaining-requests", "5"),
            ("anthropic-ratelimit-tokens-remaining", "7"),
        ]);
        let obs = rate_observation(&h, now);
        assert_eq!(obs.and_then(|o| o.remaining_requests), Some(5));
        assert_eq!(obs.and_then(|o| o.remaining_tokens), Some(7));
        let unrelated = headers(&[("content-type", "application/json"), ("x-request-id", "r")]);
        assert_eq!(rate_observation(&unrelated, now), None);
    }

    #[test]
    fn rate_headers_become_observations() {
        let now = at("2025-08-21T12:40:00Z");
        let h = headers(&[
            ("x-ratelimit-limit-tokens", "160000"),
            ("x-ratelimit-remaining-tokens", "159976"),
            ("x-ratelimit-reset-tokens", "9ms"),
            ("x-ratelimit-remaining-requests", "4999"),
            ("x-ratelimit-reset-requests", "12ms"),
        ]);
        assert_eq!(
            rate_observation(&h, now),
            Some(RateObservation {
                remaining_tokens: Some(159_976),
                tokens_reset: Some(Duration::from_millis(9)),
                remaining_requests: Some(4999),
                requests_reset: Some(Duration::from_millis(12)),
                limit_tokens: Some(160_000),
                limit_requests: None,
            })
        );
        let h = headers(&[
            ("anthropic-ratelimit-input-tokens-remaining", "80000"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2025-08-21T12:40:59Z",
            ),
            ("anthropic-ratelimit-tokens-remaining", "96000"),
            ("anthropic-ratelimit-tokens-reset", "2025-08-21T12:41:00Z"),
            ("anthropic-ratelimit-requests-remaining", "999"),
            ("anthropic-ratelimit-requests-reset", "2025-08-21T12:40:30Z"),
        ]);
        let obs = rate_observation(&h, now);
        assert_eq!(obs.and_then(|o| o.remaining_tokens), Some(96_000));
        assert_eq!(
            obs.and_then(|o| o.tokens_reset),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            obs.and_then(|o| o.requests_reset),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            rate_observation(&headers(&[("x-ratelimit-remaining-tokens", "-1")]), now),
            None
        );
    }
}
