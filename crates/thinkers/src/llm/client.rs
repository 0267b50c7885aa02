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

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use http::header::CONTENT_TYPE;
use http_body_util::{BodyDataStream, BodyExt};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio::time::Sleep;

use crate::conversation::ContentBlock;
use crate::dispatch::RateObservation;
use crate::llm::codec::{self, StreamDecoder};
use crate::llm::encoded::EncodedRequest;
use crate::llm::errors::{self, ProviderError};
use crate::llm::headers;
use crate::llm::request::ChatRequest;
use crate::llm::response::{ChatResponse, StreamDelta};
use crate::llm::target::{Dialect, WireTarget};
use crate::llm::transport::{Failure, ResponseBody, Settings, Transport};
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
    proxy: Option<String>,
    roots: Vec<Vec<u8>>,
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

    /// Send every request through this HTTP proxy (`http://host:port`, credentials in the URL
    /// if it needs them). Without it, the proxy environment variables (`HTTPS_PROXY`,
    /// `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`) decide, as curl reads them.
    #[must_use]
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = Some(url.into());
        self
    }

    /// Trust the certificates in this PEM text as roots, beside the system's (a company's own
    /// certificate authority, or a self-hosted model server's). May be called more than once.
    #[must_use]
    pub fn add_root_certificates(mut self, pem: impl AsRef<[u8]>) -> Self {
        self.roots.push(pem.as_ref().to_vec());
        self
    }

    /// Build the client and its connection pool.
    pub fn build(self) -> Result<ModelClient> {
        let mut roots = Vec::new();
        for (i, pem) in self.roots.iter().enumerate() {
            let before = roots.len();
            for cert in CertificateDer::pem_slice_iter(pem) {
                roots.push(cert.map_err(|e| {
                    Error::system(
                        "model client",
                        format!("root certificate PEM number {} could not be read", i + 1),
                    )
                    .with_source(e)
                })?);
            }
            if roots.len() == before {
                return Err(Error::system(
                    "model client",
                    format!(
                        "root certificate PEM number {} holds no `BEGIN CERTIFICATE` block",
                        i + 1
                    ),
                ));
            }
        }
        let transport = Transport::new(Settings {
            connect_timeout: self.connect_timeout,
            proxy: self.proxy,
            roots,
        })?;
        Ok(ModelClient {
            transport: Arc::new(transport),
            request_timeout: self.request_timeout,
        })
    }
}

/// Sends requests to model providers. Cheap to clone; clones share one connection pool.
#[derive(Debug, Clone)]
pub struct ModelClient {
    transport: Arc<Transport>,
    request_timeout: Duration,
}

impl ModelClient {
    /// A client with the default timeouts.
    pub fn new() -> Result<Self> {
        Self::builder().build()
    }

    /// A builder to set timeouts, a proxy or extra trusted roots.
    pub fn builder() -> ModelClientBuilder {
        ModelClientBuilder {
            connect_timeout: CONNECT_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            proxy: None,
            roots: Vec::new(),
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
        // One deadline over the whole exchange: the head, the body, every event of a stream.
        let deadline = tokio::time::sleep(self.request_timeout);
        tokio::pin!(deadline);
        let late = |seen_event| timed_out(dialect, seen_event, self.request_timeout);
        let resp = match within(deadline.as_mut(), self.transport.send(enc)).await {
            None => return Err(late(false)),
            Some(Err(Failure::Refused(e))) => return Err(e),
            Some(Err(Failure::Transport(f))) if f.tls => {
                return Err(Error::external(dialect.as_str(), "tls", f.to_string()));
            }
            Some(Err(Failure::Transport(f))) => {
                return Err(errors::transport(dialect, false, &f.to_string()));
            }
            Some(Ok(resp)) => resp,
        };
        let (head, body) = resp.into_parts();
        let now = SystemTime::now();
        let rate = headers::rate_observation(&head.headers, now);
        if !head.status.is_success() {
            let retry_after = headers::retry_after(&head.headers, now);
            let body = match within(deadline.as_mut(), body.collect()).await {
                Some(Ok(collected)) => collected.to_bytes(),
                _ => bytes::Bytes::new(),
            };
            let mut err = ProviderError::from_body(&body);
            for h in enc.headers.iter().filter(|h| h.is_secret()) {
                let v = h.raw_value();
                err.scrub(v.strip_prefix("Bearer ").unwrap_or(v));
            }
            tracing::debug!(url = %enc.url, status = head.status.as_u16(), "provider refused a request");
            return Err(errors::from_status(
                dialect,
                head.status.as_u16(),
                &err,
                retry_after,
            ));
        }
        let is_sse = head
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let response = if enc.plan.stream && is_sse {
            read_stream(enc, body, deadline.as_mut(), self.request_timeout, on_delta).await?
        } else {
            let body = match within(deadline.as_mut(), body.collect()).await {
                None => return Err(late(false)),
                Some(Err(f)) => return Err(errors::transport(dialect, false, &f.to_string())),
                Some(Ok(collected)) => collected.to_bytes(),
            };
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

/// `work`'s output, or `None` when the deadline passed first.
async fn within<F: Future>(deadline: Pin<&mut Sleep>, work: F) -> Option<F::Output> {
    tokio::select! {
        biased;
        out = work => Some(out),
        () = deadline => None,
    }
}

fn timed_out(dialect: Dialect, seen_event: bool, after: Duration) -> Error {
    errors::transport(
        dialect,
        seen_event,
        &format!("the request timed out after {after:?}"),
    )
}

async fn read_stream(
    enc: &EncodedRequest,
    body: ResponseBody,
    mut deadline: Pin<&mut Sleep>,
    timeout: Duration,
    on_delta: &mut (dyn FnMut(StreamDelta) + Send),
) -> Result<ChatResponse> {
    let dialect = enc.plan.dialect;
    let mut decoder = StreamDecoder::new(enc.plan);
    let mut events = BodyDataStream::new(body).eventsource();
    loop {
        match within(deadline.as_mut(), events.next()).await {
            None => return Err(timed_out(dialect, decoder.seen_event(), timeout)),
            Some(None) => break,
            Some(Some(Ok(ev))) => {
                decoder.push(&ev.data, &mut *on_delta)?;
                if decoder.is_done() {
                    break;
                }
            }
            Some(Some(Err(e))) => {
                let what = match e {
                    eventsource_stream::EventStreamError::Transport(f) => f.to_string(),
                    other => other.to_string(),
                };
                return Err(errors::transport(dialect, decoder.seen_event(), &what));
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
