//! A request rendered to its exact bytes, ready to count and to send.
//!
//! Encoding is a pure step separate from sending, so a caller can count the tokens of the very
//! bytes that will go on the wire (for its admission reservation) and then send exactly those
//! bytes. Bodies are serialised by serde from each dialect's wire structs.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

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
    /// AWS credentials that sign the request when it is sent (`bedrock-converse`): this header
    /// stands for the signature headers, computed over the exact body at send time.
    signing: Option<Arc<crate::llm::AwsSigning>>,
}

impl Header {
    pub(crate) fn plain(name: &'static str, value: impl Into<Cow<'static, str>>) -> Self {
        Self {
            name,
            value: value.into(),
            secret: false,
            signing: None,
        }
    }

    pub(crate) fn secret(name: &'static str, value: impl Into<Cow<'static, str>>) -> Self {
        Self {
            name,
            value: value.into(),
            secret: true,
            signing: None,
        }
    }

    /// The AWS Signature Version 4 of the request, computed when it is sent (its value is
    /// empty until then, and secret).
    pub(crate) fn aws_sigv4(signing: Arc<crate::llm::AwsSigning>) -> Self {
        Self {
            name: "authorization",
            value: Cow::Borrowed(""),
            secret: true,
            signing: Some(signing),
        }
    }

    /// The credentials this header signs the request with, if it is the signing header.
    pub(crate) fn signing(&self) -> Option<&crate::llm::AwsSigning> {
        self.signing.as_deref()
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
    pub(crate) fn is_secret(&self) -> bool {
        self.secret
    }

    pub(crate) fn raw_value(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.signing.is_some() {
            write!(f, "{}: <AWS SigV4, signed when sent>", self.name)
        } else if self.secret {
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
    /// How to decode the answer.
    pub plan: DecodePlan,
}

impl EncodedRequest {
    /// The body as text (it is always JSON).
    pub fn body_str(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap_or("")
    }
}

/// A part of a body (the system content, a message, a tool, the answer format), serialised on
/// its own.
pub(crate) type Part = Box<RawValue>;

/// A wire value serialised as one stable [`Part`].
pub(crate) fn part<T: Serialize + ?Sized>(value: &T) -> Result<Part, Error> {
    serde_json::value::to_raw_value(value).map_err(unserializable)
}

/// Whether `req` may hold a prompt OpenAI caches (1,024 tokens or more), judged from the text
/// its body carries: the `system` content and the `history` as encoded (see
/// `text_tools::prompt_parts`), the tools and the answer schema. A token is at least one byte
/// of that text, and the chat format adds at most 4 tokens a message, 8 a content block and 16
/// a tool; an image or a file may be any size. A derived `prompt_cache_key` is sent only then,
/// so no cacheable request goes without one and a short one carries none; a key the caller set
/// is always sent.
pub(crate) fn may_be_cached(
    req: &super::ChatRequest,
    system: &str,
    history: &[super::message::Message],
) -> bool {
    const CACHED_FROM_TOKENS: usize = 1_024;
    if req.cache_key.is_some() {
        return true;
    }
    let mut text = system.len() + 4 * (history.len() + 1);
    for block in history.iter().flat_map(|m| &m.content) {
        let Some(n) = block.text_bytes() else {
            return true;
        };
        text += n + 8;
    }
    for t in &req.tools {
        text +=
            16 + t.name.len() + t.description.len() + super::strict::shared_json_len(&t.parameters);
    }
    if let Some(r) = &req.response {
        text += r.name.len() + super::strict::shared_json_len(&r.schema);
    }
    text >= CACHED_FROM_TOKENS
}

/// Serialise a wire body.
pub(crate) fn finish<T: Serialize>(body: &T) -> Result<Bytes, Error> {
    serde_json::to_vec(body)
        .map(Bytes::from)
        .map_err(unserializable)
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
    fn secret_headers_are_redacted() {
        let h = Header::secret("authorization", "Bearer sk-CANARY");
        assert!(!format!("{h:?}").contains("CANARY"));
        assert_eq!(h.value(), None);
        assert_eq!(Header::plain("a", "b").value(), Some("b"));
    }
}
