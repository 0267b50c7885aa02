//! Token counts for admission reservations.
//!
//! A reservation is priced from the exact body that will be sent. By default the count is an
//! estimate from the body's length, `⌈bytes / 4⌉` ([`BYTES_PER_TOKEN`]), which costs nothing to
//! compute and needs no tokenizer table in memory. Each catalog entry then learns how the
//! provider's own count compares: a calibration factor, the exponential moving average of
//! `reported / counted` over the input usage the provider reports, clamped to
//! `[MIN_FACTOR, MAX_FACTOR]`. Before the first report an entry starts above any real tokenizer's
//! count of a JSON body (factor 1.5, so `⌈bytes / 2.7⌉`; 1.8 for Anthropic, whose tokenizer
//! counts more tokens for the same text), so the first calls overcount rather than undercount.
//!
//! An entry whose provider's tokenizer is `o200k_base` (current OpenAI models) can ask for an
//! exact count instead (`tokenizer = "o200k_base"` in the catalog, [`Tokenizer::O200kBase`]):
//! tiktoken's table is then loaded on that entry's first call (about 0.1–0.2 s of CPU and tens of
//! MB of memory, paid only by programs that ask for it) and the whole body is counted each call.
//! The same calibration applies, starting at 1.0.
//!
//! The ratio varies from request to request, so a reservation is priced above the average:
//! [`TokenCounter::estimate`] adds twice the moving mean deviation of the ratio, as a round-trip
//! estimator adds its variance. A reservation that undercounts could take the last tokens of a
//! window the provider has already spent.

use std::sync::{Mutex, PoisonError};

pub use crate::model::Tokenizer;

use crate::llm::encoded::EncodedRequest;
use crate::llm::target::Dialect;

/// The lowest calibration factor (a provider counting one token per 16 bytes of body).
pub const MIN_FACTOR: f64 = 0.25;
/// The highest calibration factor (one token per byte).
pub const MAX_FACTOR: f64 = 4.0;
/// The weight of a new observation in the moving average.
pub const CALIBRATION_WEIGHT: f64 = 0.2;
/// Bytes per token of the length estimate, before calibration.
pub const BYTES_PER_TOKEN: usize = 4;

impl Tokenizer {
    /// Load what this tokenizer counts with now rather than on the first model call that needs
    /// it: for [`Tokenizer::O200kBase`], tiktoken's table (about 0.1–0.2 s of CPU, loaded once
    /// per process); [`Tokenizer::Estimate`] has nothing to load. Call it at start-up (for
    /// example `entry.tokenizer().preload()` for each entry of the catalog) when the first
    /// call's latency matters.
    pub fn preload(self) {
        if self == Self::O200kBase {
            let _ = o200k_count(b"");
        }
    }
}

/// The calibration factor an entry starts with.
pub fn starting_factor(dialect: Dialect, tokenizer: Tokenizer) -> f64 {
    match (tokenizer, dialect) {
        (Tokenizer::O200kBase, _) => 1.0,
        // Bedrock mostly serves Anthropic's models, whose tokenizer counts more than the estimate.
        (Tokenizer::Estimate, Dialect::Anthropic | Dialect::BedrockConverse) => 1.8,
        (
            Tokenizer::Estimate,
            Dialect::OpenAi
            | Dialect::OpenAiCompatible
            | Dialect::OpenAiResponses
            | Dialect::Gemini,
        ) => 1.5,
    }
}

/// Counts tokens and learns per-entry calibration.
#[derive(Debug, Default)]
pub struct TokenCounter {
    entries: Mutex<foldhash::HashMap<String, Calibration>>,
}

/// What an entry counts with and what it learned: the mean ratio of reported to counted tokens
/// and its mean deviation.
#[derive(Debug, Clone, Copy)]
struct Calibration {
    tokenizer: Tokenizer,
    factor: f64,
    deviation: f64,
}

impl Calibration {
    fn starting(tokenizer: Tokenizer, factor: f64) -> Self {
        Self {
            tokenizer,
            factor,
            deviation: 0.0,
        }
    }
}

/// How many mean deviations of the calibration ratio a reservation adds above its mean.
pub const RESERVATION_DEVIATIONS: f64 = 2.0;

impl TokenCounter {
    /// A counter that knows no entry yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The length estimate of bytes: `⌈len / 4⌉`.
    pub(crate) fn count_bytes(&self, bytes: &[u8]) -> u64 {
        bytes.len().div_ceil(BYTES_PER_TOKEN) as u64
    }

    /// The length estimate of a text.
    pub fn count_str(&self, text: &str) -> u64 {
        self.count_bytes(text.as_bytes())
    }

    /// The length estimate of an encoded request's body (for a count without an entry).
    pub fn count_encoded(&self, enc: &EncodedRequest) -> u64 {
        self.count_bytes(&enc.body)
    }

    /// Count a request body as `entry_id` counts it: with its tokenizer, or the length estimate
    /// for an entry that has none or was never registered.
    pub fn count_for(&self, entry_id: &str, body: &[u8]) -> u64 {
        match self.calibration(entry_id).tokenizer {
            Tokenizer::Estimate => self.count_bytes(body),
            Tokenizer::O200kBase => o200k_count(body),
        }
    }

    /// Give an entry its tokenizer and the starting factor for it, unless it already has them.
    pub fn register(&self, entry_id: &str, dialect: Dialect, tokenizer: Tokenizer) {
        let mut f = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        f.entry(entry_id.to_owned()).or_insert_with(|| {
            Calibration::starting(tokenizer, starting_factor(dialect, tokenizer))
        });
    }

    /// The entry's current mean factor (1.0 for an entry never registered nor calibrated).
    #[cfg(test)]
    pub(crate) fn factor(&self, entry_id: &str) -> f64 {
        self.calibration(entry_id).factor
    }

    fn calibration(&self, entry_id: &str) -> Calibration {
        let f = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        f.get(entry_id)
            .copied()
            .unwrap_or(Calibration::starting(Tokenizer::Estimate, 1.0))
    }

    /// Learn from one call: `counted` locally, `reported` by the provider (all input tokens).
    pub fn calibrate(&self, entry_id: &str, counted: u64, reported: u64) {
        if counted == 0 || reported == 0 {
            return;
        }
        let ratio = reported as f64 / counted as f64;
        let mut f = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let c = f
            .entry(entry_id.to_owned())
            .or_insert(Calibration::starting(Tokenizer::Estimate, 1.0));
        let error = ratio - c.factor;
        c.factor = (c.factor + CALIBRATION_WEIGHT * error).clamp(MIN_FACTOR, MAX_FACTOR);
        c.deviation += CALIBRATION_WEIGHT * (error.abs().min(MAX_FACTOR) - c.deviation);
    }

    /// What the provider will count for `counted` local tokens, priced for a reservation: the
    /// mean factor plus twice its mean deviation (at most [`MAX_FACTOR`]), rounded up.
    pub fn estimate(&self, entry_id: &str, counted: u64) -> u64 {
        let c = self.calibration(entry_id);
        let factor = (c.factor + RESERVATION_DEVIATIONS * c.deviation).min(MAX_FACTOR);
        (counted as f64 * factor).ceil() as u64
    }
}

/// The exact `o200k_base` count of bytes (invalid UTF-8 replaced). The table is loaded on the
/// first call in the process.
fn o200k_count(bytes: &[u8]) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(&String::from_utf8_lossy(bytes))
        .len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::message::Message;
    use crate::llm::{ChatRequest, WireTarget, encode};

    #[test]
    fn the_estimate_is_the_length_over_four_rounded_up() {
        let c = TokenCounter::new();
        assert_eq!(c.count_str(""), 0);
        assert_eq!(c.count_str("abc"), 1);
        assert_eq!(c.count_str("abcd"), 1);
        assert_eq!(c.count_str("abcde"), 2);
        assert_eq!(c.count_bytes(b"hello world"), c.count_str("hello world"));
    }

    #[test]
    fn an_entry_counts_with_its_tokenizer() -> anyhow::Result<()> {
        let c = TokenCounter::new();
        c.register("exact", Dialect::OpenAi, Tokenizer::O200kBase);
        c.register("rough", Dialect::OpenAi, Tokenizer::Estimate);
        let target = WireTarget::new(Dialect::OpenAi, "http://x/v1", "gpt");
        let req = ChatRequest::new(
            "You are a careful assistant who answers briefly.",
            vec![Message::user_text("What is the capital of France?")],
        );
        let enc = encode(&target, &req)?;
        let exact = c.count_for("exact", &enc.body);
        assert_eq!(exact, o200k_count(&enc.body));
        assert_ne!(
            exact,
            c.count_encoded(&enc),
            "the body is not a multiple of 4 tokens"
        );
        assert_eq!(c.count_for("rough", &enc.body), c.count_encoded(&enc));
        assert_eq!(c.count_for("unknown", &enc.body), c.count_encoded(&enc));
        assert_eq!(c.factor("exact"), 1.0);
        assert_eq!(c.factor("rough"), 1.5);
        Ok(())
    }

    #[test]
    fn tokenizer_names_round_trip() {
        for name in Tokenizer::NAMES {
            let t = Tokenizer::from_name(name).expect("a listed name parses");
            assert_eq!(serde_json::to_value(t).ok(), Some(serde_json::json!(name)));
        }
        assert_eq!(Tokenizer::from_name("cl100k"), None);
    }

    #[test]
    fn a_reservation_covers_the_spread_of_the_reports() {
        let c = TokenCounter::new();
        c.register("gpt", Dialect::OpenAi, Tokenizer::O200kBase);
        // Reports alternate 10% under and 10% over the mean: an average alone would undercount
        // every other request.
        for i in 0..100 {
            let reported = if i % 2 == 0 { 900 } else { 1100 };
            c.calibrate("gpt", 1000, reported);
        }
        assert!((c.factor("gpt") - 1.0).abs() < 0.03, "{}", c.factor("gpt"));
        let estimate = c.estimate("gpt", 1000);
        assert!((1100..=1300).contains(&estimate), "{estimate}");
        // Steady reports leave no margin to speak of.
        for _ in 0..100 {
            c.calibrate("gpt", 1000, 1000);
        }
        assert!(
            c.estimate("gpt", 1000) <= 1001,
            "{}",
            c.estimate("gpt", 1000)
        );
    }

    #[test]
    fn calibration_moves_towards_reports_within_bounds() {
        let c = TokenCounter::new();
        c.register("claude", Dialect::Anthropic, Tokenizer::Estimate);
        c.register("gpt", Dialect::OpenAi, Tokenizer::Estimate);
        assert_eq!(c.factor("claude"), 1.8);
        assert_eq!(c.factor("gpt"), 1.5);
        assert_eq!(c.estimate("claude", 1000), 1800);
        for _ in 0..50 {
            c.calibrate("gpt", 1000, 1300);
        }
        assert!((c.factor("gpt") - 1.3).abs() < 0.01);
        for _ in 0..50 {
            c.calibrate("wild", 100, 10_000);
        }
        assert_eq!(c.factor("wild"), MAX_FACTOR);
        for _ in 0..50 {
            c.calibrate("wild", 10_000, 1);
        }
        assert_eq!(c.factor("wild"), MIN_FACTOR);
        c.calibrate("gpt", 0, 10);
        assert!((c.factor("gpt") - 1.3).abs() < 0.01);
        // Registering again keeps what was learned.
        c.register("gpt", Dialect::OpenAi, Tokenizer::Estimate);
        assert!((c.factor("gpt") - 1.3).abs() < 0.01);
    }
}
