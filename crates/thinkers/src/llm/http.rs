//! The HTTP details of one model request: its endpoint and headers as reqwest takes them, what a
//! transport error says, and a whole answer handed over as stream increments.

use reqwest::header::{ACCEPT, HeaderMap, HeaderName, HeaderValue};

use crate::llm::encoded::EncodedRequest;
use crate::llm::message::ContentBlock;
use crate::llm::response::{ChatResponse, StreamDelta};
use crate::{Error, Result};

const WHO: &str = "model client";

/// The endpoint, parsed: an http or https URL, or a configuration error naming it.
pub(crate) fn endpoint_url(url: &str) -> Result<reqwest::Url> {
    let invalid = |why: String| {
        Error::system(
            WHO,
            format!("the endpoint `{url}` is not a valid URL: {why}"),
        )
    };
    let parsed = reqwest::Url::parse(url).map_err(|e| invalid(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "its scheme is `{}`, not http or https",
            parsed.scheme()
        )));
    }
    Ok(parsed)
}

/// Whether rustls refused the connection (an untrusted certificate, no common protocol): not
/// something a retry cures. rustls hands its error over inside `io::Error`s, whose `source`
/// skips what they wrap, so each is opened by hand.
pub(crate) fn is_tls(e: &(dyn std::error::Error + 'static)) -> bool {
    if e.is::<rustls::Error>() {
        return true;
    }
    let wrapped = e
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref);
    if wrapped.is_some_and(|w| is_tls(w)) {
        return true;
    }
    e.source().is_some_and(is_tls)
}

/// The model a request body names, for a 404's message.
pub(crate) fn model_of(enc: &EncodedRequest) -> Option<String> {
    if enc.plan.dialect == crate::llm::Dialect::BedrockConverse {
        // Converse names the model in the path, not the body.
        return crate::llm::bedrock::model_of_url(&enc.url);
    }
    #[derive(serde::Deserialize)]
    struct Named {
        model: Option<String>,
    }
    match serde_json::from_slice::<Named>(&enc.body).ok()?.model {
        Some(m) => Some(m),
        // Gemini names the model in the path: `…/models/{model}:generateContent`.
        None => {
            let path = enc.url.split('?').next()?;
            let (_, rest) = path.rsplit_once("/models/")?;
            rest.split_once(':').map(|(m, _)| m.to_owned())
        }
    }
}

/// The request's headers: the encoded ones (secrets marked sensitive, so reqwest never shows
/// them) and `accept` for a stream. A secret that is empty or cannot be a header value is
/// refused before anything is sent, without showing it.
pub(crate) fn request_headers(enc: &EncodedRequest) -> Result<HeaderMap> {
    let mut map = HeaderMap::with_capacity(enc.headers.len() + 3);
    let mut signing = None;
    for h in &enc.headers {
        if let Some(s) = h.signing() {
            signing = Some(s);
            continue;
        }
        let bad = |why: &str| {
            Error::system(
                WHO,
                format!("the `{}` header cannot be sent: {why}", h.name()),
            )
        };
        let name = HeaderName::from_bytes(h.name().as_bytes()).map_err(|_| bad("a bad name"))?;
        let raw = h.raw_value();
        if h.is_secret() && raw.strip_prefix("Bearer").unwrap_or(raw).trim().is_empty() {
            return Err(Error::external(
                "model client",
                "authentication",
                format!(
                    "the `{}` header would carry an empty API key; set the provider's key",
                    h.name()
                ),
            ));
        }
        let mut value = HeaderValue::from_str(raw)
            .map_err(|_| bad("its value holds a line break or another control character"))?;
        value.set_sensitive(h.is_secret());
        map.append(name, value);
    }
    if enc.plan.stream {
        let accept = if enc.plan.dialect == crate::llm::Dialect::BedrockConverse {
            crate::llm::bedrock::stream::CONTENT_TYPE
        } else {
            "text/event-stream"
        };
        map.insert(ACCEPT, HeaderValue::from_static(accept));
    }
    if let Some(signing) = signing {
        // The signature covers the plain headers and the exact body; it is made last, now.
        crate::llm::bedrock::sign_headers(signing, enc, &mut map)?;
    }
    Ok(map)
}

pub(crate) fn replay_as_deltas(
    response: &ChatResponse,
    on_delta: &mut (dyn FnMut(StreamDelta) + Send),
) {
    let mut calls = 0;
    for b in &response.content {
        match b {
            ContentBlock::Text { text } => on_delta(StreamDelta::Text(text.clone())),
            ContentBlock::Thinking { thinking, .. } => {
                on_delta(StreamDelta::Thinking(thinking.clone()));
            }
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => {
                on_delta(StreamDelta::ToolCallStart {
                    index: calls,
                    id: id.clone(),
                    name: name.clone(),
                });
                on_delta(StreamDelta::ToolCallArguments {
                    index: calls,
                    fragment: arguments.to_string(),
                });
                calls += 1;
            }
            _ => {}
        }
    }
}
