//! [`ModelClient`]: sends encoded requests through one shared reqwest client.
//!
//! Sending is split from encoding: [`crate::llm::wire::encode`] renders the exact bytes (so the caller
//! can count their tokens for its reservation), and the client sends exactly those bytes.
//!
//! **Nothing outside this crate can send.** The client's send methods are crate-private; the
//! one public way to a model is [`crate::llm::converse_bound`], which needs the attempt's
//! [`crate::job::Resources`] (only the dispatcher makes them, from the permit admission minted)
//! and spends the seat the request was priced for. A program holds a `ModelClient` only to
//! configure it (timeouts, proxy, roots) and hand it to [`crate::llm::ModelServices`].
//!
//! What the client guarantees:
//!
//! * **Bounded waits.** One attempt waits at most its timeout
//!   ([`ModelClientBuilder::request_timeout`], or less when the caller's per-call deadline has
//!   less left, see [`SendOptions::timeout`]) for the answer's head and, for a stream, for its
//!   first event; after that a stream may go quiet between events for at most
//!   [`ModelClientBuilder::stream_idle_timeout`]. A reasoning model that thinks silently before
//!   it answers is therefore bounded by the attempt's timeout, not by the idle timeout.
//! * **Never replayed after content.** A streamed answer that fails, stalls or ends early after
//!   any content was handed to the caller fails for good ([`crate::Error::ExternalService`] at
//!   step `stream`); before any content it is a transient failure, retried like a failed request.
//! * **Named failures.** Failures are mapped onto the error hierarchy in one place (`errors`):
//!   each names the catalog provider and entry (when the caller gave them, see [`SendOptions`])
//!   and the endpoint, never a key.
//! * **No key leaves.** Every error and log line passes the one redaction point
//!   (`redact::Redactor`), which removes the request's secrets from whatever the provider sent
//!   back (an echoed key in an error body, a stream's error event, a redirect's target).
//! * **No redirects.** A redirect is an error naming its status: a key is never sent on to
//!   another address.
//!
//! A stop at the output budget is *not* an error here ([`crate::llm::StopReason::MaxTokens`]);
//! the caller decides whether to escalate.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, LOCATION};

use crate::dispatch::RateObservation;
use crate::llm::codec::{self, StreamDecoder};
use crate::llm::encoded::EncodedRequest;
use crate::llm::errors::{self, Origin, ProviderError};
use crate::llm::http::{endpoint_url, is_tls, model_of, replay_as_deltas, request_headers};
use crate::llm::redact::{Redactor, chain};
#[cfg(test)]
use crate::llm::request::ChatRequest;
use crate::llm::response::{ChatResponse, StreamDelta};
#[cfg(test)]
use crate::llm::target::WireTarget;
use crate::llm::{gemini, headers};
use crate::telemetry::Payload;
use crate::{Error, Result};

pub use super::client_builder::ClientLimits;
pub use super::client_builder::ModelClientBuilder;

/// The connect timeout of every request.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default timeout of one attempt: until the answer's head, and until the first event of a
/// stream (a whole non-streamed answer included).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// The default longest silence between two events of a stream after its first.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// The default time all attempts of one model call may take together.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// The default cap on a wait a server asks for (`Retry-After`).
pub const DEFAULT_MAX_RETRY_WAIT: Duration = crate::dispatch::DEFAULT_MAX_SERVER_WAIT;

pub(super) const WHO: &str = "model client";

/// What one call produced.
#[derive(Debug, Clone)]
pub(crate) struct SendOutcome {
    /// The decoded answer.
    pub response: ChatResponse,
    /// What the provider's rate-limit headers said, if it sent any.
    pub rate: Option<RateObservation>,
    /// From sending the request to the end of the answer.
    pub latency: Duration,
}

/// Who a request is for, so its errors can name it, and how long this attempt may take.
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    /// The catalog provider key (errors name it instead of the dialect).
    pub provider: Option<Arc<str>>,
    /// The catalog entry id.
    pub entry: Option<Arc<str>>,
    /// This attempt's timeout, when it is shorter than the client's (what the call's deadline
    /// has left).
    pub timeout: Option<Duration>,
    /// Told the limits a refusal's body states (Gemini's `QuotaFailure`), before the refusal
    /// is returned.
    pub(crate) refused_limits: Option<LimitSink>,
    /// The `response_format` form the request carries to an OpenAI-compatible server: a
    /// refusal of it is an error at step `structured output`, never an outage to retry
    /// (`errors::refuses_form`).
    pub(crate) answer_form: Option<crate::llm::StructuredOutput>,
    /// The request streams an answer that may call a tool while the provider's `stream_tools`
    /// is being found: a stream ending before any content is an error at step `tool-call
    /// stream` (`llm::negotiate`).
    pub(crate) probe_stream_tools: bool,
}

/// Where the limits a provider states in a refusal go (the entry's budget).
#[derive(Clone)]
pub(crate) struct LimitSink(Arc<dyn Fn(RateObservation) + Send + Sync>);

impl LimitSink {
    pub(crate) fn new(f: impl Fn(RateObservation) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }
}

impl std::fmt::Debug for LimitSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LimitSink")
    }
}

/// Sends requests to model providers. Cheap to clone; clones share one connection pool.
#[derive(Debug, Clone)]
pub struct ModelClient {
    pub(super) http: reqwest::Client,
    pub(super) limits: ClientLimits,
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
            limits: ClientLimits {
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
                call_timeout: DEFAULT_CALL_TIMEOUT,
                max_retry_wait: DEFAULT_MAX_RETRY_WAIT,
            },
            proxy: None,
            roots: Vec::new(),
        }
    }

    /// The client's timeouts and waits.
    pub fn limits(&self) -> ClientLimits {
        self.limits
    }

    /// Encode and send a request, reading the whole answer (never streamed, whatever
    /// `req.stream` says). For the client's own tests: the runtime sends through
    /// [`ModelClient::send_with`].
    #[cfg(test)]
    pub(crate) async fn send(&self, target: &WireTarget, req: &ChatRequest) -> Result<SendOutcome> {
        let enc = codec::encode_with(target, req, false)?;
        self.send_encoded(&enc).await
    }

    /// Encode and send a request as a stream, handing each increment to `on_delta` as it
    /// arrives (whatever `req.stream` says). For the client's own tests.
    #[cfg(test)]
    pub(crate) async fn send_streaming(
        &self,
        target: &WireTarget,
        req: &ChatRequest,
        mut on_delta: impl FnMut(StreamDelta) + Send,
    ) -> Result<SendOutcome> {
        let enc = codec::encode_with(target, req, true)?;
        self.send_with(&enc, &SendOptions::default(), &mut on_delta)
            .await
    }

    /// Send an already encoded request. A streamed one is read to its end with no callback.
    /// For the client's own tests.
    #[cfg(test)]
    pub(crate) async fn send_encoded(&self, enc: &EncodedRequest) -> Result<SendOutcome> {
        self.send_with(enc, &SendOptions::default(), &mut |_| {})
            .await
    }

    /// Send an already encoded request for a named provider and entry, within `options.timeout`
    /// when it is shorter than the client's attempt timeout, handing increments of a streamed
    /// answer to `on_delta` (a whole answer is handed over as one increment per block once it has
    /// arrived). Crate-private: the runtime calls it only from `converse_bound`, after the
    /// attempt's admitted seat was spent.
    pub(crate) async fn send_with(
        &self,
        enc: &EncodedRequest,
        options: &SendOptions,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<SendOutcome> {
        let redactor = Redactor::for_request(enc);
        let origin = Origin::new(enc, options.provider.as_deref(), options.entry.as_deref());
        let timeout = options.timeout.map_or(self.limits.request_timeout, |t| {
            t.min(self.limits.request_timeout)
        });
        let exchange = Exchange {
            client: self,
            enc,
            origin: &origin,
            redactor: &redactor,
            timeout,
            deadline: tokio::time::Instant::now() + timeout,
            refused_limits: options.refused_limits.as_ref(),
            answer_form: options.answer_form,
            probe_stream_tools: options.probe_stream_tools,
        };
        let result = exchange.run(on_delta).await;
        result.map_err(|e| {
            let e = redactor.error(origin.name(e));
            tracing::debug!(
                provider = %origin.service,
                endpoint = %origin.endpoint,
                error = %e,
                "model call failed"
            );
            e
        })
    }
}

/// One attempt: the request, its answer, and everything its errors must name.
struct Exchange<'a> {
    client: &'a ModelClient,
    enc: &'a EncodedRequest,
    origin: &'a Origin,
    redactor: &'a Redactor,
    timeout: Duration,
    deadline: tokio::time::Instant,
    refused_limits: Option<&'a LimitSink>,
    answer_form: Option<crate::llm::StructuredOutput>,
    probe_stream_tools: bool,
}

impl Exchange<'_> {
    fn too_late(&self) -> Error {
        self.origin
            .transport(&format!("no answer within {:?}", self.timeout))
    }

    async fn run(&self, on_delta: &mut (dyn FnMut(StreamDelta) + Send)) -> Result<SendOutcome> {
        let started = Instant::now();
        let url = endpoint_url(&self.enc.url)?;
        self.log_body("model request", &self.enc.body);
        let request = self
            .client
            .http
            .post(url)
            .headers(request_headers(self.enc)?)
            .body(self.enc.body.clone());
        let resp = match tokio::time::timeout_at(self.deadline, request.send()).await {
            Err(_) => return Err(self.too_late()),
            Ok(Err(e)) => return Err(self.failed_to_send(e)),
            Ok(Ok(resp)) => resp,
        };
        let status = resp.status();
        let now = SystemTime::now();
        let rate = headers::rate_observation(resp.headers(), now);
        if !status.is_success() {
            return Err(self.refused(resp, now).await);
        }
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let response = if self.enc.plan.stream && content_type.starts_with("text/event-stream") {
            let events = resp.bytes_stream().eventsource().map(|r| {
                r.map(|ev| ev.data).map_err(|e| match e {
                    eventsource_stream::EventStreamError::Transport(f) => chain(&f.without_url()),
                    other => other.to_string(),
                })
            });
            self.read_stream(events, on_delta).await?
        } else if self.enc.plan.stream
            && content_type.starts_with(crate::llm::bedrock::stream::CONTENT_TYPE)
        {
            // Bedrock's binary event-stream frames, read through the same loop.
            let events = crate::llm::bedrock::stream::events(resp.bytes_stream());
            self.read_stream(events, on_delta).await?
        } else {
            let body = match tokio::time::timeout_at(self.deadline, resp.bytes()).await {
                Err(_) => return Err(self.too_late()),
                Ok(Err(e)) => {
                    return Err(self.origin.transport(&format!(
                        "the answer's body broke off: {}",
                        chain(&e.without_url())
                    )));
                }
                Ok(Ok(body)) => body,
            };
            self.log_body("model response", &body);
            let response = self.decode_whole(&body, &content_type)?;
            // A whole answer (the server ignored `stream`, or the call was asked whole because
            // the provider cannot stream it) is handed to a stream's reader at once; a caller
            // that reads no stream passes a callback that does nothing.
            replay_as_deltas(&response, on_delta);
            response
        };
        Ok(SendOutcome {
            response,
            rate,
            latency: started.elapsed(),
        })
    }

    /// A request that got no answer: refused, unreachable, TLS, or a request reqwest could not
    /// build.
    fn failed_to_send(&self, e: reqwest::Error) -> Error {
        let (builder, tls, connect) = (e.is_builder(), is_tls(&e), e.is_connect());
        let what = chain(&e.without_url());
        if builder {
            return Error::system(
                WHO,
                format!(
                    "the request to {} could not be made: {what}",
                    self.origin.endpoint
                ),
            );
        }
        if tls {
            return Error::external(
                self.origin.service.clone(),
                "tls",
                format!(
                    "TLS with the server failed (is its certificate trusted? see \
                     ModelClientBuilder::add_root_certificates): {what}{}",
                    self.origin.whereabouts()
                ),
            );
        }
        if connect {
            return self
                .origin
                .transport(&format!("the connection failed: {what}"));
        }
        self.origin.transport(&what)
    }

    /// A failure status: read what the provider said and map it.
    async fn refused(&self, resp: reqwest::Response, now: SystemTime) -> Error {
        let status = resp.status().as_u16();
        let retry_after = headers::retry_after(resp.headers(), now);
        let error_headers = resp.headers().clone();
        let location = resp
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(|l| self.redactor.text(l).into_owned());
        let body = match tokio::time::timeout_at(self.deadline, resp.bytes()).await {
            Ok(Ok(b)) => b,
            _ => bytes::Bytes::new(),
        };
        // A `google.rpc` error (Gemini) states its wait in the body (`RetryInfo`), not in a
        // header: it feeds admission the same way.
        let retry_after = retry_after.or_else(|| gemini::retry_delay(&body));
        // So does the figure of each per-minute quota it broke: admission paces at it from the
        // pause this refusal brings on.
        if let (Some(sink), Some(stated)) = (self.refused_limits, gemini::quota_limits(&body)) {
            (sink.0)(stated);
        }
        // Bedrock names the exception in `x-amzn-ErrorType` (or `__type`), beside `message`.
        let mut said = if self.enc.plan.dialect == crate::llm::Dialect::BedrockConverse {
            crate::llm::bedrock::decode::provider_error(&error_headers, &body)
        } else {
            ProviderError::from_body(&body)
        };
        said.message = self.redactor.text(&said.message).into_owned();
        let model = model_of(self.enc);
        tracing::debug!(
            provider = %self.origin.service,
            endpoint = %self.origin.endpoint,
            status,
            message = %said.message,
            "the provider refused a request"
        );
        if let Some(form) = self.answer_form
            && let Some(line) = errors::refuses_form(status, &said, &body)
        {
            return self.origin.form_refused(status, &line, form);
        }
        self.origin.refusal(
            status,
            &said,
            retry_after,
            location.as_deref(),
            model.as_deref(),
        )
    }

    /// A whole answer: JSON, decoded by the dialect. An answer that is not JSON, or not the
    /// shape the protocol defines, is an [`crate::RetrySignal::UnreadableAnswer`].
    fn decode_whole(&self, body: &[u8], content_type: &str) -> Result<ChatResponse> {
        let shown_type = if content_type.is_empty() {
            "none".to_owned()
        } else {
            content_type.to_owned()
        };
        if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_err() {
            return Err(unreadable(
                self.origin,
                &format!(
                    "the answer was not JSON (content-type `{shown_type}`, {} bytes)",
                    body.len()
                ),
            ));
        }
        // The dialects report a body of the wrong shape as an unreadable answer themselves.
        codec::decode(&self.enc.plan, body)
    }

    /// Read a stream of events (each event's data, or what broke) to its end.
    async fn read_stream(
        &self,
        events: impl futures::Stream<Item = std::result::Result<String, String>>,
        on_delta: &mut (dyn FnMut(StreamDelta) + Send),
    ) -> Result<ChatResponse> {
        let idle = self.client.limits.stream_idle_timeout;
        let mut decoder = StreamDecoder::new(self.enc.plan);
        let mut events = std::pin::pin!(events);
        let mut first = true;
        loop {
            // The attempt's deadline bounds the wait for the first event (a model may think
            // silently before it answers); the idle timeout bounds each wait after it.
            let waited_first = std::mem::replace(&mut first, false);
            let next = if waited_first {
                tokio::time::timeout_at(self.deadline, events.next()).await
            } else {
                tokio::time::timeout(idle, events.next()).await
            };
            match next {
                Err(_) if decoder.delivered_content() => {
                    return Err(self.origin.broken_stream(&format!("no event for {idle:?}")));
                }
                Err(_) if !waited_first => {
                    return Err(self
                        .origin
                        .transport(&format!("the stream stalled: no event for {idle:?}")));
                }
                Err(_) => return Err(self.too_late()),
                Ok(None) => break,
                Ok(Some(Ok(data))) => {
                    decoder.push(&data, &mut *on_delta)?;
                    if decoder.is_done() {
                        break;
                    }
                }
                Ok(Some(Err(what))) => {
                    return Err(if decoder.delivered_content() {
                        self.origin.broken_stream(&what)
                    } else {
                        self.origin
                            .transport(&format!("the stream broke off: {what}"))
                    });
                }
            }
        }
        let delivered = decoder.delivered_content();
        let response = decoder.finish(&mut *on_delta).map_err(|e| match e {
            // Ended before any content, while the provider's `stream_tools` is being found.
            Error::Retry(_) if self.probe_stream_tools && !delivered => {
                self.origin.tool_stream_empty()
            }
            e => e,
        })?;
        if tracing::enabled!(tracing::Level::DEBUG) {
            // A stream has no one body: the answer decoded from it stands for it.
            self.log_body(
                "model response (streamed, decoded)",
                &serde_json::to_vec(&response).unwrap_or_default(),
            );
        }
        Ok(response)
    }

    /// A request or response body at debug level. Bodies only, never headers (the keys); the
    /// redactor removes the request's secrets and [`Payload`] withholds the text unless
    /// payload logging is on (`--log-payloads`, `THINKERS_LOG_PAYLOADS`).
    fn log_body(&self, what: &'static str, body: &[u8]) {
        tracing::debug!(
            provider = %self.origin.service,
            endpoint = %self.origin.endpoint,
            body = %Payload(&self.redactor.text(&String::from_utf8_lossy(body))),
            "{what}"
        );
    }
}

fn unreadable(origin: &Origin, what: &str) -> Error {
    Error::Retry(crate::RetrySignal::UnreadableAnswer {
        service: origin.service.clone(),
        detail: format!("{what}{}", origin.whereabouts()),
    })
}
