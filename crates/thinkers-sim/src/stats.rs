//! Counters of what reached the sim, per model and in total, and the optional request log.
//!
//! What counts:
//! - `requests`: every request to a model endpoint that named a served model (refused ones too);
//! - `answered`: requests that got a model answer (what a provider bills);
//! - `input_tokens` / `output_tokens`: the sim's own counts for answered requests (requests that
//!   got a model answer, including answers altered by a fault);
//! - `rate_limited`: 429s served because a real TPM/RPM limit was exceeded (an injected
//!   `rate_limit_429` fault counts under `faults` instead);
//! - `faults`: faults served, in total and per kind;
//! - `invalid`: requests refused with a 4xx other than 429 (bad body, unsupported parameter…).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fault::FaultKind;

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
    /// 429s served because a limit was exceeded.
    pub rate_limited: u64,
    /// Faults served.
    pub faults: u64,
    /// Faults served, per kind.
    pub faults_by_kind: BTreeMap<FaultKind, u64>,
    /// Requests refused as invalid (4xx other than 429).
    pub invalid: u64,
}

impl ModelStats {
    fn add(&mut self, other: &Self) {
        self.requests += other.requests;
        self.answered += other.answered;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.rate_limited += other.rate_limited;
        self.faults += other.faults;
        self.invalid += other.invalid;
        for (kind, n) in &other.faults_by_kind {
            *self.faults_by_kind.entry(*kind).or_default() += n;
        }
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
    RateLimited,
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
            Outcome::RateLimited => stats.rate_limited += 1,
            Outcome::Fault(kind) => {
                stats.faults += 1;
                *stats.faults_by_kind.entry(kind).or_default() += 1;
            }
            Outcome::Invalid => stats.invalid += 1,
        }
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
        stats.record("b", Outcome::RateLimited);
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
        assert_eq!(snap.totals.faults, 2);
        assert_eq!(snap.totals.faults_by_kind[&FaultKind::WrongShape], 1);
        assert_eq!(snap.model("zzz"), ModelStats::default());
    }
}
