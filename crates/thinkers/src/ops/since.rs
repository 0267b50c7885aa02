//! The `--since` window of the reports: a duration back from now or a point in time.

use chrono::{DateTime, NaiveDate, Utc};

use crate::{Error, Result};

/// The start of a report window, in milliseconds since the Unix epoch.
///
/// `text` is either a duration counted back from `now_ms` — a whole number followed by a unit,
/// `s` (seconds), `m` (minutes), `h` (hours), `d` (days) or `w` (weeks): `30m`, `24h`, `7d` —
/// or a point in time: an RFC 3339 timestamp (`2025-06-01T12:00:00Z`,
/// `2025-06-01T14:00:00+02:00`) or a bare date (`2025-06-01`, midnight UTC).
///
/// Anything else is an [`Error::InvalidInput`] naming `since` and the value.
pub fn parse_since(text: &str, now_ms: i64) -> Result<i64> {
    let t = text.trim();
    if let Some(ms) = duration_ms(t)? {
        return Ok(now_ms.saturating_sub(ms));
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(t) {
        return Ok(at.with_timezone(&Utc).timestamp_millis());
    }
    if let Ok(day) = NaiveDate::parse_from_str(t, "%Y-%m-%d")
        && let Some(midnight) = day.and_hms_opt(0, 0, 0)
    {
        return Ok(midnight.and_utc().timestamp_millis());
    }
    Err(invalid(
        text,
        "expected a duration such as 30m, 24h or 7d, or an RFC 3339 date such as \
         2025-06-01T00:00:00Z",
    ))
}

/// A duration like `24h` in milliseconds; `None` when `t` does not look like one (so it may be a
/// date), an error when it does but cannot be one.
fn duration_ms(t: &str) -> Result<Option<i64>> {
    let Some(unit) = t.chars().last() else {
        return Ok(None);
    };
    let digits = &t[..t.len() - unit.len_utf8()];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    let unit_ms: i64 = match unit {
        's' => 1_000,
        'm' => 60_000,
        'h' => 3_600_000,
        'd' => 86_400_000,
        'w' => 604_800_000,
        _ => {
            return Err(invalid(
                t,
                "unknown unit: use s, m, h, d or w (for example 24h)",
            ));
        }
    };
    let n: i64 = digits
        .parse()
        .map_err(|_| invalid(t, "the number is too large"))?;
    n.checked_mul(unit_ms)
        .map(Some)
        .ok_or_else(|| invalid(t, "the duration is too long"))
}

fn invalid(value: &str, reason: &str) -> Error {
    Error::invalid_input("since", Some(value.to_owned()), reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_750_000_000_000;

    #[test]
    fn durations_count_back_from_now() {
        assert_eq!(parse_since("30m", NOW).unwrap(), NOW - 30 * 60_000);
        assert_eq!(parse_since("24h", NOW).unwrap(), NOW - 24 * 3_600_000);
        assert_eq!(parse_since(" 7d ", NOW).unwrap(), NOW - 7 * 86_400_000);
        assert_eq!(parse_since("2w", NOW).unwrap(), NOW - 14 * 86_400_000);
        assert_eq!(parse_since("45s", NOW).unwrap(), NOW - 45_000);
        assert_eq!(parse_since("0h", NOW).unwrap(), NOW);
    }

    #[test]
    fn dates_are_points_in_time() {
        assert_eq!(
            parse_since("2025-06-01T12:00:00Z", NOW).unwrap(),
            1_748_779_200_000
        );
        assert_eq!(
            parse_since("2025-06-01T14:00:00+02:00", NOW).unwrap(),
            1_748_779_200_000
        );
        assert_eq!(parse_since("2025-06-01", NOW).unwrap(), 1_748_736_000_000);
    }

    #[test]
    fn bad_values_are_named() {
        for bad in [
            "",
            "h",
            "24",
            "24x",
            "-3d",
            "1.5h",
            "yesterday",
            "2025-13-01",
            "99999999999999999999d",
        ] {
            let err = parse_since(bad, NOW).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("since"), "{text}");
            assert!(text.contains(bad), "{bad:?} not named in {text}");
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput, "{bad:?}");
        }
        let huge = parse_since("9999999999999999d", NOW).unwrap_err();
        assert!(huge.to_string().contains("too long"), "{huge}");
    }
}
