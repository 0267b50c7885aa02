//! Strings matching a JSON Schema `pattern`.
//!
//! The pattern is parsed with `regex-syntax`; anchors and word boundaries are dropped (a string
//! that matches the whole unanchored expression also matches the anchored one, since the
//! generated string *is* the whole match), and every character class is narrowed to printable
//! ASCII when it has any, so `\d`, `\w` and `.` give the characters an ECMA-262 validator expects.
//! The HIR is then sampled with `rand_regex`, and each sample is checked against the original
//! pattern (unanchored search, as JSON Schema specifies) with the `regex` crate, so dropped
//! assertions such as `\b` cannot let a wrong sample through.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rand::Rng;
use rand::rngs::StdRng;
use regex_syntax::hir::{
    Capture, Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Repetition,
};

/// The longest repetition `*` and `+` expand to.
const MAX_REPEAT: u32 = 6;

/// Samples a string matching `pattern` whose length (in chars) lies in `[min_len, max_len]`.
/// Returns `None` when the pattern cannot be parsed or no sample fits after a few tries.
pub(crate) fn sample(
    pattern: &str,
    min_len: usize,
    max_len: Option<usize>,
    rng: &mut StdRng,
) -> Option<String> {
    let compiled = compiled(pattern)?;
    let (generator, checker) = (&compiled.0, &compiled.1);
    for _ in 0..32 {
        let candidate: String = rng.sample(generator);
        let len = candidate.chars().count();
        if len >= min_len && max_len.is_none_or(|max| len <= max) && checker.is_match(&candidate) {
            return Some(candidate);
        }
    }
    None
}

/// One of `words` that matches `pattern` within the length bounds, picked at random; `None`
/// when none does or the pattern cannot be parsed. A model copies identifiers it has read (an
/// artifact ref, an id from a tool result) rather than inventing new ones.
pub(crate) fn quote(
    pattern: &str,
    min_len: usize,
    max_len: Option<usize>,
    words: &[String],
    rng: &mut StdRng,
) -> Option<String> {
    if words.is_empty() {
        return None;
    }
    let compiled = compiled(pattern)?;
    let fitting: Vec<&String> = words
        .iter()
        .filter(|w| {
            let len = w.chars().count();
            len >= min_len && max_len.is_none_or(|max| len <= max) && compiled.1.is_match(w)
        })
        .collect();
    if fitting.is_empty() {
        return None;
    }
    Some(fitting[rng.random_range(0..fitting.len())].clone())
}

/// A pattern's generator and checker.
type Compiled = Arc<(rand_regex::Regex, regex::Regex)>;

/// The most patterns kept compiled; the cache is emptied when it fills.
const CACHE_SIZE: usize = 256;

/// Compiles `pattern` once: tool schemas are offered again on every turn of a conversation.
fn compiled(pattern: &str) -> Option<Compiled> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Compiled>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(hit) = cache.get(pattern) {
        return hit.clone();
    }
    let built = build(pattern);
    if cache.len() >= CACHE_SIZE {
        cache.clear();
    }
    cache.insert(pattern.to_owned(), built.clone());
    built
}

fn build(pattern: &str) -> Option<Compiled> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .ok()?;
    let generator = rand_regex::Regex::with_hir(ascii_only(&hir), MAX_REPEAT).ok()?;
    let checker = regex::Regex::new(pattern).ok()?;
    Some(Arc::new((generator, checker)))
}

/// Rewrites a HIR without look-around assertions and with classes narrowed to printable ASCII.
fn ascii_only(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Hir::empty(),
        HirKind::Literal(lit) => Hir::literal(lit.0.clone()),
        HirKind::Class(Class::Unicode(class)) => {
            let mut narrowed = class.clone();
            narrowed.intersect(&ClassUnicode::new([ClassUnicodeRange::new(' ', '~')]));
            if narrowed.ranges().is_empty() {
                Hir::class(Class::Unicode(class.clone()))
            } else {
                Hir::class(Class::Unicode(narrowed))
            }
        }
        HirKind::Class(Class::Bytes(class)) => Hir::class(Class::Bytes(class.clone())),
        HirKind::Repetition(rep) => Hir::repetition(Repetition {
            min: rep.min,
            max: rep.max,
            greedy: rep.greedy,
            sub: Box::new(ascii_only(&rep.sub)),
        }),
        HirKind::Capture(cap) => Hir::capture(Capture {
            index: cap.index,
            name: cap.name.clone(),
            sub: Box::new(ascii_only(&cap.sub)),
        }),
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(ascii_only).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(ascii_only).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn samples_match_anchored_patterns_in_ascii() {
        let mut rng = StdRng::seed_from_u64(1);
        for pattern in [
            r"^\d{3}-[A-Z]{2}$",
            r"^[a-z_]+\.\w{2,4}$",
            r"^\w{4}\b.{2}$",
            r"ab|cd",
        ] {
            let matcher = regex_lite(pattern);
            for _ in 0..20 {
                let s = sample(pattern, 0, None, &mut rng).unwrap();
                assert!(s.is_ascii(), "{s:?}");
                assert!(matcher(&s), "{s:?} does not match {pattern}");
            }
        }
    }

    #[test]
    fn lengths_are_respected_or_refused() {
        let mut rng = StdRng::seed_from_u64(2);
        let s = sample("[a-z]+", 3, Some(4), &mut rng).unwrap();
        assert!((3..=4).contains(&s.len()));
        assert_eq!(sample("abc", 5, None, &mut rng), None);
        assert_eq!(sample("(unclosed", 0, None, &mut rng), None);
    }

    /// A matcher built from jsonschema's own `pattern` support, so the test checks what a
    /// validator would say.
    fn regex_lite(pattern: &str) -> impl Fn(&str) -> bool {
        let schema = serde_json::json!({"type": "string", "pattern": pattern});
        let validator = jsonschema::validator_for(&schema).unwrap();
        move |s: &str| validator.is_valid(&serde_json::json!(s))
    }
}
