//! A request rendered to its exact bytes, ready to count and to send.
//!
//! Encoding is a pure step separate from sending, so a caller can count the tokens of the very
//! bytes that will go on the wire (for its admission reservation) and then send exactly those
//! bytes. Bodies are serialised by serde from each dialect's wire structs. The body also records
//! the byte ranges of its large, stable parts (the system content, each message, each tool, the
//! answer schema) so `llm::tokens::TokenCounter` can count it incrementally: each part is
//! serialised once as raw JSON, put into the body as it is, and found again in the body's bytes.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use bytes::Bytes;
use serde::Serialize;

use serde_json::value::RawValue;

use crate::Error;
use crate::llm::target::Dialect;

/// One HTTP header of an encoded request. A secret header's value never shows in `Debug`.
#[derive(Clone)]
pub struct Header {
    name: &'static str,
    /// Borrowed when the value is a constant (`application/json`, an API version).
    value: Cow<'static, str>,
    secret: bool,
}

impl Header {
    pub(crate) fn plain(name: &'static str, value: impl Into<Cow<'static, str>>) -> Self {
        Self {
            name,
            value: value.into(),
            secret: false,
        }
    }

    pub(crate) fn secret(name: &'static str, value: impl Into<Cow<'static, str>>) -> Self {
        Self {
            name,
            value: value.into(),
            secret: true,
        }
    }

    /// The header's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// The header's value, unless it is a secret (an API key).
    pub fn value(&self) -> Option<&str> {
        (!self.secret).then_some(&*self.value)
    }

    /// Whether the value is a secret.
    pub fn is_secret(&self) -> bool {
        self.secret
    }

    pub(crate) fn raw_value(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.secret {
            write!(f, "{}: <redacted>", self.name)
        } else {
            write!(f, "{}: {:?}", self.name, self.value)
        }
    }
}

/// How the answer to an encoded request must be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodePlan {
    /// The wire format of the answer.
    pub dialect: Dialect,
    /// Whether tools were offered through the text protocol (tool calls are then parsed from the
    /// answer's text).
    pub text_tools: bool,
    /// The number the next minted tool-call id starts from (`call_<n>`).
    pub next_call_number: usize,
    /// Whether the answer is streamed.
    pub stream: bool,
}

/// A request rendered to its exact bytes.
#[derive(Debug, Clone)]
pub struct EncodedRequest {
    /// The endpoint.
    pub url: String,
    /// The headers, keys included (redacted in `Debug`).
    pub headers: Vec<Header>,
    /// The JSON body.
    pub body: Bytes,
    /// Byte ranges of the body's stable parts (system content, each message, each tool, the
    /// answer schema), in order. The bytes outside them are framing.
    pub segments: Vec<Range<usize>>,
    /// How to decode the answer.
    pub plan: DecodePlan,
}

impl EncodedRequest {
    /// The body as text (it is always JSON).
    pub fn body_str(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap_or("")
    }
}

/// A stable part of a body (the system content, a message, a tool, the answer format),
/// serialised once so its exact text can be found again in the body it is put into.
pub(crate) type Part = Box<RawValue>;

/// A wire value serialised as one stable [`Part`].
pub(crate) fn part<T: Serialize + ?Sized>(value: &T) -> Result<Part, Error> {
    serde_json::value::to_raw_value(value).map_err(unserializable)
}

/// Serialise a wire body and find the byte range of each of its stable parts, given in the
/// order the body holds them. A raw part is written verbatim, so each is found by searching
/// from the end of the one before it; a part that cannot be found (never expected) leaves the
/// body without ranges, which only makes its token count a whole-body count.
pub(crate) fn finish<'p, T: Serialize>(
    body: &T,
    parts: impl IntoIterator<Item = &'p RawValue>,
) -> Result<(Bytes, Vec<Range<usize>>), Error> {
    let bytes = serde_json::to_vec(body).map_err(unserializable)?;
    let mut segments = Vec::new();
    let mut at = 0;
    for p in parts {
        let needle = p.get().as_bytes();
        let Some(start) = find(&bytes[at..], needle).map(|i| i + at) else {
            segments.clear();
            break;
        };
        at = start + needle.len();
        segments.push(start..at);
    }
    Ok((Bytes::from(bytes), segments))
}

/// Where `needle` first occurs in `haystack`. A part begins a few framing bytes after the
/// previous one, so the first candidate is nearly always the match.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, _) = needle.split_first()?;
    let mut from = 0;
    while let Some(i) = haystack.get(from..)?.iter().position(|&b| b == first) {
        let start = from + i;
        if haystack.get(start..start + needle.len()) == Some(needle) {
            return Some(start);
        }
        from = start + 1;
    }
    None
}

/// A value of a body that would not serialize (a runtime fault: the values a body carries always
/// do).
fn unserializable(e: serde_json::Error) -> Error {
    Error::system(
        "llm request encoding",
        "a value of the body did not serialize",
    )
    .with_source(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_found_in_order_even_when_repeated() -> anyhow::Result<()> {
        #[derive(Serialize)]
        struct Body<'a> {
            model: &'a str,
            messages: Vec<&'a RawValue>,
        }
        let a = part(&serde_json::json!({"role": "user", "content": "hi"}))?;
        let b = part(&serde_json::json!({"role": "user", "content": "hi"}))?;
        let (bytes, segments) = finish(
            &Body {
                model: r#"{"role":"user","content":"hi"}"#,
                messages: vec![&a, &b],
            },
            [&*a, &*b],
        )?;
        assert_eq!(segments.len(), 2);
        for r in &segments {
            assert_eq!(&bytes[r.clone()], a.get().as_bytes());
        }
        // The model string holds the same text escaped, so it is not taken for a part.
        assert!(segments[0].start > 10 && segments[1].start > segments[0].end);
        Ok(())
    }

    #[test]
    fn secret_headers_are_redacted() {
        let h = Header::secret("authorization", "Bearer sk-CANARY");
        assert!(!format!("{h:?}").contains("CANARY"));
        assert_eq!(h.value(), None);
        assert_eq!(Header::plain("a", "b").value(), Some("b"));
    }
}
