//! Who the host lets in, and how much it reads: the loopback-name check of a host without a
//! token, the token check in front of every route, the refusal of cross-site writes, and the
//! request-body limit (see [`super::HostToken`] for how a client presents the token, and the
//! host's module docs for which check applies when).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{ChatHost, HostToken, TOKEN_COOKIE};

/// What the access checks know of how the host is served: whether it needs a token, and the
/// address it listens on when [`ChatHost::start`] bound it (a router served by its embedder
/// knows none).
#[derive(Debug, Clone, Copy)]
pub(super) struct Served {
    pub(super) token_required: bool,
    pub(super) listening: Option<SocketAddr>,
}

/// Without a token, let through only a request that names a loopback host: every name it
/// carries (its `Host` header, and the authority of an absolute or HTTP/2 request target) is
/// `localhost`, a `*.localhost` name, an address in `127.0.0.0/8` or `[::1]`, with or without a
/// port. Anything else, or a request naming no host at all (HTTP/1.0), is a 421 with a short
/// plain-text reason. With a token the check is skipped: see the host's module docs for why.
pub(super) async fn loopback_names_only(
    State(served): State<Served>,
    request: Request,
    next: Next,
) -> Response {
    if served.token_required {
        return next.run(request).await;
    }
    let named = request
        .uri()
        .authority()
        .map(|a| a.as_str().as_bytes())
        .into_iter()
        .chain(
            request
                .headers()
                .get_all(header::HOST)
                .iter()
                .map(|v| v.as_bytes()),
        );
    let mut any = false;
    for name in named {
        any = true;
        if !names_loopback(name) {
            return misdirected(&format!("the request names the host {}", shown(name)));
        }
    }
    if !any {
        return misdirected("the request names no host");
    }
    next.run(request).await
}

/// A 421 saying why, in plain text.
fn misdirected(why: &str) -> Response {
    let body = format!(
        "misdirected request: {why}. This chat host has no token, so it answers only requests \
         addressed to this machine by a loopback name (localhost, 127.0.0.1 or [::1], with its \
         port); open it by one of those, or give it a token.\n"
    );
    (
        StatusCode::MISDIRECTED_REQUEST,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// `value` fit to quote: at most 64 bytes, anything but letters, digits and `.-_:[]` shown as
/// `?`, in quotes.
fn shown(value: &[u8]) -> String {
    const MAX: usize = 64;
    let mut out: String = value
        .iter()
        .take(MAX)
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b".-_:[]".contains(&b) {
                char::from(b)
            } else {
                '?'
            }
        })
        .collect();
    if value.len() > MAX {
        out.push('…');
    }
    format!("\"{out}\"")
}

/// Whether an authority (`Host` value) names this machine's loopback: `localhost` or a
/// `*.localhost` name (RFC 6761 keeps both on the loopback), an address in `127.0.0.0/8`, or
/// `[::1]` (an IPv4-mapped loopback address too), each with or without a port.
fn names_loopback(authority: &[u8]) -> bool {
    let Ok(authority) = std::str::from_utf8(authority) else {
        return false;
    };
    split_authority(authority).is_some_and(|(host, _)| is_loopback_host(host))
}

/// An authority's host and port: `[v6]:port`, `name:port` or either without the port; `None`
/// when the port is not a number or the brackets do not close.
fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        match rest {
            "" => (host, None),
            _ => (host, Some(rest.strip_prefix(':')?)),
        }
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
    };
    Some((host, port))
}

/// Whether a host (a name, a dotted IPv4 address or a bracketed IPv6 one) is a loopback one.
fn is_loopback_host(host: &str) -> bool {
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return v6
            .parse::<Ipv6Addr>()
            .is_ok_and(|a| IpAddr::V6(a).to_canonical().is_loopback());
    }
    if let Ok(v4) = host.parse::<Ipv4Addr>() {
        return v4.is_loopback();
    }
    let lower = host.to_ascii_lowercase();
    let Some(sub) = lower.strip_suffix("localhost") else {
        return false;
    };
    sub.is_empty()
        || sub.strip_suffix('.').is_some_and(|labels| {
            labels
                .split('.')
                .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
        })
}

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
            token.expose_secret()
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
/// browser says it comes from another site: its `Origin` is present and is neither this host as
/// the request names it (`http://` or `https://` and its `Host`) nor, for a host listening on a
/// loopback address, a loopback origin with the port it listens on (the page opened as
/// `localhost` posting to `127.0.0.1`). An `Origin` of `null` (a sandboxed frame, a file) is
/// foreign too. Without a token a page on any site could otherwise post to a host on the
/// person's own machine (a form or a `fetch` without preflight); with one the `SameSite=Strict`
/// cookie already stays home, and this is a second wall. Clients that send no `Origin` (curl,
/// scripts) are not affected.
pub(super) async fn same_origin_writes(
    State(served): State<Served>,
    request: Request,
    next: Next,
) -> Response {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if safe {
        return next.run(request).await;
    }
    let headers = request.headers();
    let Some(origin) = headers.get(header::ORIGIN) else {
        return next.run(request).await;
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let home = origin
        .to_str()
        .is_ok_and(|o| is_home(o.trim_end_matches('/'), host, served.listening));
    if home {
        return next.run(request).await;
    }
    let body = json!({
        "error": "a request from another site may not change anything here",
        "field": "origin",
    });
    (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
}

/// Whether `origin` is this host: the origin the request's `Host` names, or a loopback origin
/// with the port of a host listening on a loopback address.
fn is_home(origin: &str, host: Option<&str>, listening: Option<SocketAddr>) -> bool {
    if let Some(h) = host
        && (origin == format!("http://{h}") || origin == format!("https://{h}"))
    {
        return true;
    }
    let Some(listening) = listening.filter(|a| a.ip().is_loopback()) else {
        return false;
    };
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let default = if origin.starts_with("https://") {
        443
    } else {
        80
    };
    split_authority(authority).is_some_and(|(host, port)| {
        is_loopback_host(host) && port.unwrap_or(default) == listening.port()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_with_and_without_a_port() {
        for ok in [
            "localhost",
            "LOCALHOST:8080",
            "app.localhost:1",
            "127.0.0.1",
            "127.0.0.1:65535",
            "127.1.2.3:80",
            "[::1]",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:80",
        ] {
            assert!(names_loopback(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "",
            "attacker.example",
            "attacker.example:8080",
            "localhost.attacker.example",
            "evillocalhost",
            ".localhost",
            "a..localhost",
            "10.0.0.1",
            "0.0.0.0:8080",
            "[::]:8080",
            "[::1",
            "::1",
            "127.0.0.1:",
            "127.0.0.1:99999",
            "127.0.0.1:+80",
            "127.0.0.1:80:80",
            "user@127.0.0.1",
            "127.1",
            "2130706433",
        ] {
            assert!(!names_loopback(bad.as_bytes()), "{bad}");
        }
        assert!(!names_loopback(b"\xfflocalhost"));
    }

    #[test]
    fn a_quoted_host_is_short_and_plain() {
        assert_eq!(shown(b"attacker.example:80"), "\"attacker.example:80\"");
        assert_eq!(shown(b"a<b>\"\r\n\xff"), "\"a?b?????\"");
        let long = shown(&[b'a'; 500]);
        assert!(long.len() < 80 && long.ends_with("…\""), "{long}");
    }

    #[test]
    fn home_is_the_named_host_or_a_loopback_origin_on_the_port() {
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let named = Some("127.0.0.1:8080");
        assert!(is_home("http://127.0.0.1:8080", named, None));
        assert!(is_home("https://chat.example", Some("chat.example"), None));
        assert!(is_home("http://localhost:8080", named, Some(local)));
        assert!(is_home("http://[::1]:8080", None, Some(local)));
        assert!(!is_home("http://localhost:8080", named, Some(public)));
        assert!(!is_home("http://localhost:8081", named, Some(local)));
        assert!(!is_home("http://localhost", named, Some(local)));
        assert!(!is_home("http://attacker.example:8080", named, Some(local)));
        assert!(!is_home("null", named, Some(local)));
        assert!(!is_home("ftp://127.0.0.1:8080", named, Some(local)));
    }
}
