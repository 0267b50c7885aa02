//! [`LimitEvent`]: what admission met on a budget (a throttle, or a change of an axis's
//! standing rate), recorded beside the model calls so the runs explorer can show the machinery.

use serde::{Deserialize, Serialize};

use crate::id::JobId;

/// The longest a throttle's detail is kept, in characters (one line).
pub const DETAIL_CHARS: usize = 300;

/// One admission event on a budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitEvent {
    /// When, milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The admission budget (`model:<entry>` for a model entry).
    pub budget: String,
    /// The catalog entry, when the budget is a model entry's and the recorder was told.
    pub entry: Option<String>,
    /// The job whose call met the event (the throttled call, or the call whose answer changed
    /// the rate).
    pub job: JobId,
    /// The workflow the job belongs to.
    pub workflow: JobId,
    /// What happened.
    #[serde(flatten)]
    pub kind: LimitEventKind,
}

/// What a [`LimitEvent`] records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LimitEventKind {
    /// The provider (or a service) throttled a call; the budget was paused and the call waits.
    /// A throttled call is billed nothing: its cost is the wait.
    Throttle {
        /// The HTTP status the detail names (`429`), when it names one (a rate-limit error
        /// inside a stream, or a service tool's throttle, may not).
        status: Option<u16>,
        /// How long the provider asked to wait (`Retry-After` or its like), in milliseconds,
        /// if it said.
        asked_ms: Option<u64>,
        /// How long the call waited before it was admitted again, after the caps (the
        /// client's and the dispatcher's) or the backoff when no wait was asked, in
        /// milliseconds.
        waited_ms: u64,
        /// What throttled the call, as the retry signal says it (already redacted like every
        /// error text), cut to one line of at most [`DETAIL_CHARS`] characters.
        detail: Option<String>,
    },
    /// A paced axis of the budget stands at a new rate or has a new source: its first standing
    /// in the process, then every change by more than a percent or of source.
    Rate {
        /// The axis: `tpm`, `itpm`, `otpm` or `rpm`.
        axis: String,
        /// The rate it paces at now, per minute.
        per_minute: f64,
        /// The catalog's figure, per minute (`None`: the provider stated the axis).
        catalog_per_minute: Option<f64>,
        /// Where the rate comes from: `catalog`, `header` or `throttle`.
        source: String,
    },
}

impl LimitEventKind {
    /// The stored name of the kind: `throttle` or `rate`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Throttle { .. } => "throttle",
            Self::Rate { .. } => "rate",
        }
    }
}

/// `detail` as a throttle event keeps it: whitespace runs (line breaks included) folded into
/// one space, at most [`DETAIL_CHARS`] characters (an ellipsis marks a cut).
pub fn one_line(detail: &str) -> String {
    let folded = detail.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= DETAIL_CHARS {
        return folded;
    }
    let mut cut: String = folded.chars().take(DETAIL_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// The HTTP status a throttle's detail names (`… HTTP 429: …`), if it names one.
pub fn status_in(detail: &str) -> Option<u16> {
    let at = detail.find("HTTP ")?;
    let digits = detail.get(at + 5..at + 8)?;
    let status = digits.parse::<u16>().ok()?;
    (100..600).contains(&status).then_some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_detail_is_one_bounded_line() {
        assert_eq!(
            one_line("  rate\nlimit \r\n\treached "),
            "rate limit reached"
        );
        let long = "x".repeat(1_000);
        let cut = one_line(&long);
        assert_eq!(cut.chars().count(), DETAIL_CHARS);
        assert!(cut.ends_with('…'));
        let exact = "y".repeat(DETAIL_CHARS);
        assert_eq!(one_line(&exact), exact);
    }

    #[test]
    fn the_status_is_read_from_the_detail_when_named() {
        assert_eq!(
            status_in("provider `sim` throttled the request: HTTP 429: slow down (entry `e`)"),
            Some(429)
        );
        assert_eq!(status_in("rate_limit_error: slow down"), None);
        assert_eq!(status_in("HTTP 9"), None);
    }
}
