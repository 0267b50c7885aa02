//! Long strings of a request body, escaped into JSON once.
//!
//! A conversation's body is written anew on every turn, and nearly all of its text (the system
//! content, every earlier message) is what the turn before carried. Escaping a string costs a
//! branch per byte; [`JsonStr`] keeps the escaped form of recent long strings, per thread, so a
//! body copies those bytes instead. A hit is checked against the whole text, not only its hash,
//! so a body always carries exactly the string it was given.
//!
//! The cache is bounded by bytes: two generations of at most [`GENERATION_BYTES`] of text and
//! escaped JSON each, per thread that encodes; a string used from the older generation moves to
//! the newer one, so what recent bodies carry stays while the rest ages out. Strings shorter than
//! [`MIN_BYTES`] (the lookup would cost as much as the escaping) or longer than [`MAX_BYTES`] are
//! escaped each time.

use std::borrow::Cow;
use std::cell::RefCell;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use crate::llm::generations::Generations;

/// The shortest string kept escaped.
const MIN_BYTES: usize = 64;
/// The longest string kept escaped.
const MAX_BYTES: usize = 64 * 1024;
/// The bytes one generation of one thread's cache holds at most.
const GENERATION_BYTES: usize = 1024 * 1024;

struct Entry {
    text: Box<str>,
    json: Box<RawValue>,
}

impl Entry {
    fn bytes(&self) -> usize {
        self.text.len() + self.json.get().len()
    }
}

thread_local! {
    static ESCAPED: RefCell<Generations<Entry>> =
        RefCell::new(Generations::new(GENERATION_BYTES, Entry::bytes));
}

/// A string serialized as JSON exactly as `serialize_str` would write it, from the escaped form
/// this thread kept when the string is long and was seen recently.
pub(crate) struct JsonStr<'a>(pub(crate) Cow<'a, str>);

impl<'a> From<&'a str> for JsonStr<'a> {
    fn from(s: &'a str) -> Self {
        Self(Cow::Borrowed(s))
    }
}

impl From<String> for JsonStr<'_> {
    fn from(s: String) -> Self {
        Self(Cow::Owned(s))
    }
}

impl Serialize for JsonStr<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text: &str = &self.0;
        if !(MIN_BYTES..=MAX_BYTES).contains(&text.len()) {
            return s.serialize_str(text);
        }
        let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
        ESCAPED.with(|cell| {
            // Serializing never re-enters this cache, so the borrow is always free; should it
            // not be, the string is escaped as usual.
            let Ok(mut g) = cell.try_borrow_mut() else {
                return s.serialize_str(text);
            };
            if let Some(kept) = g.get(key, |e| &*e.text == text) {
                return kept.json.serialize(s);
            }
            let Ok(Ok(json)) = serde_json::to_string(text).map(RawValue::from_string) else {
                return s.serialize_str(text);
            };
            let entry = Entry {
                text: text.into(),
                json,
            };
            g.insert(key, entry).json.serialize(s)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_string_serializes_exactly_as_an_escaped_one() -> anyhow::Result<()> {
        let texts = [
            "short".to_owned(),
            format!(
                "quotes \" and \\ and\nnewlines\tand é and \u{1} {}",
                "x".repeat(80)
            ),
            "y".repeat(MAX_BYTES + 1),
        ];
        for t in &texts {
            // Twice: the first writes and keeps it, the second copies the kept form.
            for _ in 0..2 {
                assert_eq!(
                    serde_json::to_string(&JsonStr::from(t.as_str()))?,
                    serde_json::to_string(t)?
                );
            }
        }
        Ok(())
    }

    #[test]
    fn the_cache_stays_within_two_generations_of_bytes() -> anyhow::Result<()> {
        let mut g = Generations::new(GENERATION_BYTES, Entry::bytes);
        let text = |i: u64| format!("{i:04}{}", "z".repeat(4_000));
        for i in 0..2_000u64 {
            let json = RawValue::from_string(serde_json::to_string(&text(i))?)?;
            g.insert(
                i,
                Entry {
                    text: text(i).into(),
                    json,
                },
            );
            assert!(
                g.weight() <= 2 * GENERATION_BYTES,
                "{} bytes held after {i}",
                g.weight()
            );
        }
        // The newest is kept, the oldest aged out.
        assert!(g.get(1_999, |e| *e.text == text(1_999)).is_some());
        assert!(g.get(0, |e| *e.text == text(0)).is_none());
        Ok(())
    }
}
