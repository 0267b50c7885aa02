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
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use crate::llm::tokens::Prehashed;

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

type Entries = HashMap<u64, Entry, BuildHasherDefault<Prehashed>>;

#[derive(Default)]
struct Generations {
    current: Entries,
    current_bytes: usize,
    previous: Entries,
}

impl Generations {
    /// The entry for `text`, made current, or `None`.
    fn get(&mut self, key: u64, text: &str) -> Option<&Entry> {
        if self.current.get(&key).is_none_or(|e| &*e.text != text) {
            let moved = self.previous.remove(&key).filter(|e| &*e.text == text)?;
            self.insert(key, moved);
        }
        self.current.get(&key)
    }

    fn insert(&mut self, key: u64, entry: Entry) {
        if self.current_bytes + entry.bytes() > GENERATION_BYTES {
            self.previous = std::mem::take(&mut self.current);
            self.current_bytes = 0;
        }
        self.current_bytes += entry.bytes();
        if let Some(old) = self.current.insert(key, entry) {
            self.current_bytes -= old.bytes();
        }
    }
}

thread_local! {
    static ESCAPED: RefCell<Generations> = RefCell::new(Generations::default());
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
            if g.get(key, text).is_none() {
                match serde_json::to_string(text).map(RawValue::from_string) {
                    Ok(Ok(json)) => g.insert(
                        key,
                        Entry {
                            text: text.into(),
                            json,
                        },
                    ),
                    _ => return s.serialize_str(text),
                }
            }
            match g.current.get(&key) {
                Some(entry) => entry.json.serialize(s),
                None => s.serialize_str(text),
            }
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
    fn strings_with_one_hash_are_told_apart_by_their_text() -> anyhow::Result<()> {
        let mut g = Generations::default();
        let a = "a".repeat(100);
        g.insert(
            7,
            Entry {
                text: a.as_str().into(),
                json: RawValue::from_string(format!("\"{a}\""))?,
            },
        );
        assert!(g.get(7, &a).is_some());
        assert!(g.get(7, &"b".repeat(100)).is_none());
        Ok(())
    }

    #[test]
    fn the_cache_stays_within_two_generations_of_bytes() -> anyhow::Result<()> {
        let mut g = Generations::default();
        for i in 0..2_000u64 {
            let text = format!("{i:04}{}", "z".repeat(4_000));
            let json = RawValue::from_string(serde_json::to_string(&text)?)?;
            g.insert(
                i,
                Entry {
                    text: text.into(),
                    json,
                },
            );
            let held: usize = g
                .current
                .values()
                .chain(g.previous.values())
                .map(Entry::bytes)
                .sum();
            assert!(held <= 2 * GENERATION_BYTES, "{held} bytes held after {i}");
        }
        // The newest is kept, the oldest aged out.
        assert!(
            g.get(1_999, &format!("1999{}", "z".repeat(4_000)))
                .is_some()
        );
        assert!(g.get(0, &format!("0000{}", "z".repeat(4_000))).is_none());
        Ok(())
    }
}
