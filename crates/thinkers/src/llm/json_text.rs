//! The compact JSON text of a [`Value`], byte for byte as serde_json writes it, written straight
//! into a buffer (and stopped once it passes a limit) or only measured. serde_json's own writer
//! goes through `io::Write` one token at a time; these walk the value once and escape each
//! string in one pass, which matters where it runs on every turn: an artifact's summary, and the
//! size estimate of a request's tool calls.

use serde_json::Value;

use super::escape::{escape_into, escaped_len};

/// Write `value` into `buf` as serde_json writes it, stopping once `buf` holds `limit` bytes or
/// more. The bytes below `limit` are always exactly serde_json's; past it the text is unfinished
/// (a caller cuts it at its own bound). Returns whether the whole value was written with `buf`
/// still below `limit`.
pub(crate) fn write_within(buf: &mut Vec<u8>, value: &Value, limit: usize) -> bool {
    if buf.len() >= limit {
        return false;
    }
    match value {
        Value::Null => buf.extend_from_slice(b"null"),
        Value::Bool(true) => buf.extend_from_slice(b"true"),
        Value::Bool(false) => buf.extend_from_slice(b"false"),
        // Writing into a `Vec` cannot fail.
        Value::Number(n) => {
            let _ = serde_json::to_writer(&mut *buf, n);
        }
        Value::String(s) => return string_within(buf, s, limit),
        Value::Array(items) => {
            buf.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                if !write_within(buf, item, limit) {
                    return false;
                }
            }
            buf.push(b']');
        }
        Value::Object(map) => {
            buf.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                if !string_within(buf, key, limit) {
                    return false;
                }
                buf.push(b':');
                if !write_within(buf, item, limit) {
                    return false;
                }
            }
            buf.push(b'}');
        }
    }
    buf.len() < limit
}

/// A string, escaped whole when it fits below `limit` and otherwise only as far as the limit: a
/// long text in a large output is never escaped whole to be cut.
fn string_within(buf: &mut Vec<u8>, text: &str, limit: usize) -> bool {
    let room = limit.saturating_sub(buf.len());
    if text.len() < room {
        escape_into(buf, text);
        return buf.len() < limit;
    }
    // Escaping never shortens text, so the first `room` bytes (to the next character boundary)
    // already reach the limit; up to there the escaped prefix is the whole string's.
    let mut end = room.min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    escape_into(buf, &text[..end]);
    false
}

/// The length of `value`'s compact JSON text, as serde_json writes it.
pub(crate) fn len(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => {
            struct Count(usize);
            impl std::io::Write for Count {
                fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
                    self.0 += data.len();
                    Ok(data.len())
                }
                fn flush(&mut self) -> std::io::Result<()> {
                    Ok(())
                }
            }
            let mut count = Count(0);
            // Counting cannot fail.
            let _ = serde_json::to_writer(&mut count, n);
            count.0
        }
        Value::String(s) => escaped_len(s),
        Value::Array(items) => {
            2 + items.len().saturating_sub(1) + items.iter().map(len).sum::<usize>()
        }
        Value::Object(map) => {
            2 + map.len().saturating_sub(1)
                + map
                    .iter()
                    .map(|(k, v)| escaped_len(k) + 1 + len(v))
                    .sum::<usize>()
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    fn values() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".*".prop_map(Value::String),
            "[a-z\"\\\\\n\u{1}é✓]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((".{0,8}", inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn text_and_length_are_serde_jsons(v in values(), cut in 0usize..200) {
            let full = serde_json::to_vec(&v).unwrap_or_default();
            prop_assert_eq!(len(&v), full.len());
            let mut whole = Vec::new();
            prop_assert!(write_within(&mut whole, &v, usize::MAX));
            prop_assert_eq!(&whole, &full);
            // Cut anywhere: the bytes below the limit are serde_json's, and a value that was
            // written whole is the whole text.
            let mut part = b"head ".to_vec();
            let limit = part.len() + cut;
            let done = write_within(&mut part, &v, limit);
            let text = &part[5..];
            let shown = text.len().min(cut);
            prop_assert_eq!(&text[..shown.min(full.len())], &full[..shown.min(full.len())]);
            if done {
                prop_assert_eq!(text, &full[..]);
            } else {
                prop_assert!(part.len() >= limit, "stopped at {} below {limit}", part.len());
            }
        }
    }

    #[test]
    fn a_long_string_is_escaped_only_as_far_as_the_limit() {
        let long = "é\"".repeat(100_000);
        let mut buf = Vec::new();
        assert!(!write_within(&mut buf, &json!({ "text": long }), 64));
        assert!(buf.len() < 200, "{} bytes written", buf.len());
        let full = serde_json::to_vec(&json!({ "text": long })).unwrap_or_default();
        assert_eq!(buf[..64], full[..64]);
    }
}
