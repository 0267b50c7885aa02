//! The HTTP server: the router, the [`Sim`] handle for in-process use, and [`serve`] for running
//! the sim as a program.

mod admin;
mod azure;
mod faulty;
mod pipeline;
mod render;
mod state;

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::SimConfig;
use crate::error::{Result, SimError};
use crate::exchange::Dialect;
use crate::fault::FaultRule;
use crate::stats::{LoggedRequest, StatsSnapshot};
use state::Shared;

/// The largest request body accepted (the Messages API's own limit).
const BODY_LIMIT: usize = 32 * 1024 * 1024;

/// How long [`Sim::shutdown`] waits for open connections before dropping them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

async fn chat_completions(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    pipeline::handle(
        shared,
        Dialect::OpenAi,
        "/v1/chat/completions",
        pipeline::PathArgs::default(),
        headers,
        body,
    )
    .await
}

async fn messages(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    pipeline::handle(
        shared,
        Dialect::Anthropic,
        "/v1/messages",
        pipeline::PathArgs::default(),
        headers,
        body,
    )
    .await
}

/// The Gemini API versions whose `models/{model}:{method}` paths the sim serves, with the same
/// handlers: `v1beta` (what Google's REST examples and most clients call) and `v1` (what the
/// official Python SDK, `google-genai` 3.6, calls when no `api_version` is set).
#[derive(Debug, Clone, Copy)]
enum GeminiVersion {
    V1,
    V1Beta,
}

impl GeminiVersion {
    /// The endpoint as the request log and fault answers name it.
    fn endpoint(self, stream: bool) -> &'static str {
        match (self, stream) {
            (Self::V1, false) => "/v1/models/{model}:generateContent",
            (Self::V1, true) => "/v1/models/{model}:streamGenerateContent",
            (Self::V1Beta, false) => "/v1beta/models/{model}:generateContent",
            (Self::V1Beta, true) => "/v1beta/models/{model}:streamGenerateContent",
        }
    }
}

/// `POST /v1beta/models/{model}:generateContent` and `…:streamGenerateContent?alt=sse`, and the
/// same under `/v1` (`V1`), with the same answers. The `/v1` route sits beside `GET /v1/models`
/// (the model list) without conflict: it takes one more segment.
async fn gemini<const V1: bool>(
    State(shared): State<Arc<Shared>>,
    Path(model_and_method): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let version = if V1 {
        GeminiVersion::V1
    } else {
        GeminiVersion::V1Beta
    };
    gemini_models(
        shared,
        version,
        &model_and_method,
        query.as_deref(),
        headers,
        body,
    )
    .await
}

/// One Gemini `models/{model}:{method}` request, whichever version's path it came by.
async fn gemini_models(
    shared: Arc<Shared>,
    version: GeminiVersion,
    model_and_method: &str,
    query: Option<&str>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (model, method) = model_and_method
        .split_once(':')
        .unwrap_or((model_and_method, ""));
    let sse = query.unwrap_or("").split('&').any(|kv| kv == "alt=sse");
    let stream = match method {
        "generateContent" => false,
        "streamGenerateContent" if sse => true,
        "streamGenerateContent" => {
            return gemini_error(
                axum::http::StatusCode::BAD_REQUEST,
                "INVALID_ARGUMENT",
                "thinkers-sim serves streamGenerateContent only as server-sent events: add \
                 `?alt=sse`.",
            );
        }
        other => {
            return gemini_error(
                axum::http::StatusCode::NOT_FOUND,
                "NOT_FOUND",
                &format!("Method `{other}` is not served by thinkers-sim."),
            );
        }
    };
    let path = pipeline::PathArgs {
        model: Some(model.to_owned()),
        stream,
    };
    let endpoint = version.endpoint(stream);
    pipeline::handle(shared, Dialect::Gemini, endpoint, path, headers, body).await
}

fn gemini_error(status: axum::http::StatusCode, kind: &str, message: &str) -> Response {
    use axum::response::IntoResponse;
    let body =
        serde_json::json!({"error": {"code": status.as_u16(), "message": message, "status": kind}});
    (status, axum::Json(body)).into_response()
}

async fn responses(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    pipeline::handle(
        shared,
        Dialect::OpenAiResponses,
        "/v1/responses",
        pipeline::PathArgs::default(),
        headers,
        body,
    )
    .await
}

async fn count_tokens(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    pipeline::count_tokens(shared, headers, body).await
}

/// `POST /model/{modelId}/converse` and `/converse-stream` (Bedrock Converse).
async fn converse(
    State(shared): State<Arc<Shared>>,
    Path(model): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    pipeline::handle_bedrock(shared, model, false, headers, body).await
}

async fn converse_stream(
    State(shared): State<Arc<Shared>>,
    Path(model): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    pipeline::handle_bedrock(shared, model, true, headers, body).await
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/model/{model}/converse", post(converse))
        .route("/model/{model}/converse-stream", post(converse_stream))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/responses", post(responses))
        .route(
            "/openai/deployments/{deployment}/chat/completions",
            post(azure::deployment_chat),
        )
        .route("/openai/responses", post(azure::versioned_responses))
        .route("/openai/v1/chat/completions", post(azure::v1_chat))
        .route("/openai/v1/responses", post(azure::v1_responses))
        .route("/v1beta/models/{model_and_method}", post(gemini::<false>))
        .route("/v1/models", get(admin::models))
        .route("/v1/models/{model_and_method}", post(gemini::<true>))
        .route("/sim/stats", get(admin::stats))
        .route("/sim/reset", post(admin::reset))
        .route("/sim/faults", post(admin::inject).get(admin::pending))
        .route("/sim/requests", get(admin::requests))
        .fallback(admin::not_found)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| SimError::Bind { addr, source })
}

fn spawn(
    listener: TcpListener,
    shared: Arc<Shared>,
    token: CancellationToken,
) -> JoinHandle<std::io::Result<()>> {
    let app = router(shared);
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { token.cancelled().await })
            .await
    })
}

/// A running simulated provider. Dropping the handle stops the server; [`Sim::shutdown`] stops it
/// and waits for it.
#[derive(Debug)]
pub struct Sim {
    addr: SocketAddr,
    shared: Arc<Shared>,
    token: CancellationToken,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Sim {
    /// Validates `config`, binds 127.0.0.1 on its port (a free one when unset) and serves on the
    /// current tokio runtime.
    pub async fn start(config: SimConfig) -> Result<Self> {
        config.validate()?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, config.port.unwrap_or(0)));
        let listener = bind(addr).await?;
        let addr = listener
            .local_addr()
            .map_err(|source| SimError::Bind { addr, source })?;
        let token = CancellationToken::new();
        let shared = Arc::new(Shared::new(config, token.clone()));
        let task = spawn(listener, Arc::clone(&shared), token.clone());
        tracing::debug!(%addr, "thinkers-sim started");
        Ok(Self {
            addr,
            shared,
            token,
            task: Some(task),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, for example `http://127.0.0.1:43123` (what Anthropic clients take).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The OpenAI base URL: the base URL followed by `/v1`.
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// The Gemini base URL: the base URL followed by `/v1beta`. The same models answer under
    /// `/v1` (the default version of the official Python SDK, `google-genai`).
    pub fn gemini_base_url(&self) -> String {
        format!("{}/v1beta", self.base_url())
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> StatsSnapshot {
        self.shared.stats()
    }

    /// Resets counters, request log, limit windows, request ordinals, injected faults and script
    /// use counts.
    pub fn reset(&self) {
        self.shared.reset();
    }

    /// Queues a fault rule.
    pub fn inject(&self, rule: FaultRule) {
        self.shared.inject(rule);
    }

    /// The logged requests (empty unless the configuration sets `log_bodies`).
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.requests()
    }

    /// Stops accepting requests, cancels hanging ones, and waits (a few seconds at most) for open
    /// connections to finish.
    pub async fn shutdown(mut self) -> Result<()> {
        self.token.cancel();
        let Some(mut task) = self.task.take() else {
            return Ok(());
        };
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await {
            Ok(Ok(result)) => result.map_err(SimError::Serve),
            Ok(Err(join)) => Err(SimError::Serve(std::io::Error::other(join))),
            Err(_) => {
                task.abort();
                Ok(())
            }
        }
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.token.cancel();
    }
}

/// Runs a simulated provider on `addr` until ctrl-c, printing the bound address.
pub async fn serve(config: SimConfig, addr: SocketAddr) -> Result<()> {
    serve_with_shutdown(config, addr, async {
        // If the signal cannot be installed the server runs until the process is killed.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
    .await
}

/// Runs a simulated provider on `addr` until `signal` completes, printing the bound address.
pub async fn serve_with_shutdown(
    config: SimConfig,
    addr: SocketAddr,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    config.validate()?;
    let listener = bind(addr).await?;
    let bound = listener
        .local_addr()
        .map_err(|source| SimError::Bind { addr, source })?;
    let token = CancellationToken::new();
    let shared = Arc::new(Shared::new(config, token.clone()));
    println!("thinkers-sim listening on http://{bound}");
    let stopper = token.clone();
    tokio::spawn(async move {
        signal.await;
        stopper.cancel();
    });
    spawn(listener, shared, token)
        .await
        .map_err(|join| SimError::Serve(std::io::Error::other(join)))?
        .map_err(SimError::Serve)
}
