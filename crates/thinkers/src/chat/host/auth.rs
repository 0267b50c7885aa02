//! Who the host lets in, and how much it reads: the token check in front of every route, the
//! refusal of cross-site writes, and the request-body limit (see [`super::HostToken`] for how a
//! client presents the token).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{ChatHost, HostToken, TOKEN_COOKIE};

/// Let the request through when the host needs no token or the request carries it (bearer
/// header or cookie). A browser's `GET` of a page with `?token=` gets the cookie and a redirect
/// to the same page without the query. Anything else is a 401 that says how to send it.
pub(super) async fn require_token(
    State(host): State<ChatHost>,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = host.config().token.clone() else {
        return next.run(request).await;
    };
    if carries(&token, request.headers()) {
        return next.run(request).await;
    }
    let path = request.uri().path().to_owned();
    let page = request.method() == Method::GET && !path.starts_with("/api/");
    if page && query_token(request.uri().query()).is_some_and(|t| token.matches(&t)) {
        let cookie = format!(
            "{TOKEN_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            token.expose()
        );
        return (
            StatusCode::SEE_OTHER,
            [
                (header::SET_COOKIE, cookie),
                (header::LOCATION, path),
                (header::CACHE_CONTROL, "no-store".to_owned()),
            ],
        )
            .into_response();
    }
    let body = json!({
        "error": "this host requires its token: send `Authorization: Bearer TOKEN`, or open \
                  /?token=TOKEN once in a browser (it sets a cookie)",
        "field": "token",
    });
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        axum::Json(body),
    )
        .into_response()
}

/// Whether the headers carry `token`, as a bearer token or in the host's cookie.
fn carries(token: &HostToken, headers: &HeaderMap) -> bool {
    let bearer = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.trim().strip_prefix("Bearer "))
        .any(|t| token.matches(t.trim()));
    if bearer {
        return true;
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .any(|(k, v)| k == TOKEN_COOKIE && token.matches(v))
}

/// The `token` parameter of a query string, percent-decoded.
fn query_token(query: Option<&str>) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
}

/// Refuse a body over [`super::HostConfig::max_body_bytes`] with a 413 naming `body`: at once
/// when its `Content-Length` says so, and when the limit stops reading a body sent without one
/// (axum's plain-text refusal is replaced by the host's JSON).
pub(super) async fn limit_body(
    State(host): State<ChatHost>,
    request: Request,
    next: Next,
) -> Response {
    let max = host.config().max_body_bytes;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return too_large(max);
    }
    let response = next.run(request).await;
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if response.status() == StatusCode::PAYLOAD_TOO_LARGE && !json {
        return too_large(max);
    }
    response
}

fn too_large(max: usize) -> Response {
    let body = json!({
        "error": format!("the request body is larger than the {max} bytes this host accepts"),
        "field": "body",
    });
    (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(body)).into_response()
}

/// Refuse a request that changes something (any method but `GET`, `HEAD`, `OPTIONS`) when a
/// browser says it comes from another site: its `Origin` is not this host. Without a token a
/// page on any site could otherwise post to a host on the person's own machine (a form or a
/// `fetch` without preflight); with one the `SameSite=Strict` cookie already stays home, and
/// this is a second wall. Clients that send no `Origin` (curl, scripts) are not affected.
pub(super) async fn same_origin_writes(request: Request, next: Next) -> Response {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let headers = request.headers();
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let foreign = match (origin, host) {
        (None, _) => false,
        (Some(o), Some(h)) => {
            let o = o.trim_end_matches('/');
            o != format!("http://{h}") && o != format!("https://{h}")
        }
        (Some(_), None) => true,
    };
    if safe || !foreign {
        return next.run(request).await;
    }
    let body = json!({
        "error": "a request from another site may not change anything here",
        "field": "origin",
    });
    (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
}
