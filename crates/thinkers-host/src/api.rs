//! The host's HTTP surface: the page, the JSON API and the event streams. Request bodies are
//! read as bytes and parsed here, so every refusal is the host's own JSON naming the field.

use std::convert::Infallible;

use axum::Router;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::session::Numbered;
use super::{ChatHost, Posted};
use thinkers::Error;

const PAGE: &str = include_str!("page.html");

/// The page, the API and the explorer behind the access checks; `listening` is the address
/// [`ChatHost::start`] bound (`None` for a router its embedder serves).
pub(super) fn router(host: ChatHost, listening: Option<std::net::SocketAddr>) -> Router {
    let served = super::auth::Served {
        token_required: host.config().token.is_some(),
        listening,
    };
    Router::new()
        .route("/", get(page))
        .route("/api/chats", get(list_chats).post(create_chat))
        .route("/api/chats/{id}", get(history))
        .route(
            "/api/chats/{id}/messages",
            axum::routing::post(post_message),
        )
        .route("/api/chats/{id}/events", get(events))
        .route(
            "/api/chats/{id}/approvals/{approval}",
            axum::routing::post(decide),
        )
        .merge(super::explorer::routes())
        // Innermost first: the body limit, cross-site writes refused, the token check, then
        // (without a token) the loopback-name check in front of everything.
        .layer(DefaultBodyLimit::max(host.config().max_body_bytes))
        .layer(middleware::from_fn_with_state(
            host.clone(),
            super::auth::limit_body,
        ))
        .layer(middleware::from_fn_with_state(
            served,
            super::auth::same_origin_writes,
        ))
        .layer(middleware::from_fn_with_state(
            host.clone(),
            super::auth::require_token,
        ))
        .layer(middleware::from_fn_with_state(
            served,
            super::auth::loopback_names_only,
        ))
        .with_state(host)
}

/// A refusal: status, what was wrong, and the field it was wrong in.
#[derive(Debug)]
pub(super) struct ApiError {
    status: StatusCode,
    field: String,
    message: String,
}

impl ApiError {
    pub(super) fn new(status: StatusCode, field: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            field: field.to_owned(),
            message: message.into(),
        }
    }

    /// What was wrong.
    pub(super) fn message(&self) -> &str {
        &self.message
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": self.message, "field": self.field});
        (self.status, axum::Json(body)).into_response()
    }
}

/// A library error as a response: an unknown chat is a 404, another invalid input a 422 naming
/// its parameter, anything else a 500.
impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        match &e {
            Error::InvalidInput { parameter, .. } if parameter == "chat_id" => {
                Self::new(StatusCode::NOT_FOUND, "chat_id", e.to_string())
            }
            Error::InvalidInput { parameter, .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, parameter, e.to_string())
            }
            _ => {
                tracing::warn!(error = %e, "chat host request failed");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "", e.to_string())
            }
        }
    }
}

async fn page() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-store")], Html(PAGE))
}

/// The body as a JSON object; an empty body is `{}` when `empty_ok`.
pub(super) fn json_object(
    body: &Bytes,
    empty_ok: bool,
) -> Result<serde_json::Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) && empty_ok {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "body",
            "the body must be a JSON object",
        )),
        Err(e) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "body",
            format!("the body is not valid JSON: {e}"),
        )),
    }
}

async fn create_chat(State(host): State<ChatHost>, body: Bytes) -> Result<Response, ApiError> {
    let map = json_object(&body, true)?;
    let title = match map.get("title") {
        None | Some(Value::Null) => "New chat".to_owned(),
        Some(Value::String(t)) if t.trim().is_empty() => "New chat".to_owned(),
        Some(Value::String(t)) if t.len() > host.config().max_title_bytes => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "title",
                format!(
                    "the title is {} bytes; at most {} are accepted",
                    t.len(),
                    host.config().max_title_bytes
                ),
            ));
        }
        Some(Value::String(t)) => t.trim().to_owned(),
        Some(_) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "title",
                "the title must be a string",
            ));
        }
    };
    let chat = host.create_chat(&title).await?;
    Ok((StatusCode::CREATED, axum::Json(chat)).into_response())
}

async fn list_chats(State(host): State<ChatHost>) -> Result<Response, ApiError> {
    let chats = host.list_chats().await?;
    Ok(axum::Json(json!({ "chats": chats })).into_response())
}

async fn history(
    State(host): State<ChatHost>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    Ok(axum::Json(host.history(&id).await?).into_response())
}

async fn post_message(
    State(host): State<ChatHost>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    // An unknown chat is named before anything about the body.
    host.session(&id).await?;
    let map = json_object(&body, false)?;
    let text = match map.get("text") {
        Some(Value::String(t)) => t,
        Some(_) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "text",
                "text must be a string",
            ));
        }
        None => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "text",
                "the body has no text field",
            ));
        }
    };
    if text.trim().is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "text",
            "the message is empty",
        ));
    }
    let max = host.config().max_message_bytes;
    if text.len() > max {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "text",
            format!(
                "the message is {} bytes; at most {max} are accepted",
                text.len()
            ),
        ));
    }
    let posted = host.post(&id, text.clone()).await?;
    let body = json!({
        "chat_id": id,
        "joined": posted == Posted::Joined,
    });
    Ok((StatusCode::ACCEPTED, axum::Json(body)).into_response())
}

/// `{"decision": "approve"}`, `{"decision": "deny", "reason": "…"}`, `{"decision": "skip",
/// "result": "…"}` or `{"decision": "fail", "reason": "…"}`: decide a call the chat waits on (by
/// its stored id: the decision covers that call's arguments only); the turn goes on once nothing
/// of it waits.
async fn decide(
    State(host): State<ChatHost>,
    Path((id, approval)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, ApiError> {
    host.session(&id).await?;
    let decision = decision_of(&body, host.config())?;
    let decided = host.decide(&id, &approval, &decision).await?;
    Ok(decided_json(&decided))
}

/// The decision a body asks for (a reason or result longer than a message is refused with 413,
/// naming the field). Nothing else the client sends is read: what is decided is the stored call.
pub(super) fn decision_of(
    body: &Bytes,
    config: &super::HostConfig,
) -> Result<thinkers::durable::Decision, ApiError> {
    let map = json_object(body, false)?;
    let reason = match map.get("reason") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(r)) => r.clone(),
        Some(_) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "reason",
                "reason must be a string",
            ));
        }
    };
    if reason.len() > config.max_message_bytes {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "reason",
            format!(
                "the reason is {} bytes; at most {} are accepted",
                reason.len(),
                config.max_message_bytes
            ),
        ));
    }
    let result = match map.get("result") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) if r.len() > config.max_message_bytes => {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "result",
                format!(
                    "the result is {} bytes; at most {} are accepted",
                    r.len(),
                    config.max_message_bytes
                ),
            ));
        }
        Some(Value::String(r)) if !r.trim().is_empty() => Some(r.clone()),
        Some(_) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "result",
                "result must be a non-empty string",
            ));
        }
    };
    match map.get("decision").and_then(Value::as_str) {
        Some("approve") => Ok(thinkers::durable::Decision::Approve),
        Some("deny") => Ok(thinkers::durable::Decision::Deny { reason }),
        Some("skip") => match result {
            Some(result) => Ok(thinkers::durable::Decision::Skip { result }),
            None => Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "result",
                "a skip states the call's result: send \"result\"",
            )),
        },
        Some("fail") => Ok(thinkers::durable::Decision::Fail { reason }),
        _ => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "decision",
            "decision must be \"approve\", \"deny\", \"skip\" or \"fail\"",
        )),
    }
}

/// What a decision answers: the approval's id, new status and tool.
pub(super) fn decided_json(decided: &thinkers::durable::Approval) -> Response {
    axum::Json(json!({
        "id": decided.id,
        "status": decided.status.as_str(),
        "tool": decided.tool,
    }))
    .into_response()
}

#[derive(Debug, Deserialize)]
struct EventsQuery {
    after: Option<u64>,
}

async fn events(
    State(host): State<ChatHost>,
    Path(id): Path<String>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let session = host.session(&id).await?;
    let from_header = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    // A reconnecting EventSource repeats the URL it first used: its header is the newer truth.
    let after = from_header
        .or(query.after)
        .unwrap_or_else(|| session.last_id());
    let (replay, live) = session.subscribe(after);
    let last_replayed = replay.last().map_or(after, |n| n.id);
    let stream = futures::stream::iter(replay)
        .chain(live_events(live, last_replayed))
        .map(|n| Ok::<_, Infallible>(to_sse(&n)))
        .take_until(host.stopping().cancelled_owned());
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Events from the live channel after `after`. A subscriber that fell too far behind is told
/// with an `error` event rather than silently missing events.
fn live_events(
    live: broadcast::Receiver<Numbered>,
    after: u64,
) -> impl Stream<Item = Numbered> + Send {
    futures::stream::unfold((live, after), |(mut live, after)| async move {
        loop {
            match live.recv().await {
                Ok(n) if n.id <= after => {}
                Ok(n) => {
                    let id = n.id;
                    return Some((n, (live, id)));
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    let n = Numbered {
                        id: after,
                        event: thinkers::thinker::ChatEvent::Error {
                            message: format!(
                                "{missed} events were missed by this stream; reload the chat"
                            ),
                        },
                    };
                    return Some((n, (live, after)));
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

fn to_sse(n: &Numbered) -> Event {
    let data = serde_json::to_string(&n.event).unwrap_or_else(|_| "{}".to_owned());
    Event::default()
        .id(n.id.to_string())
        .event(n.event.name())
        .data(data)
}
