//! [`ModelClient`]: sends encoded requests over one shared HTTP connection pool.
//!
//! Sending is split from encoding: [`crate::llm::encode`] renders the exact bytes (so the caller
//! can count their tokens for its reservation), and [`ModelClient::send_encoded`] sends exactly
//! those bytes. [`ModelClient::send`] and [`ModelClient::send_streaming`] do both in one call.
//!
//! Failures are mapped onto the error hierarchy by `llm::errors` (throttling, transient,
//! invalid input, authentication…); a stop at the output budget is *not* an error here
//! ([`crate::llm::StopReason::MaxTokens`]); the caller decides whether to escalate. A streamed
//! request that fails after any event arrived is never replayed: the failure is final.
//!
//! No API key is ever logged or put into an error: headers are redacted in `Debug`, and a key a
//! provider echoes in its error message is scrubbed.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::CONTENT_TYPE;

use crate::conversation::ContentBlock;
use crate::dispatch::RateObservation;
use crate::llm::codec::{self, StreamDecoder};
use crate::llm::encoded::EncodedRequest;
use crate::llm::errors::{self, ProviderError};
use crate::llm::headers;
use crate::llm::request::ChatRequest;
use crate::llm::response::{ChatResponse, StreamDelta};
use crate::llm::target::WireTarget;
use crate::{Error, Result};

/// The connect timeout of every request.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default whole-request timeout (a streamed answer included).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// What one call produced.
#[derive(Debug, Clone)]
pub struct SendOutcome {
    /// The decoded answer.
    pub response: ChatResponse,
    /// What the provider's rate-limit headers said, if it sent any.
    pub rate: Option<RateObservation>,
    /// From sending the request to the end of the answer.
    pub latency: Duration,
}

/// Builds a [`ModelClient`].
#[derive(Debug, Clone)]
pub struct ModelClientBuilder {
    connect_timeout: Duration,
    request_timeout: Duration,
}

impl ModelClientBuilder {
    /// The whole-request timeout (default 300 s). A streamed answer must finish within it.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The connect timeout (default 10 s).
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Build the client and its connection pool.
    pub fn build(self) -> Result<ModelClient> {
        let http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .timeout(self.request_timeout)
            .build()
            .map_err(|e| {
                Error::system("model client", "the HTTP client could not be built").with_source(e)
            })?;
        Ok(ModelClient {
            http,
            endpoints: Arc::default(),
        })
    }
}

/// Sends requests to model providers. Cheap to clone; clones share one connection pool.
#[derive(Debug, Clone)]
pub struct ModelClient {
    http: reqwest::Client,
    /// Endpoints already parsed: a client talks to a handful of URLs, and parsing one costs
    /// more than the rest of building a request.
    endpoints: Arc<RwLock<foldhash::HashMap<String, reqwest::Url>>>,
}

/// How many parsed endpoints a client keeps before starting over.
const MAX_ENDPOINTS: usize = 64;

impl ModelClient {
    /// A client with the default timeouts.
    pub fn new() -> Result<Self> {
        Self::builder().build()
    }

    /// A builder to set timeouts.
    pub fn builder() -> ModelClientBuilder {
        ModelClientBuilder {
            connect_timeout: CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }

    /// Encode and send a request, reading the whole answer (never streamed, whatever
    /// `req.stream` says).
    pub async fn send(&self, target: &WireTarget, req: &ChatRequest) -> Result<SendOutcome> {
        let enc = codec::encode_with(target, req, false)?;
        self.send_encoded(&enc).await
    }

    /// Encode and send a request as a stream, handing each increment to `on_delta` as it
    /// arrives (whatever `req.stream` says).
    pub async fn send_streaming(
        &self,
        target: &WireTarget,
        req: &ChatRequest,
        mut on_delta: impl FnMut(StreamDelta) + Send,
    ) -> Result<SendOutcome> {
        let enc = codec::encode_with(target, req, true)?;
        self.send_encoded_streaming(&enc, &mut on_delta).await
    }

    /// The parsed form of `url`, from the cache when it was seen before.
    fn endpoint(&self, url: &str) -> Result<reqwest::Url> {
        if let Some(u) = self
            .endpoints
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(url)
        {
            return Ok(u.clone());
        }
        let parsed = reqwest::Url::parse(url).map_err(|e| {
            Error::system(
                "model client",
                format!("the endpoint `{url}` is not a valid URL"),
            )
            .with_source(e)
        })?;
        let mut map = self
            .endpoints
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_ENDPOINTS {
            map.clear();
        }
        map.insert(url.to_owned(), parsed.clone());
        Ok(parsed)
    }

    /// Send an already encoded request. A streamed one is read to its end with no callback.
    pub async fn send_encoded(&self, enc: &EncodedRequest) -> Result<SendOutcome> {
        self.send_encoded_streaming(enc, &mut |_| {}).await
    }

    /// Send an already encoded request, handing increments of a streamed answer to `on_delta`.
    /// (A whole answer is handed over as one increment per block once it has arrived.)
    pub async fn send_encoded_streaming(
        &self,
        enc: &EncodedRequest,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<SendOutcome> {
        let dialect = enc.plan.dialect;
        let started = Instant::now();
        let mut rb = self
            .http
            .post(self.endpoint(&enc.url)?)
            .body(enc.body.clone());
        for h in &enc.headers {
            rb = rb.header(h.name(), h.raw_value());
        }
        if enc.plan.stream {
            rb = rb.header("accept", "text/event-stream");
        }
        let resp = rb
            .send()
            .await
            .map_err(|e| errors::transport(dialect, false, &describe(&e)))?;
        let status = resp.status();
        let now = SystemTime::now();
        let rate = headers::rate_observation(resp.headers(), now);
        if !status.is_success() {
            let retry_after = headers::retry_after(resp.headers(), now);
            let body = resp.bytes().await.unwrap_or_default();
            let mut err = ProviderError::from_body(&body);
            for h in enc.headers.iter().filter(|h| h.is_secret()) {
                let v = h.raw_value();
                err.scrub(v.strip_prefix("Bearer ").unwrap_or(v));
            }
            tracing::debug!(url = %enc.url, status = status.as_u16(), "provider refused a request");
            return Err(errors::from_status(
                dialect,
                status.as_u16(),
                &err,
                retry_after,
            ));
        }
        let is_sse = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let response = if enc.plan.stream && is_sse {
            read_stream(enc, resp, on_delta).await?
        } else {
            let body = resp
                .bytes()
                .await
                .map_err(|e| errors::transport(dialect, false, &describe(&e)))?;
            let response = codec::decode(&enc.plan, &body)?;
            if enc.plan.stream {
                // The server ignored `stream`; hand the whole answer over at once.
                replay_as_deltas(&response, on_delta);
            }
            response
        };
        Ok(SendOutcome {
            response,
            rate,
            latency: started.elapsed(),
        })
    }
}

async fn read_stream(
    enc: &EncodedRequest,
    resp: reqwest::Response,
    on_delta: &mut (dyn FnMut(StreamDelta) + Send),
) -> Result<ChatResponse> {
    let mut decoder = StreamDecoder::new(enc.plan);
    let mut events = resp.bytes_stream().eventsource();
    while let Some(item) = events.next().await {
        match item {
            Ok(ev) => {
                decoder.push(&ev.data, &mut *on_delta)?;
                if decoder.is_done() {
                    break;
                }
            }
            Err(e) => {
                let what = match e {
                    eventsource_stream::EventStreamError::Transport(t) => describe(&t),
                    other => other.to_string(),
                };
                return Err(errors::transport(
                    enc.plan.dialect,
                    decoder.seen_event(),
                    &what,
                ));
            }
        }
    }
    decoder.finish(&mut *on_delta)
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

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        format!("the request timed out: {e}")
    } else if e.is_connect() {
        format!("the connection failed: {e}")
    } else {
        e.to_string()
    }
}
