//! Loopback fakes and assertions shared by the service-tool tests.
//!
//! * [`Fake`]: an axum server on 127.0.0.1:0 whose routes replay fixture bodies and count hits;
//! * [`raw_server`]: a bare TCP server that answers some requests with canned bytes and hangs up
//!   on the rest, for the "connection dropped" outcome;
//! * [`closed_port`]: a loopback port nothing listens on, for "connection refused".

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use serde_json::Value;
use thinkers::tool::{Tool, ToolCallContext, ToolOutput, ToolProvider, TypedToolProvider};
use thinkers::{Dispatcher, Error, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A fixture file's text.
pub fn fixture(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("fixture {}: {e}", full.display()))
}

/// A running fake HTTP server.
pub struct Fake {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Fake {
    /// Serve `router` on a fresh loopback port.
    pub async fn start(router: Router) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        Self { addr, task }
    }

    /// `http://127.0.0.1:<port>` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A hit counter a route increments.
#[derive(Clone, Default)]
pub struct Hits(Arc<AtomicUsize>);

impl Hits {
    pub fn bump(&self) -> usize {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A bare TCP server: each connection's request head is handed to `answer`; `Some(bytes)` is
/// written back (then the connection closes), `None` closes the connection without a byte.
pub async fn raw_server(
    answer: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
) -> (SocketAddr, Hits) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hits = Hits::default();
    let counted = hits.clone();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.bump();
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                if let Some(reply) = answer(&String::from_utf8_lossy(&head)) {
                    let _ = socket.write_all(reply.as_bytes()).await;
                }
                let _ = socket.shutdown().await;
            });
        }
    });
    (addr, hits)
}

/// A whole HTTP/1.1 response with a body.
pub fn http_response(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A loopback port nothing listens on (bound, then released).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Run one call of a typed tool through a dispatcher, as a model's JSON arguments.
pub async fn call<T: Tool>(d: &Dispatcher, tool: T, args: Value) -> Result<ToolOutput> {
    let provider = TypedToolProvider::new(tool);
    let job = provider.instantiate(&args, &ToolCallContext::default())?;
    d.run(job).await
}

/// Assert an invalid-input error naming `parameter`, whose value contains `value`.
#[track_caller]
pub fn assert_invalid(err: &Error, parameter: &str, value: &str) {
    match err {
        Error::InvalidInput {
            parameter: p,
            value: v,
            ..
        } => {
            assert_eq!(p, parameter, "wrong parameter in {err}");
            let v = v.as_deref().unwrap_or_else(|| panic!("no value in {err}"));
            assert!(v.contains(value), "value {v:?} lacks {value:?} in {err}");
        }
        other => panic!("expected invalid input on {parameter}, got {other:?}"),
    }
}

/// Assert an external-service failure naming `service` and `step`.
#[track_caller]
pub fn assert_external(err: &Error, service: &str, step: &str) {
    match err {
        Error::ExternalService {
            service: s,
            step: st,
            ..
        } => {
            assert_eq!(s, service, "wrong service in {err}");
            assert_eq!(st, step, "wrong step in {err}");
        }
        other => panic!("expected an external-service failure of {service}, got {other:?}"),
    }
}
