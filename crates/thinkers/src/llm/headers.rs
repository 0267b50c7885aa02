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

use crate::dispatch::{AxisObservation, RateObservation};

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

/// The precision a stated reset is given to (a duration or a timestamp): its last digit's unit,
/// read from its fraction of a second (`1.25s`: 10 ms), or a millisecond for a value in `ms` and
/// finer; a whole second otherwise.
fn precision(s: &str) -> Duration {
    let s = s.trim();
    if s.ends_with("ms") || s.ends_with("us") || s.ends_with("µs") || s.ends_with("ns") {
        return Duration::from_millis(1);
    }
    let fraction = s.split_once('.').map_or(0, |(_, f)| {
        f.chars().take_while(char::is_ascii_digit).count()
    });
    let digits = u32::try_from(fraction.min(9)).unwrap_or(9);
    Duration::from_nanos(10u64.pow(9 - digits))
}

fn rfc3339_from(s: &str, now: SystemTime) -> Option<Duration> {
    let at: DateTime<Utc> = DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&Utc);
    Some(until(at.into(), now))
}

fn http_date_from(s: &str, now: SystemTime) -> Option<Duration> {
    let at: DateTime<Utc> = DateTime::parse_from_rfc2822(s).ok()?.with_timezone(&Utc);
    Some(until(at.into(), now))
}

/// One axis's `[limit, remaining, reset]` header names in one provider's spelling.
type Names = [HeaderName; 3];

const fn names(limit: &'static str, remaining: &'static str, reset: &'static str) -> Names {
    [
        HeaderName::from_static(limit),
        HeaderName::from_static(remaining),
        HeaderName::from_static(reset),
    ]
}

const OPENAI_TOKENS: Names = names(
    "x-ratelimit-limit-tokens",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-tokens",
);
const OPENAI_REQUESTS: Names = names(
    "x-ratelimit-limit-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-requests",
);
const ANTHROPIC_TOKENS: Names = names(
    "anthropic-ratelimit-tokens-limit",
    "anthropic-ratelimit-tokens-remaining",
    "anthropic-ratelimit-tokens-reset",
);
const ANTHROPIC_INPUT_TOKENS: Names = names(
    "anthropic-ratelimit-input-tokens-limit",
    "anthropic-ratelimit-input-tokens-remaining",
    "anthropic-ratelimit-input-tokens-reset",
);
const ANTHROPIC_OUTPUT_TOKENS: Names = names(
    "anthropic-ratelimit-output-tokens-limit",
    "anthropic-ratelimit-output-tokens-remaining",
    "anthropic-ratelimit-output-tokens-reset",
);
const ANTHROPIC_REQUESTS: Names = names(
    "anthropic-ratelimit-requests-limit",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-requests-reset",
);

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

/// Every axis as the headers state it, whichever provider spelled it.
///
/// Anthropic states its input and output token limits apart (`input-tokens-*`,
/// `output-tokens-*`), and `tokens-*` as whichever of them is the more restrictive: so
/// `tokens-*` is read as the token axis only when neither separate family is present, and never
/// paces input and output together at the output figure.
fn axes(h: &HeaderMap, now: SystemTime) -> RateObservation {
    let (has_openai, has_anthropic) = spellings(h);
    let openai = |[limit, remaining, reset]: &Names| AxisObservation {
        limit: number(h, limit),
        remaining: number(h, remaining),
        reset: get(h, reset).and_then(go_duration),
        reset_slack: get(h, reset).map_or(Duration::ZERO, precision),
    };
    let anthropic = |[limit, remaining, reset]: &Names| AxisObservation {
        limit: number(h, limit),
        remaining: number(h, remaining),
        reset: get(h, reset).and_then(|s| rfc3339_from(s, now)),
        reset_slack: get(h, reset).map_or(Duration::ZERO, precision),
    };
    let mut obs = RateObservation::default();
    if has_openai {
        obs.tokens = openai(&OPENAI_TOKENS);
        obs.requests = openai(&OPENAI_REQUESTS);
    }
    if has_anthropic {
        obs.input_tokens = anthropic(&ANTHROPIC_INPUT_TOKENS);
        obs.output_tokens = anthropic(&ANTHROPIC_OUTPUT_TOKENS);
        let separate = !obs.input_tokens.is_empty() || !obs.output_tokens.is_empty();
        if obs.tokens.is_empty() && !separate {
            obs.tokens = anthropic(&ANTHROPIC_TOKENS);
        }
        if obs.requests.is_empty() {
            obs.requests = anthropic(&ANTHROPIC_REQUESTS);
        }
    }
    obs
}

/// How long the provider asked us to wait, if it said: its `retry-after-ms` or `retry-after`,
/// else the reset of an axis it says is exhausted, else its longest reset. A reset that has
/// already come (a refusal with the window whole: the ask is larger than its room) says nothing
/// of when to try again, so it is no answer and the caller backs off.
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
    let obs = axes(h, now);
    let all = obs.axes();
    let exhausted = all
        .iter()
        .filter(|a| a.remaining == Some(0))
        .filter_map(|a| a.reset)
        .max()
        .filter(|d| !d.is_zero());
    exhausted
        .or_else(|| all.iter().filter_map(|a| a.reset).max())
        .filter(|d| !d.is_zero())
}

/// The provider's view of our rate-limit budget, if it sent one.
pub(crate) fn rate_observation(h: &HeaderMap, now: SystemTime) -> Option<RateObservation> {
    let obs = axes(h, now);
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
    fn a_reset_is_read_with_its_precision() {
        // Anthropic's RFC 3339 timestamps in whole seconds may be a second short of the truth.
        assert_eq!(precision("2026-12-06T21:00:07Z"), Duration::from_secs(1));
        assert_eq!(
            precision("2026-12-06T21:00:07.25Z"),
            Duration::from_millis(10)
        );
        assert_eq!(precision("6m0s"), Duration::from_secs(1));
        assert_eq!(precision("1.5s"), Duration::from_millis(100));
        assert_eq!(precision("250ms"), Duration::from_millis(1));
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
    fn a_refusal_whose_window_is_whole_names_no_wait() {
        // A refusal of an ask larger than the room a whole window holds: every reset has come.
        // Read as a wait of nothing, it sent the same ask again at once, thousands a second.
        let now = at("2025-08-21T12:40:00Z");
        let h = headers(&[
            ("anthropic-ratelimit-output-tokens-limit", "20000"),
            ("anthropic-ratelimit-output-tokens-remaining", "333"),
            (
                "anthropic-ratelimit-output-tokens-reset",
                "2025-08-21T12:40:00Z",
            ),
        ]);
        assert_eq!(retry_after(&h, now), None);
        let h = headers(&[
            ("x-ratelimit-remaining-tokens", "2500"),
            ("x-ratelimit-reset-tokens", "0s"),
        ]);
        assert_eq!(retry_after(&h, now), None);
        // An exhausted axis whose reset has come leaves the wait to the others.
        let h = headers(&[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "0s"),
            ("x-ratelimit-remaining-tokens", "100"),
            ("x-ratelimit-reset-tokens", "5s"),
        ]);
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(5)));
    }

    #[test]
    fn anthropic_input_and_output_limits_are_separate_axes() {
        let now = at("2025-08-21T12:40:00Z");
        let h = headers(&[
            ("anthropic-ratelimit-input-tokens-limit", "40000"),
            ("anthropic-ratelimit-input-tokens-remaining", "30000"),
            (
                "anthropic-ratelimit-input-tokens-reset",
                "2025-08-21T12:40:02Z",
            ),
            ("anthropic-ratelimit-output-tokens-limit", "8000"),
            ("anthropic-ratelimit-output-tokens-remaining", "0"),
            (
                "anthropic-ratelimit-output-tokens-reset",
                "2025-08-21T12:40:05Z",
            ),
            ("anthropic-ratelimit-tokens-limit", "8000"),
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", "2025-08-21T12:40:05Z"),
        ]);
        let obs = rate_observation(&h, now).unwrap_or_default();
        assert_eq!(obs.input_tokens.limit, Some(40_000));
        assert_eq!(obs.output_tokens.limit, Some(8_000));
        assert_eq!(obs.output_tokens.remaining, Some(0));
        // Before, the output figure (8,000) paced input and output together.
        assert_eq!(obs.tokens, AxisObservation::default());
        // The exhausted axis's reset is the wait.
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(5)));
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
        assert_eq!(obs.and_then(|o| o.requests.remaining), Some(5));
        assert_eq!(obs.and_then(|o| o.tokens.remaining), Some(7));
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
                tokens: AxisObservation {
                    limit: Some(160_000),
                    remaining: Some(159_976),
                    reset: Some(Duration::from_millis(9)),
                    reset_slack: Duration::from_millis(1),
                },
                requests: AxisObservation {
                    limit: None,
                    remaining: Some(4999),
                    reset: Some(Duration::from_millis(12)),
                    reset_slack: Duration::from_millis(1),
                },
                ..RateObservation::default()
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
        let obs = rate_observation(&h, now).unwrap_or_default();
        // The input family is stated apart: `tokens-*` (the more restrictive of input and
        // output) is not read as a limit on both together.
        assert_eq!(obs.input_tokens.remaining, Some(80_000));
        assert_eq!(obs.input_tokens.reset, Some(Duration::from_secs(59)));
        assert!(obs.tokens.is_empty());
        assert_eq!(obs.requests.reset, Some(Duration::from_secs(30)));
        let h = headers(&[
            ("anthropic-ratelimit-tokens-limit", "90000"),
            ("anthropic-ratelimit-tokens-remaining", "96000"),
            ("anthropic-ratelimit-tokens-reset", "2025-08-21T12:41:00Z"),
        ]);
        let obs = rate_observation(&h, now).unwrap_or_default();
        assert_eq!(obs.tokens.limit, Some(90_000));
        assert_eq!(obs.tokens.reset, Some(Duration::from_secs(60)));
        assert_eq!(
            rate_observation(&headers(&[("x-ratelimit-remaining-tokens", "-1")]), now),
            None
        );
    }
}
