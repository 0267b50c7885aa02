//! The Amazon Bedrock Converse dialect (`POST /model/{modelId}/converse` and
//! `/converse-stream`): request decoding and checks (reasoning signatures included), the
//! `ConverseResponse` body, the AWS event-stream frames of a stream, and errors named in the
//! `x-amzn-ErrorType` header. Requests must carry an `Authorization` header: AWS Signature
//! Version 4 (`AWS4-HMAC-SHA256 …`; the signature itself is not verified) or a Bedrock API key
//! as a bearer token.

mod decode;
mod encode;
mod stream;

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue as HttpValue};
use serde_json::Value;

pub(crate) use decode::{decode, result_text};
pub(crate) use encode::{Envelope, response};
pub(crate) use stream::frames;

/// The media type of a `converse-stream` answer.
pub(crate) const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// Sets `x-amzn-ErrorType` as Bedrock writes it.
pub(crate) fn insert_error_type(headers: &mut HeaderMap, kind: &str) {
    let value = format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/");
    if let Ok(v) = HttpValue::from_str(&value) {
        headers.insert(HeaderName::from_static("x-amzn-errortype"), v);
    }
}

/// Whether a request is authenticated the way Bedrock accepts: a SigV4 `Authorization` header
/// (with its date), or a bearer API key.
pub(crate) fn authenticated(headers: &HeaderMap) -> bool {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let sigv4 = auth.starts_with("AWS4-HMAC-SHA256 Credential=")
        && auth.contains("SignedHeaders=")
        && auth.contains("Signature=")
        && headers.contains_key("x-amz-date");
    let bearer = auth
        .strip_prefix("Bearer ")
        .is_some_and(|k| !k.trim().is_empty());
    sigv4 || bearer
}

fn frame(headers: Vec<Header>, payload: &Value) -> Bytes {
    let message = Message::new_from_parts(headers, payload.to_string().into_bytes());
    let mut out = Vec::new();
    // Writing a frame of string headers and a JSON payload into a vector cannot fail; an error
    // would leave the frame empty, which a client reads as a broken stream.
    if write_message_to(&message, &mut out).is_err() {
        out.clear();
    }
    Bytes::from(out)
}

fn string(name: &'static str, value: impl Into<String>) -> Header {
    Header::new(name, HeaderValue::String(value.into().into()))
}

/// One event frame of a `ConverseStreamOutput` member.
pub(crate) fn event(kind: &str, payload: &Value) -> Bytes {
    frame(
        vec![
            string(":event-type", kind),
            string(":content-type", "application/json"),
            string(":message-type", "event"),
        ],
        payload,
    )
}

/// An exception frame (`throttlingException`, `internalServerException`…).
pub(crate) fn exception(kind: &str, message: &str) -> Bytes {
    frame(
        vec![
            string(":exception-type", kind),
            string(":content-type", "application/json"),
            string(":message-type", "exception"),
        ],
        &serde_json::json!({ "message": message }),
    )
}
