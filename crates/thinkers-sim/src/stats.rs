//! Counters of what reached the sim, per model and in total, and the optional request log.
//!
//! What counts:
//! - `requests`: every request to a model endpoint that named a served model (refused ones too);
//! - `answered`: requests that got a model answer (what a provider bills);
//! - `input_tokens` / `output_tokens`: the sim's own counts for answered requests (requests that
//!   got a model answer, including answers altered by a fault);
//! - `admitted`: requests admitted by the model's limits (every request that got past them,
//!   including those then served a fault), and `peak_in_flight`, the most in flight at once;
//! - `settled_input_tokens` / `settled_output_tokens`: what admitted requests were charged
//!   against the limits once settled (input, and the output produced; a request that got no
//!   answer is charged its input): the numerator of the utilisation of a per-minute limit;
//! - `rate_limited`: 429s served because a real limit was exceeded, and `rate_limited_by_kind`
//!   per [`LimitKind`] (an injected `rate_limit_429` fault counts under `faults` instead);
//! - `faults`: faults served, in total and per kind;
//! - `invalid`: requests refused with a 4xx other than 429 (bad body, unsupported parameter…).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fault::FaultKind;
use crate::limits::LimitKind;

/// Counters of one model (or of all models, in [`StatsSnapshot::totals`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelStats {
    /// Requests received.
    pub requests: u64,
    /// Requests that got a model answer (answers altered by a content fault included): what a
    /// provider would bill.
    #[serde(default)]
    pub answered: u64,
    /// Input tokens of answered requests (the sim's own count).
    pub input_tokens: u64,
    /// Output tokens of answered requests (the sim's own count, reasoning included).
    pub output_tokens: u64,
    /// Requests admitted by the model's limits (all requests that got past them, whatever
    /// happened next).
    #[serde(default)]
    pub admitted: u64,
    /// The most requests in flight at once (from admission until the answer was sent); in
    /// [`StatsSnapshot::totals`], the largest of the models'.
    #[serde(default)]
    pub peak_in_flight: u64,
    /// Input tokens admitted requests were charged once settled.
    #[serde(default)]
    pub settled_input_tokens: u64,
    /// Output tokens admitted requests were charged once settled (the output produced).
    #[serde(default)]
    pub settled_output_tokens: u64,
    /// 429s served because a limit was exceeded.
    pub rate_limited: u64,
    /// 429s served because a limit was exceeded, per kind of limit.
    #[serde(default)]
    pub rate_limited_by_kind: BTreeMap<LimitKind, u64>,
    /// Faults served.
    pub faults: u64,
    /// Faults served, per kind.
    pub faults_by_kind: BTreeMap<FaultKind, u64>,
    /// Requests refused as invalid (4xx other than 429).
    pub invalid: u64,
    /// Input tokens of answered requests read from the prompt cache (part of `input_tokens`).
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens of answered requests written to the prompt cache (part of `input_tokens`;
    /// Anthropic and Bedrock only, the automatic caches report no writes).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl ModelStats {
    /// The share of answered input tokens read from the prompt cache (0 when none were answered).
    #[allow(clippy::cast_precision_loss)]
    pub fn cache_hit_ratio(&self) -> f64 {
        if self.input_tokens == 0 {
            0.0
        } else {
            self.cache_read_tokens as f64 / self.input_tokens as f64
        }
    }

    /// Settled tokens, input + output: what the requests were charged against a `tpm` limit.
    pub fn settled_tokens(&self) -> u64 {
        self.settled_input_tokens + self.settled_output_tokens
    }

    /// 429s served because limits of `kind` were exceeded.
    pub fn rate_limited_by(&self, kind: LimitKind) -> u64 {
        self.rate_limited_by_kind.get(&kind).copied().unwrap_or(0)
    }

    /// Settled tokens (input + output) per minute over `elapsed`: divided by a `tpm` figure, the
    /// utilisation of that limit.
    pub fn settled_tokens_per_minute(&self, elapsed: Duration) -> f64 {
        per_minute(self.settled_tokens(), elapsed)
    }

    /// Settled input tokens per minute over `elapsed` (for an `itpm` figure).
    pub fn settled_input_tokens_per_minute(&self, elapsed: Duration) -> f64 {
        per_minute(self.settled_input_tokens, elapsed)
    }

    /// Settled output tokens per minute over `elapsed` (for an `otpm` figure).
    pub fn settled_output_tokens_per_minute(&self, elapsed: Duration) -> f64 {
        per_minute(self.settled_output_tokens, elapsed)
    }

    /// Admitted requests per minute over `elapsed` (for an `rpm` figure).
    pub fn admitted_per_minute(&self, elapsed: Duration) -> f64 {
        per_minute(self.admitted, elapsed)
    }

    fn add(&mut self, other: &Self) {
        self.requests += other.requests;
        self.answered += other.answered;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.admitted += other.admitted;
        self.peak_in_flight = self.peak_in_flight.max(other.peak_in_flight);
        self.settled_input_tokens += other.settled_input_tokens;
        self.settled_output_tokens += other.settled_output_tokens;
        self.rate_limited += other.rate_limited;
        for (kind, n) in &other.rate_limited_by_kind {
            *self.rate_limited_by_kind.entry(*kind).or_default() += n;
        }
        self.faults += other.faults;
        self.invalid += other.invalid;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        for (kind, n) in &other.faults_by_kind {
            *self.faults_by_kind.entry(*kind).or_default() += n;
        }
    }
}

/// `count` per minute over `elapsed` (0 when no time passed).
#[allow(clippy::cast_precision_loss)]
fn per_minute(count: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 {
        count as f64 * 60.0 / secs
    } else {
        0.0
    }
}

/// A copy of the counters at one moment, as served by `GET /sim/stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatsSnapshot {
    /// Counters per model name.
    pub models: BTreeMap<String, ModelStats>,
    /// The sum over all models.
    pub totals: ModelStats,
}

impl StatsSnapshot {
    /// The counters of one model (zeros when it received nothing).
    pub fn model(&self, name: &str) -> ModelStats {
        self.models.get(name).cloned().unwrap_or_default()
    }
}

/// What happened to one request, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Answered { input: u64, output: u64 },
    RateLimited(LimitKind),
    Fault(FaultKind),
    Invalid,
}

/// The live counters.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    models: BTreeMap<String, ModelStats>,
}

impl Stats {
    pub(crate) fn record(&mut self, model: &str, outcome: Outcome) {
        let stats = match self.models.get_mut(model) {
            Some(stats) => stats,
            None => self.models.entry(model.to_owned()).or_default(),
        };
        stats.requests += 1;
        match outcome {
            Outcome::Answered { input, output } => {
                stats.answered += 1;
                stats.input_tokens += input;
                stats.output_tokens += output;
            }
            Outcome::RateLimited(kind) => {
                stats.rate_limited += 1;
                *stats.rate_limited_by_kind.entry(kind).or_default() += 1;
            }
            Outcome::Fault(kind) => {
                stats.faults += 1;
                *stats.faults_by_kind.entry(kind).or_default() += 1;
            }
            Outcome::Invalid => stats.invalid += 1,
        }
    }

    /// Counts a request admitted by the limits, with the requests then in flight.
    pub(crate) fn record_admitted(&mut self, model: &str, in_flight: u64) {
        let stats = self.entry(model);
        stats.admitted += 1;
        stats.peak_in_flight = stats.peak_in_flight.max(in_flight);
    }

    /// Counts what an admitted request was charged once settled.
    pub(crate) fn record_settled(&mut self, model: &str, input: u64, output: u64) {
        let stats = self.entry(model);
        stats.settled_input_tokens += input;
        stats.settled_output_tokens += output;
    }

    fn entry(&mut self, model: &str) -> &mut ModelStats {
        self.models.entry(model.to_owned()).or_default()
    }

    /// Counts the prompt cache use of an answered request.
    pub(crate) fn record_cache(&mut self, model: &str, read: u64, written: u64) {
        let stats = self.entry(model);
        stats.cache_read_tokens += read;
        stats.cache_write_tokens += written;
    }

    /// Counts a content fault on a request already recorded as answered.
    pub(crate) fn record_content_fault(&mut self, model: &str, kind: FaultKind) {
        let stats = self.models.entry(model.to_owned()).or_default();
        stats.faults += 1;
        *stats.faults_by_kind.entry(kind).or_default() += 1;
    }

    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        let mut totals = ModelStats::default();
        for stats in self.models.values() {
            totals.add(stats);
        }
        StatsSnapshot {
            models: self.models.clone(),
            totals,
        }
    }

    pub(crate) fn clear(&mut self) {
        self.models.clear();
    }
}

/// One logged request (kept when the configuration sets `log_bodies`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedRequest {
    /// The model named in the body.
    pub model: String,
    /// The endpoint path, for example `/v1/chat/completions`.
    pub endpoint: String,
    /// The sim's own input token count of the body.
    pub input_tokens: u64,
    /// When the request arrived (RFC 3339, UTC).
    pub timestamp: String,
    /// The request's headers as received (names lower-case, values lossy UTF-8), the
    /// authentication headers included.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The request body as received, parsed.
    pub body: Value,
    /// The request body's exact bytes as received (lossy UTF-8), for comparisons a re-serialised
    /// [`LoggedRequest::body`] cannot make (key order, number formats, escapes).
    #[serde(default)]
    pub raw_body: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_sum_models_and_faults_by_kind() {
        let mut stats = Stats::default();
        stats.record(
            "a",
            Outcome::Answered {
                input: 10,
                output: 5,
            },
        );
        stats.record("a", Outcome::Fault(FaultKind::Http500));
        stats.record("b", Outcome::RateLimited(LimitKind::OutputTokens));
        stats.record_admitted("a", 1);
        stats.record_admitted("b", 3);
        stats.record_settled("a", 10, 5);
        stats.record_settled("b", 1, 2);
        stats.record(
            "b",
            Outcome::Answered {
                input: 1,
                output: 2,
            },
        );
        stats.record_content_fault("b", FaultKind::WrongShape);
        let snap = stats.snapshot();
        assert_eq!(snap.model("a").requests, 2);
        assert_eq!(snap.totals.requests, 4);
        assert_eq!(snap.totals.input_tokens, 11);
        assert_eq!(snap.totals.output_tokens, 7);
        assert_eq!(snap.totals.rate_limited, 1);
        assert_eq!(snap.model("b").rate_limited_by(LimitKind::OutputTokens), 1);
        assert_eq!(snap.totals.rate_limited_by(LimitKind::Tokens), 0);
        assert_eq!(snap.totals.admitted, 2);
        assert_eq!(snap.totals.peak_in_flight, 3);
        assert_eq!(snap.totals.settled_tokens(), 18);
        let a = snap.model("a");
        assert_eq!(a.settled_tokens_per_minute(Duration::from_secs(30)), 30.0);
        assert_eq!(
            a.settled_input_tokens_per_minute(Duration::from_secs(60)),
            10.0
        );
        assert_eq!(
            a.settled_output_tokens_per_minute(Duration::from_secs(60)),
            5.0
        );
        assert_eq!(a.admitted_per_minute(Duration::from_secs(120)), 0.5);
        assert_eq!(a.admitted_per_minute(Duration::ZERO), 0.0);
        // As served by `GET /sim/stats` and read back by a benchmark.
        let json = serde_json::to_value(&snap).unwrap();
        assert_eq!(
            json["models"]["b"]["rate_limited_by_kind"]["output_tokens"],
            1
        );
        let back: StatsSnapshot = serde_json::from_value(json).unwrap();
        assert_eq!(back, snap);
        assert_eq!(snap.totals.faults, 2);
        assert_eq!(snap.totals.faults_by_kind[&FaultKind::WrongShape], 1);
        assert_eq!(snap.model("zzz"), ModelStats::default());
    }
}
