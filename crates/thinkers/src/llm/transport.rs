//! The HTTP under [`super::ModelClient`]: one pooled HTTP/1.1 client over rustls.
//!
//! Model calls go through hyper-util's pooled client and hyper-rustls directly. reqwest wraps
//! the same client in a redirect policy, a retry layer and a proxy layer, and its redirect
//! policy parses the request URL twice per request; on a cheap model call those layers cost
//! more than the rest of the runtime's own work, so the common path leaves them out.
//!
//! What that path keeps from reqwest's defaults, and what it does not:
//!
//! * **Proxies.** The proxy environment variables (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`,
//!   `NO_PROXY`, and their lower-case forms) are read once, when the client is built. An
//!   endpoint they send through a proxy, or every endpoint when
//!   [`super::ModelClientBuilder::proxy`] names one, goes through reqwest, which speaks to
//!   proxies (tunnels, proxy credentials). So does an endpoint whose URL holds credentials
//!   (`https://user:pass@host`), which reqwest sends as basic authentication. Each endpoint's
//!   choice is made once and kept.
//! * **TLS.** The same trust as reqwest's `rustls` feature: the platform verifier (the system's
//!   roots) with the aws-lc-rs provider, or whichever provider the process installed as its
//!   default; plus any roots added with [`super::ModelClientBuilder::add_root_certificates`].
//! * **Timeouts.** The connect timeout is the connector's; the request deadline is kept by the
//!   caller over the whole exchange (head, body, stream).
//! * **Redirects are not followed** on either path: a model API does not redirect, and an API
//!   key is never sent on to another address. A 3xx answer is an error naming the status.

use std::error::Error as StdError;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::ACCEPT;
use http::{HeaderName, HeaderValue, Request, Uri};
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::CertificateDer;

use crate::llm::encoded::EncodedRequest;
use crate::{Error, Result};

const WHO: &str = "model client";

/// How many parsed endpoints a client keeps before starting over.
const MAX_ENDPOINTS: usize = 64;

/// Idle pooled connections are closed after this long (reqwest's default).
const POOL_IDLE: Duration = Duration::from_secs(90);

/// TCP keepalive on pooled connections (reqwest's default).
const KEEPALIVE: Duration = Duration::from_secs(15);

/// What a [`Transport`] is built from.
pub(crate) struct Settings {
    pub(crate) connect_timeout: Duration,
    /// A proxy for every request, instead of the environment's.
    pub(crate) proxy: Option<String>,
    /// Roots trusted beside the system's.
    pub(crate) roots: Vec<CertificateDer<'static>>,
}

/// The two ways a request can go out, and which one each endpoint takes.
pub(crate) struct Transport {
    direct: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    via_reqwest: ProxyPath,
    proxies: Matcher,
    endpoints: RwLock<foldhash::HashMap<String, Endpoint>>,
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let endpoints = self
            .endpoints
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("Transport")
            .field("endpoints", &endpoints)
            .finish_non_exhaustive()
    }
}

/// The reqwest client for proxied endpoints, built when an endpoint first needs it: most
/// deployments never send through a proxy, and building it loads the system's roots a second
/// time.
struct ProxyPath {
    client: OnceLock<reqwest::Client>,
    connect_timeout: Duration,
    roots: Vec<CertificateDer<'static>>,
    /// The proxy named on the builder; without one, reqwest reads the environment as the
    /// matcher did.
    proxy: Option<reqwest::Proxy>,
}

impl ProxyPath {
    /// The client, built on the first call.
    fn client(&self) -> Result<&reqwest::Client> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let built = self.build()?;
        Ok(self.client.get_or_init(|| built))
    }

    fn build(&self) -> Result<reqwest::Client> {
        let built = |what: &str, e: reqwest::Error| {
            Error::system(
                WHO,
                format!("the HTTP client for proxied endpoints could not be built: {what}"),
            )
            .with_source(e)
        };
        let mut client = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .redirect(reqwest::redirect::Policy::none());
        for der in &self.roots {
            let cert =
                reqwest::Certificate::from_der(der).map_err(|e| built("an added root", e))?;
            client = client.add_root_certificate(cert);
        }
        if let Some(proxy) = &self.proxy {
            client = client.proxy(proxy.clone());
        }
        client.build().map_err(|e| built("the client", e))
    }
}

/// One endpoint, parsed once.
#[derive(Clone)]
enum Endpoint {
    /// Straight to the server, with its `host` header made once (hyper would format it anew
    /// for every request to a port that is not the scheme's own).
    Direct(Uri, Option<HeaderValue>),
    /// By reqwest: a proxy carries it, or its URL holds credentials (reqwest sends them as
    /// basic authentication).
    Proxied(reqwest::Url),
}

/// An answer's body, from either path.
pub(crate) enum ResponseBody {
    Direct(hyper::body::Incoming),
    Proxied(reqwest::Body),
}

/// A transport failure: what went wrong, and whether it was in reaching the server.
#[derive(Debug)]
pub(crate) struct Fault {
    /// The server was not reached (refused, unresolved, timed out connecting, TLS refused).
    pub(crate) connect: bool,
    /// TLS failed: the server's certificate was not trusted, or no protocol was agreed. Not
    /// something a retry cures.
    pub(crate) tls: bool,
    pub(crate) detail: String,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.connect {
            write!(f, "the connection failed: {}", self.detail)
        } else {
            f.write_str(&self.detail)
        }
    }
}

impl StdError for Fault {}

impl Fault {
    fn from_error(e: &(dyn StdError + 'static)) -> Self {
        let connect = e
            .downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some_and(hyper_util::client::legacy::Error::is_connect)
            || e.downcast_ref::<reqwest::Error>()
                .is_some_and(reqwest::Error::is_connect);
        Self {
            connect,
            tls: connect && is_tls(e),
            detail: chain(e),
        }
    }
}

/// Whether a rustls error is among `e`'s causes. hyper-rustls hands it over inside an
/// `io::Error` inside another, and an `io::Error`'s `source` skips what it wraps.
fn is_tls(e: &(dyn StdError + 'static)) -> bool {
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

/// An error and its causes, outermost first, each said once.
fn chain(e: &(dyn StdError + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !out.contains(&said) {
            out.push_str(": ");
            out.push_str(&said);
        }
        cause = c.source();
    }
    out
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Fault;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<std::result::Result<Frame<Bytes>, Fault>>> {
        match self.get_mut() {
            Self::Direct(b) => Pin::new(b)
                .poll_frame(cx)
                .map_err(|e| Fault::from_error(&e)),
            Self::Proxied(b) => Pin::new(b)
                .poll_frame(cx)
                .map_err(|e| Fault::from_error(&e)),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Self::Direct(b) => b.is_end_stream(),
            Self::Proxied(b) => b.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Direct(b) => b.size_hint(),
            Self::Proxied(b) => b.size_hint(),
        }
    }
}

impl Transport {
    pub(crate) fn new(settings: Settings) -> Result<Self> {
        let built = |what: &str, e: Box<dyn StdError + Send + Sync>| {
            Error::system(WHO, format!("the HTTP client could not be built: {what}")).with_source(e)
        };
        let provider = rustls::crypto::CryptoProvider::get_default()
            .cloned()
            .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()));
        let verifier = if settings.roots.is_empty() {
            rustls_platform_verifier::Verifier::new(provider.clone())
        } else {
            rustls_platform_verifier::Verifier::new_with_extra_roots(
                settings.roots.iter().cloned(),
                provider.clone(),
            )
        }
        .map_err(|e| built("the certificate verifier", e.into()))?;
        // hyper-rustls sets the ALPN protocols itself (HTTP/1.1 only).
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| built("the TLS versions", e.into()))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();

        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(settings.connect_timeout));
        tcp.set_keepalive(Some(KEEPALIVE));
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp);
        let direct = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(https);

        let (proxy, proxies) = match settings.proxy {
            Some(url) => {
                let proxy = reqwest::Proxy::all(url.as_str()).map_err(|e| {
                    Error::system(WHO, format!("the proxy `{url}` is not a valid URL"))
                        .with_source(e)
                })?;
                (Some(proxy), Matcher::builder().all(url).build())
            }
            None => (None, Matcher::from_system()),
        };
        Ok(Self {
            direct,
            via_reqwest: ProxyPath {
                client: OnceLock::new(),
                connect_timeout: settings.connect_timeout,
                roots: settings.roots,
                proxy,
            },
            proxies,
            endpoints: RwLock::default(),
        })
    }

    /// The parsed endpoint for `url`, from the cache when it was seen before.
    fn endpoint(&self, url: &str) -> Result<Endpoint> {
        if let Some(e) = self
            .endpoints
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(url)
        {
            return Ok(e.clone());
        }
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
        let uri: Uri = parsed
            .as_str()
            .parse()
            .map_err(|e: http::uri::InvalidUri| invalid(e.to_string()))?;
        let credentials = !parsed.username().is_empty() || parsed.password().is_some();
        let endpoint = if credentials || self.proxies.intercept(&uri).is_some() {
            Endpoint::Proxied(parsed)
        } else {
            let host = host_header(&uri);
            Endpoint::Direct(uri, host)
        };
        let mut map = self
            .endpoints
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_ENDPOINTS {
            map.clear();
        }
        map.insert(url.to_owned(), endpoint.clone());
        Ok(endpoint)
    }

    /// Send `enc` and wait for the answer's head.
    pub(crate) async fn send(
        &self,
        enc: &EncodedRequest,
    ) -> std::result::Result<http::Response<ResponseBody>, Failure> {
        let headers = request_headers(enc).map_err(Failure::Refused)?;
        match self.endpoint(&enc.url).map_err(Failure::Refused)? {
            Endpoint::Direct(uri, host) => {
                let mut req = Request::post(uri)
                    .body(Full::new(enc.body.clone()))
                    .map_err(|e| Failure::Refused(Error::system(WHO, e.to_string())))?;
                *req.headers_mut() = headers;
                if let Some(host) = host {
                    req.headers_mut().insert(http::header::HOST, host);
                }
                let resp = self
                    .direct
                    .request(req)
                    .await
                    .map_err(|e| Failure::Transport(Fault::from_error(&e)))?;
                Ok(resp.map(ResponseBody::Direct))
            }
            Endpoint::Proxied(url) => {
                let resp = self
                    .via_reqwest
                    .client()
                    .map_err(Failure::Refused)?
                    .post(url)
                    .headers(headers)
                    .body(enc.body.clone())
                    .send()
                    .await
                    .map_err(|e| Failure::Transport(Fault::from_error(&e)))?;
                Ok(http::Response::from(resp).map(ResponseBody::Proxied))
            }
        }
    }
}

/// Why a request got no answer.
#[derive(Debug)]
pub(crate) enum Failure {
    /// It was not sent: nothing about it would go better on a retry.
    Refused(Error),
    /// It was sent, or tried, and the transport failed.
    Transport(Fault),
}

/// The `host` header for `uri`, as hyper writes it: the port only when it is not the scheme's.
fn host_header(uri: &Uri) -> Option<HeaderValue> {
    let host = uri.host()?;
    let default = match uri.scheme_str() {
        Some("https") => 443,
        _ => 80,
    };
    match uri.port_u16() {
        Some(port) if port != default => HeaderValue::from_str(&format!("{host}:{port}")).ok(),
        _ => HeaderValue::from_str(host).ok(),
    }
}

/// Whether `value` can be a header value as it is (what `HeaderValue::from_static` accepts).
fn is_plain_header_text(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

/// The request's headers: the encoded ones (secrets marked sensitive) and `accept` for a stream.
fn request_headers(enc: &EncodedRequest) -> Result<http::HeaderMap> {
    // Room for `accept` and for the two headers hyper adds (`host`, `content-length`): a map that
    // grows rehashes every entry.
    let mut map = http::HeaderMap::with_capacity(enc.headers.len() + 3);
    for h in &enc.headers {
        let bad = || {
            Error::system(
                WHO,
                format!(
                    "the `{}` header's value cannot be sent over HTTP (a line break or another \
                     control character?)",
                    h.name()
                ),
            )
        };
        let name = HeaderName::from_bytes(h.name().as_bytes()).map_err(|_| bad())?;
        // A constant is used as it is; anything else (a key) is checked and copied.
        let mut value = match h.static_value() {
            Some(v) if is_plain_header_text(v) => HeaderValue::from_static(v),
            _ => HeaderValue::from_str(h.raw_value()).map_err(|_| bad())?,
        };
        value.set_sensitive(h.is_secret());
        map.append(name, value);
    }
    if enc.plan.stream {
        map.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_header_names_a_port_only_when_it_is_not_the_schemes() -> anyhow::Result<()> {
        let host = |url: &str| -> anyhow::Result<Option<String>> {
            let uri: Uri = url.parse()?;
            Ok(host_header(&uri).and_then(|v| v.to_str().ok().map(str::to_owned)))
        };
        assert_eq!(
            host("http://a.example:80/v1")?.as_deref(),
            Some("a.example")
        );
        assert_eq!(
            host("https://a.example:443/v1")?.as_deref(),
            Some("a.example")
        );
        assert_eq!(host("https://a.example/v1")?.as_deref(), Some("a.example"));
        assert_eq!(
            host("https://a.example:80/v1")?.as_deref(),
            Some("a.example:80")
        );
        assert_eq!(host("http://[::1]:8089/v1")?.as_deref(), Some("[::1]:8089"));
        Ok(())
    }

    #[test]
    fn only_visible_text_is_used_as_it_is() {
        assert!(is_plain_header_text("application/json"));
        assert!(is_plain_header_text("2023-06-01"));
        assert!(!is_plain_header_text("line\nbreak"));
        assert!(!is_plain_header_text("é"));
    }
}
