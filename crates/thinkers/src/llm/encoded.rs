//! A request rendered to its exact bytes, ready to count and to send.
//!
//! Encoding is a pure step separate from sending, so a caller can count the tokens of the very
//! bytes that will go on the wire (for its admission reservation) and then send exactly those
//! bytes. The body also records the byte ranges of its large, stable parts (the system content,
//! each message, each tool, the answer schema) so `llm::tokens::TokenCounter` can count it
//! incrementally.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use bytes::Bytes;
use serde::Serialize;

use crate::Error;
use crate::conversation::Message;
use crate::llm::request::ChatRequest;
use crate::llm::strict::shared_json_len;
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

    /// The value when it is a constant (`application/json`, an API version), not a key.
    pub(crate) fn static_value(&self) -> Option<&'static str> {
        match self.value {
            Cow::Borrowed(v) => Some(v),
            Cow::Owned(_) => None,
        }
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

/// A body written straight as JSON bytes by an encoder that knows its shape: keys and
/// punctuation go in as the literal text they are, strings are escaped as they are written (long
/// ones copied from `llm::escape`'s kept forms), and the byte ranges of the stable parts are
/// recorded as they are written. The bytes are exactly what serde_json would write for the same
/// fields in the same order (the dialects' snapshot tests hold them to it).
pub(crate) struct BodyWriter {
    buf: Vec<u8>,
    segments: Vec<Range<usize>>,
}

impl BodyWriter {
    /// A body of `capacity` bytes to start with (see [`capacity_hint`]) and room for the ranges
    /// of `parts` stable parts.
    pub(crate) fn new(capacity: usize, parts: usize) -> Self {
        Self {
            buf: crate::llm::body_pool::buffer(capacity),
            segments: Vec::with_capacity(parts),
        }
    }

    /// JSON text written as it is: keys, punctuation, constants.
    pub(crate) fn raw(&mut self, json: &str) -> &mut Self {
        self.buf.extend_from_slice(json.as_bytes());
        self
    }

    /// A string, quoted and escaped.
    pub(crate) fn str(&mut self, text: &str) -> &mut Self {
        crate::llm::escape::write_str(&mut self.buf, text);
        self
    }

    /// A number.
    pub(crate) fn num(&mut self, n: u64) -> &mut Self {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = n;
        loop {
            at -= 1;
            // `n % 10` is below 10, so the cast keeps it whole.
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.buf.extend_from_slice(&digits[at..]);
        self
    }

    /// A value's compact JSON.
    pub(crate) fn json<T: Serialize + ?Sized>(&mut self, value: &T) -> crate::Result<&mut Self> {
        serde_json::to_writer(&mut self.buf, value).map_err(unserializable)?;
        Ok(self)
    }

    /// A value's compact JSON text, as a JSON string (how OpenAI carries tool-call arguments).
    /// The text is written into a per-thread scratch buffer (`llm::json_text`, byte for byte
    /// serde_json's), not a fresh `String`: every turn writes every earlier call's arguments.
    pub(crate) fn json_text(&mut self, value: &serde_json::Value) -> crate::Result<&mut Self> {
        thread_local! {
            static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        SCRATCH.with_borrow_mut(|scratch| {
            scratch.clear();
            crate::llm::json_text::write_within(scratch, value, usize::MAX);
            let text = std::str::from_utf8(scratch).map_err(|e| {
                Error::system("llm request encoding", "a value's JSON text was not UTF-8")
                    .with_source(e)
            })?;
            crate::llm::escape::write_str(&mut self.buf, text);
            // A long scratch (a large argument object) is not kept around.
            if scratch.capacity() > 64 * 1024 {
                *scratch = Vec::new();
            }
            Ok::<(), Error>(())
        })?;
        Ok(self)
    }

    /// Where the next byte goes: the start of a stable part, closed by [`Self::close_part`].
    pub(crate) fn mark(&self) -> usize {
        self.buf.len()
    }

    /// Record the bytes from `start` (a [`Self::mark`]) to here as one stable part.
    pub(crate) fn close_part(&mut self, start: usize) {
        self.segments.push(start..self.buf.len());
    }

    /// The body and the ranges of its stable parts, in order.
    pub(crate) fn finish(self) -> (Bytes, Vec<Range<usize>>) {
        (crate::llm::body_pool::into_bytes(self.buf), self.segments)
    }
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

/// A starting size for the body of a request whose system content and history are these: their
/// text and schemas, a quarter more for escaping and strict adaptation, and framing for each
/// block. The body is then written without growing (and holds little spare room while its call
/// is in flight). Media is left out: a body that carries some grows as it must.
pub(crate) fn capacity_hint(system: &str, history: &[Message], req: &ChatRequest) -> usize {
    let mut bytes = system.len();
    let mut blocks = 1usize;
    for m in history {
        for b in &m.content {
            blocks += 1;
            bytes += b.text_bytes().unwrap_or(0);
        }
    }
    for t in &req.tools {
        blocks += 1;
        bytes += t.name.len() + t.description.len() + shared_json_len(&t.parameters);
    }
    if let Some(r) = &req.response {
        bytes += r.name.len() + shared_json_len(&r.schema);
    }
    bytes + bytes / 4 + 96 * blocks + 256
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_headers_are_redacted() {
        let h = Header::secret("authorization", "Bearer sk-CANARY");
        assert!(!format!("{h:?}").contains("CANARY"));
        assert_eq!(h.value(), None);
        assert_eq!(Header::plain("a", "b").value(), Some("b"));
    }
}
