//! The endpoints around the model endpoints: the model list and the `/sim/*` control surface.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::state::Shared;
use crate::fault::FaultRule;

/// `GET /v1/models`: OpenAI's list shape, or Anthropic's when an `anthropic-version` header is
/// present.
pub(crate) async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let names = shared.model_names();
    if headers.contains_key("anthropic-version") {
        let data: Vec<Value> = names
            .iter()
            .map(|n| {
                json!({
                    "type": "model",
                    "id": n,
                    "display_name": n,
                    "created_at": "2025-01-01T00:00:00Z"
                })
            })
            .collect();
        return Json(json!({
            "data": data,
            "has_more": false,
            "first_id": names.first(),
            "last_id": names.last()
        }))
        .into_response();
    }
    let data: Vec<Value> = names
        .iter()
        .map(|n| json!({"id": n, "object": "model", "created": 1_735_689_600, "owned_by": "thinkers-sim"}))
        .collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

/// `GET /sim/stats`.
pub(crate) async fn stats(State(shared): State<Arc<Shared>>) -> Response {
    Json(shared.stats()).into_response()
}

/// `POST /sim/reset`.
pub(crate) async fn reset(State(shared): State<Arc<Shared>>) -> Response {
    shared.reset();
    Json(json!({"reset": true})).into_response()
}

/// `POST /sim/faults`: one rule or an array of rules; answers the pending rules.
pub(crate) async fn inject(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let parsed: Result<Vec<FaultRule>, serde_json::Error> =
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Array(items)) => items.into_iter().map(serde_json::from_value).collect(),
            Ok(one) => serde_json::from_value(one).map(|r| vec![r]),
            Err(e) => Err(e),
        };
    match parsed {
        Ok(rules) => {
            for rule in rules {
                shared.inject(rule);
            }
            Json(json!({"pending": shared.pending_faults()})).into_response()
        }
        Err(e) => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": format!("invalid fault rule: {e}")})),
        )
            .into_response(),
    }
}

/// `GET /sim/faults`: the injected rules not yet consumed.
pub(crate) async fn pending(State(shared): State<Arc<Shared>>) -> Response {
    Json(json!({"pending": shared.pending_faults()})).into_response()
}

/// `GET /sim/requests`.
pub(crate) async fn requests(State(shared): State<Arc<Shared>>) -> Response {
    Json(shared.requests()).into_response()
}

/// Anything else: a JSON 404.
pub(crate) async fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({"error": {"message": "Unknown endpoint.", "type": "invalid_request_error", "param": null, "code": "unknown_url"}})),
    )
        .into_response()
}
