//! Token counts for admission reservations.
//!
//! Counting uses tiktoken's `o200k_base` encoding (built into the binary, loaded once on first use
//! and shared by every counter). It is exact for current OpenAI models' raw text and an estimate
//! for everything else, so each catalog entry carries a calibration factor learned from the input
//! usage the provider reports: an exponential moving average of `reported / counted`, clamped to
//! `[0.5, 3.0]`, starting at 1.0 for the OpenAI family and 1.2 for Anthropic (local counts
//! undercount Claude models). The ratio varies from request to request (a local count includes
//! the body's JSON framing, which a provider's count may not), so a reservation is priced above
//! the average: [`TokenCounter::estimate`] adds twice the moving mean deviation of the ratio, as
//! a round-trip estimator adds its variance. A reservation that undercounts could take the last
//! tokens of a window the provider has already spent.
//!
//! ## The cheap path
//!
//! A conversation's body is re-rendered on every turn with nearly everything unchanged, and
//! tokenizing grows with the whole conversation. [`TokenCounter::count_encoded`]
//! therefore counts an encoded request piece by piece: the encoder records the byte range of each
//! stable part (system content, each message, each tool schema, the answer schema), and each
//! part's count is cached under a hash of its bytes. On the next turn only the new messages (and
//! the few framing bytes between parts, themselves cached) are tokenized. The sum of the parts
//! can differ from a whole-body count by a token or so per part boundary, which is well inside the
//! calibration factor. The cache is bounded: it keeps two generations of at most half the
//! capacity each, and an entry used in the older generation moves to the newer one, so what
//! recent renders use stays while the rest ages out.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::llm::encoded::EncodedRequest;
use crate::llm::target::Dialect;

/// The lowest calibration factor.
pub const MIN_FACTOR: f64 = 0.5;
/// The highest calibration factor.
pub const MAX_FACTOR: f64 = 3.0;
/// The weight of a new observation in the moving average.
pub const CALIBRATION_WEIGHT: f64 = 0.2;
/// The default bound on cached part counts.
pub const DEFAULT_CACHE_CAPACITY: usize = 8192;

/// The calibration factor an entry starts with.
pub fn starting_factor(dialect: Dialect) -> f64 {
    match dialect {
        Dialect::Anthropic => 1.2,
        Dialect::OpenAi | Dialect::OpenAiCompatible => 1.0,
    }
}

/// Counts tokens, caches the counts of rendered parts, and learns per-entry calibration.
#[derive(Debug)]
pub struct TokenCounter {
    /// Part counts by the hash of their bytes.
    cache: Mutex<Generations>,
    factors: Mutex<foldhash::HashMap<String, Calibration>>,
}

/// What an entry learned: the mean ratio of reported to counted tokens and its mean deviation.
#[derive(Debug, Clone, Copy)]
struct Calibration {
    factor: f64,
    deviation: f64,
}

impl Calibration {
    fn starting(factor: f64) -> Self {
        Self {
            factor,
            deviation: 0.0,
        }
    }
}

/// How many mean deviations of the calibration ratio a reservation adds above its mean.
pub const RESERVATION_DEVIATIONS: f64 = 2.0;

impl Default for TokenCounter {
    fn default() -> Self {
        Self::new()
    }
}

/// Counts by key in two generations of at most `limit` entries each: a new count goes into the
/// current one, which becomes the previous one (dropping the older) when it is full; a count
/// found in the previous generation moves to the current one.
#[derive(Debug)]
struct Generations {
    current: HashMap<u64, u64>,
    previous: HashMap<u64, u64>,
    limit: usize,
}

impl Generations {
    fn new(limit: usize) -> Self {
        Self {
            current: HashMap::new(),
            previous: HashMap::new(),
            limit,
        }
    }

    fn get(&mut self, key: u64) -> Option<u64> {
        if let Some(&n) = self.current.get(&key) {
            return Some(n);
        }
        let n = self.previous.remove(&key)?;
        self.insert(key, n);
        Some(n)
    }

    fn insert(&mut self, key: u64, n: u64) {
        if self.current.len() >= self.limit && !self.current.contains_key(&key) {
            self.previous = std::mem::take(&mut self.current);
        }
        self.current.insert(key, n);
    }

    fn len(&self) -> usize {
        self.current.len() + self.previous.len()
    }
}

/// The cache key of a part: a 64-bit XXH3 hash of its bytes.
fn hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

impl TokenCounter {
    /// A counter with the default cache bound.
    pub fn new() -> Self {
        Self::with_cache_capacity(DEFAULT_CACHE_CAPACITY)
    }

    /// A counter caching at most `capacity` part counts.
    pub fn with_cache_capacity(capacity: usize) -> Self {
        Self {
            cache: Mutex::new(Generations::new((capacity / 2).max(1))),
            factors: Mutex::new(foldhash::HashMap::default()),
        }
    }

    /// Count the tokens of a text (no cache).
    pub fn count_str(&self, text: &str) -> u64 {
        tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(text)
            .len() as u64
    }

    /// Count the tokens of bytes (invalid UTF-8 is replaced; no cache).
    pub fn count_bytes(&self, bytes: &[u8]) -> u64 {
        self.count_str(&String::from_utf8_lossy(bytes))
    }

    /// Count the tokens of bytes, using and filling the cache.
    pub fn count_cached(&self, bytes: &[u8]) -> u64 {
        if bytes.is_empty() {
            return 0;
        }
        let key = hash(bytes);
        {
            let mut g = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(n) = g.get(key) {
                return n;
            }
        }
        // Counted outside the lock: tokenizing is the slow part.
        let n = self.count_bytes(bytes);
        let mut g = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        g.insert(key, n);
        n
    }

    /// How many part counts are cached.
    pub fn cached_parts(&self) -> usize {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Count an encoded request's body incrementally: each recorded part from the cache, the
    /// framing between parts as one more cached piece.
    pub fn count_encoded(&self, enc: &EncodedRequest) -> u64 {
        let body = &enc.body[..];
        let mut framing = Vec::with_capacity(256);
        let mut at = 0;
        let mut total = 0;
        for r in &enc.segments {
            if r.start < at || r.end > body.len() {
                // Not a well-formed layout; fall back to counting everything.
                return self.count_bytes(body);
            }
            framing.extend_from_slice(&body[at..r.start]);
            total += self.count_cached(&body[r.clone()]);
            at = r.end;
        }
        framing.extend_from_slice(&body[at..]);
        total + self.count_cached(&framing)
    }

    /// Give an entry the starting factor of its dialect, unless it already has one.
    pub fn register(&self, entry_id: &str, dialect: Dialect) {
        let mut f = self.factors.lock().unwrap_or_else(PoisonError::into_inner);
        f.entry(entry_id.to_owned())
            .or_insert_with(|| Calibration::starting(starting_factor(dialect)));
    }

    /// The entry's current mean factor (1.0 for an entry never registered nor calibrated).
    pub fn factor(&self, entry_id: &str) -> f64 {
        self.calibration(entry_id).factor
    }

    fn calibration(&self, entry_id: &str) -> Calibration {
        let f = self.factors.lock().unwrap_or_else(PoisonError::into_inner);
        f.get(entry_id)
            .copied()
            .unwrap_or(Calibration::starting(1.0))
    }

    /// Learn from one call: `counted` locally, `reported` by the provider (all input tokens).
    pub fn calibrate(&self, entry_id: &str, counted: u64, reported: u64) {
        if counted == 0 || reported == 0 {
            return;
        }
        let ratio = reported as f64 / counted as f64;
        let mut f = self.factors.lock().unwrap_or_else(PoisonError::into_inner);
        // Looked up first: the entry is nearly always there, and `entry` would copy the id.
        if !f.contains_key(entry_id) {
            f.insert(entry_id.to_owned(), Calibration::starting(1.0));
        }
        let Some(c) = f.get_mut(entry_id) else {
            return;
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Message;
    use crate::llm::{ChatRequest, WireTarget, encode};
    use std::sync::Arc;

    #[test]
    fn counts_match_tiktoken() {
        let c = TokenCounter::new();
        assert_eq!(c.count_str(""), 0);
        let n = c.count_str("The quick brown fox jumps over the lazy dog.");
        assert!((9..=11).contains(&n), "{n}");
        assert_eq!(c.count_bytes(b"hello world"), c.count_str("hello world"));
    }

    #[test]
    fn incremental_counts_reuse_cached_parts_and_stay_close() -> anyhow::Result<()> {
        let c = TokenCounter::new();
        let target = WireTarget::new(Dialect::OpenAi, "http://x/v1", "gpt");
        let mut req = ChatRequest::new(
            "You are a careful assistant who answers briefly.",
            vec![Message::user_text("What is the capital of France?")],
        );
        let first = encode(&target, &req)?;
        let incremental = c.count_encoded(&first);
        let full = c.count_bytes(&first.body);
        assert!(incremental.abs_diff(full) <= 4, "{incremental} vs {full}");
        let parts = c.cached_parts();
        Arc::make_mut(&mut req.messages).extend([
            Message::assistant_text("Paris."),
            Message::user_text("And of Spain?"),
        ]);
        let second = encode(&target, &req)?;
        let incremental = c.count_encoded(&second);
        let full = c.count_bytes(&second.body);
        assert!(incremental.abs_diff(full) <= 6, "{incremental} vs {full}");
        // Only the two new messages and the changed framing were counted afresh.
        assert_eq!(c.cached_parts(), parts + 3);
        Ok(())
    }

    #[test]
    fn the_cache_stays_bounded() {
        let c = TokenCounter::with_cache_capacity(8);
        for i in 0..100 {
            c.count_cached(format!("part number {i}").as_bytes());
        }
        assert!(c.cached_parts() <= 8);
        // A recently used part survives a generation change.
        c.count_cached(b"keep me");
        for i in 0..3 {
            c.count_cached(format!("other {i}").as_bytes());
        }
        assert_eq!(c.count_cached(b"keep me"), c.count_str("keep me"));
    }

    #[test]
    fn a_reservation_covers_the_spread_of_the_reports() {
        let c = TokenCounter::new();
        c.register("gpt", Dialect::OpenAi);
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
        c.register("claude", Dialect::Anthropic);
        c.register("gpt", Dialect::OpenAi);
        assert_eq!(c.factor("claude"), 1.2);
        assert_eq!(c.factor("gpt"), 1.0);
        assert_eq!(c.estimate("claude", 1000), 1200);
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
        c.register("gpt", Dialect::OpenAi);
        assert!((c.factor("gpt") - 1.3).abs() < 0.01);
    }
}
