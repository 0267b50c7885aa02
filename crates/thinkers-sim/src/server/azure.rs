//! Azure OpenAI's paths, served by the same pipeline as OpenAI's:
//!
//! * `POST /openai/deployments/{deployment}/chat/completions?api-version=…` (the deployment
//!   names the model);
//! * `POST /openai/responses?api-version=…` (the body's `model` names the deployment);
//! * the v1 surface, `POST /openai/v1/chat/completions` and `POST /openai/v1/responses`
//!   (`api-version` optional).
//!
//! The key travels in `api-key` (or as a bearer token). A deployment path or the Responses path
//! without `api-version` gets Azure's 404 `Resource not found`, as the service answers a call
//! without a version it serves.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::pipeline::{self, Azure};
use super::state::Shared;
use crate::exchange::Dialect;

/// The `api-version` query value, if one is given.
fn api_version(query: Option<&str>) -> Option<&str> {
    query?
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == "api-version")
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

/// Azure's answer to a path it does not serve without a version.
fn resource_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"error": {"code": "404", "message": "Resource not found"}})),
    )
        .into_response()
}

pub(super) async fn deployment_chat(
    State(shared): State<Arc<Shared>>,
    Path(deployment): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if api_version(query.as_deref()).is_none() {
        return resource_not_found();
    }
    let azure = Azure {
        deployment: Some(deployment),
    };
    let endpoint = "/openai/deployments/{deployment}/chat/completions";
    pipeline::handle_as(
        shared,
        Dialect::OpenAi,
        endpoint,
        headers,
        body,
        Some(azure),
    )
    .await
}

pub(super) async fn versioned_responses(
    State(shared): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if api_version(query.as_deref()).is_none() {
        return resource_not_found();
    }
    let endpoint = "/openai/responses";
    let azure = Some(Azure::default());
    pipeline::handle_as(
        shared,
        Dialect::OpenAiResponses,
        endpoint,
        headers,
        body,
        azure,
    )
    .await
}

pub(super) async fn v1_chat(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let endpoint = "/openai/v1/chat/completions";
    let azure = Some(Azure::default());
    pipeline::handle_as(shared, Dialect::OpenAi, endpoint, headers, body, azure).await
}

pub(super) async fn v1_responses(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let endpoint = "/openai/v1/responses";
    let azure = Some(Azure::default());
    pipeline::handle_as(
        shared,
        Dialect::OpenAiResponses,
        endpoint,
        headers,
        body,
        azure,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_api_version() {
        assert_eq!(
            api_version(Some("api-version=2024-10-21")),
            Some("2024-10-21")
        );
        assert_eq!(
            api_version(Some("x=1&api-version=preview")),
            Some("preview")
        );
        assert_eq!(api_version(Some("api-version=")), None);
        assert_eq!(api_version(None), None);
    }
}
