//! Long strings of a request body, escaped into JSON once.
//!
//! A conversation's body is written anew on every turn, and nearly all of its text (the system
//! content, every earlier message) is what the turn before carried. Escaping a string costs a
//! branch per byte; [`write_str`] keeps the escaped form of recent long strings, per thread, so a
//! body copies those bytes instead. A hit is checked against the whole text, not only its hash,
//! so a body always carries exactly the string it was given.
//!
//! The cache is bounded by bytes: two generations of at most [`GENERATION_BYTES`] of text and
//! escaped JSON each, per thread that encodes; a string used from the older generation moves to
//! the newer one, so what recent bodies carry stays while the rest ages out. Strings shorter than
//! [`MIN_BYTES`] (the lookup would cost as much as the escaping) or longer than [`MAX_BYTES`] are
//! escaped each time.

use std::cell::RefCell;

use crate::llm::generations::Generations;

/// The shortest string kept escaped.
const MIN_BYTES: usize = 64;
/// The longest string kept escaped.
const MAX_BYTES: usize = 64 * 1024;
/// The bytes one generation of one thread's cache holds at most.
const GENERATION_BYTES: usize = 1024 * 1024;

struct Entry {
    text: Box<str>,
    /// The JSON string: quoted and escaped.
    json: Box<[u8]>,
}

impl Entry {
    fn bytes(&self) -> usize {
        self.text.len() + self.json.len()
    }
}

thread_local! {
    static ESCAPED: RefCell<Generations<Entry>> =
        RefCell::new(Generations::new(GENERATION_BYTES, Entry::bytes));
}

/// Write `text` as a JSON string (quoted and escaped), byte for byte as serde_json writes it,
/// copying the escaped form this thread kept when the string is long and was seen recently.
pub(crate) fn write_str(buf: &mut Vec<u8>, text: &str) {
    if !(MIN_BYTES..=MAX_BYTES).contains(&text.len()) {
        escape_into(buf, text);
        return;
    }
    let key = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
    ESCAPED.with(|cell| {
        // Writing never re-enters this cache, so the borrow is always free; should it not be,
        // the string is escaped as usual.
        let Ok(mut g) = cell.try_borrow_mut() else {
            escape_into(buf, text);
            return;
        };
        if let Some(kept) = g.get(key, |e| &*e.text == text) {
            buf.extend_from_slice(&kept.json);
            return;
        }
        let start = buf.len();
        escape_into(buf, text);
        let entry = Entry {
            text: text.into(),
            json: buf[start..].into(),
        };
        g.insert(key, entry);
    });
}

/// How each byte is written inside a JSON string: `0` as it is, `b'u'` as `\u00XX`, any other
/// as a backslash and that letter (serde_json's choice: the two-letter escapes where JSON has
/// them, `\u00XX` for the other control characters, nothing else escaped).
static ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

/// The length of `text` quoted and escaped, as [`escape_into`] writes it.
pub(super) fn escaped_len(text: &str) -> usize {
    let mut n = text.len() + 2;
    for &b in text.as_bytes() {
        let esc = ESCAPE[usize::from(b)];
        if esc != 0 {
            n += if esc == b'u' { 5 } else { 1 };
        }
    }
    n
}

/// Write `text` quoted and escaped, exactly as serde_json does.
pub(super) fn escape_into(buf: &mut Vec<u8>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    buf.reserve(bytes.len() + 2);
    buf.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc = ESCAPE[usize::from(b)];
        if esc == 0 {
            continue;
        }
        buf.extend_from_slice(&bytes[start..i]);
        if esc == b'u' {
            buf.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]);
        } else {
            buf.extend_from_slice(&[b'\\', esc]);
        }
        start = i + 1;
    }
    buf.extend_from_slice(&bytes[start..]);
    buf.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_strings_are_what_serde_json_writes() -> anyhow::Result<()> {
        let every_control: String = (0u8..0x20).map(char::from).collect();
        let texts = [
            String::new(),
            "plain".to_owned(),
            every_control.clone(),
            format!("\u{7f} é ✓ \" \\ / {every_control}"),
            format!("{}\"{}", "a".repeat(MIN_BYTES), "b".repeat(10)),
            "y".repeat(MAX_BYTES + 1),
        ];
        for t in &texts {
            // Twice: a long string is kept the first time and copied the second.
            for _ in 0..2 {
                let mut buf = b"[".to_vec();
                write_str(&mut buf, t);
                assert_eq!(buf[1..], *serde_json::to_string(t)?.as_bytes(), "{t:?}");
            }
        }
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn escaping_matches_serde_json(t in ".*", pad in 0usize..80) {
            let t = format!("{t}{}", "\n".repeat(pad));
            let mut buf = Vec::new();
            escape_into(&mut buf, &t);
            proptest::prop_assert_eq!(escaped_len(&t), buf.len());
            proptest::prop_assert_eq!(buf, serde_json::to_string(&t).unwrap_or_default().into_bytes());
            let mut kept = Vec::new();
            write_str(&mut kept, &t);
            proptest::prop_assert_eq!(kept, serde_json::to_string(&t).unwrap_or_default().into_bytes());
        }
    }

    #[test]
    fn the_cache_stays_within_two_generations_of_bytes() -> anyhow::Result<()> {
        let mut g = Generations::new(GENERATION_BYTES, Entry::bytes);
        let text = |i: u64| format!("{i:04}{}", "z".repeat(4_000));
        for i in 0..2_000u64 {
            let json = serde_json::to_string(&text(i))?
                .into_bytes()
                .into_boxed_slice();
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
