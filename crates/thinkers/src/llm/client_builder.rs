//! [`ModelClientBuilder`]: the model client's timeouts, proxy and trusted roots.

use std::time::Duration;

use super::client::{ModelClient, WHO};
use crate::{Error, Result};

/// The client's timeouts and waits (see [`ModelClientBuilder`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientLimits {
    /// One attempt: until the head, and until the first event of a stream.
    pub request_timeout: Duration,
    /// The longest silence between events of a stream after its first.
    pub stream_idle_timeout: Duration,
    /// All attempts of one model call together.
    pub call_timeout: Duration,
    /// The cap on a server-requested wait.
    pub max_retry_wait: Duration,
}

/// Builds a [`ModelClient`].
#[derive(Debug, Clone)]
pub struct ModelClientBuilder {
    pub(super) connect_timeout: Duration,
    pub(super) limits: ClientLimits,
    pub(super) proxy: Option<String>,
    pub(super) roots: Vec<Vec<u8>>,
}

impl ModelClientBuilder {
    /// The timeout of one attempt (default 300 s): until the answer's head, and for a stream
    /// until its first event; a non-streamed answer must arrive whole within it.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.limits.request_timeout = timeout;
        self
    }

    /// The longest silence between two events of a stream after its first (default 60 s).
    #[must_use]
    pub fn stream_idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.stream_idle_timeout = timeout;
        self
    }

    /// The time all attempts of one model call may take together, retries and their waits
    /// included (default 300 s). A silent server costs one bounded wait, not one per retry.
    #[must_use]
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.limits.call_timeout = timeout;
        self
    }

    /// The longest wait a server may ask for with `Retry-After` before a retry (default 60 s).
    /// A longer request is logged with the entry and pauses the entry's budget instead.
    #[must_use]
    pub fn max_retry_wait(mut self, wait: Duration) -> Self {
        self.limits.max_retry_wait = wait;
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
    /// `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`) decide.
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
        let failed = |what: String, e: reqwest::Error| {
            Error::system(WHO, format!("the HTTP client could not be built: {what}"))
                .with_source(e.without_url())
        };
        let mut http = reqwest::Client::builder()
            .connect_timeout(self.connect_timeout)
            .tcp_nodelay(true)
            .redirect(reqwest::redirect::Policy::none());
        for (i, pem) in self.roots.iter().enumerate() {
            let n = i + 1;
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| failed(format!("root certificate PEM number {n} is unreadable"), e))?;
            if certs.is_empty() {
                return Err(Error::system(
                    WHO,
                    format!("root certificate PEM number {n} holds no `BEGIN CERTIFICATE` block"),
                ));
            }
            http = http.tls_certs_merge(certs);
        }
        if let Some(url) = &self.proxy {
            let proxy = reqwest::Proxy::all(url.as_str()).map_err(|e| {
                // A proxy URL may carry credentials: one that seems to is not repeated.
                let shown = if url.contains('@') {
                    "(holding credentials)"
                } else {
                    url.as_str()
                };
                Error::system(WHO, format!("the proxy `{shown}` is not a valid URL"))
                    .with_source(e.without_url())
            })?;
            http = http.proxy(proxy);
        }
        let http = http.build().map_err(|e| failed("reqwest".into(), e))?;
        Ok(ModelClient {
            http,
            limits: self.limits,
        })
    }
}
