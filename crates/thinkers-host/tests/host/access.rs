//! Who the host lets in and how much it reads: with a token every route (pages, static files,
//! the API and both event streams) refuses a request without it (401); a browser is let in
//! once by `/?token=` and then carries an `HttpOnly` cookie; a non-loopback address without a
//! token refuses to start; a token under 16 characters is refused, a generated one works;
//! oversized bodies and messages get 413 with JSON naming the field;
//! no CORS header is sent, and a write from another site is refused.

use std::net::SocketAddr;

use serde_json::{Value, json};
use thinkers_host::{ChatHost, HostConfig, HostToken};

use crate::support::{factory, runtime, sim};

const TOKEN: &str = "s3cret-host-token";

/// Every route of the host, with a path that reaches its handler.
fn routes(chat: &str) -> Vec<(reqwest::Method, String)> {
    use reqwest::Method;
    let wf = "01890000-0000-7000-8000-000000000000";
    vec![
        (Method::GET, "/".into()),
        (Method::GET, "/runs".into()),
        (Method::GET, "/static/marked.min.js".into()),
        (Method::GET, "/static/purify.min.js".into()),
        (Method::GET, "/api/chats".into()),
        (Method::POST, "/api/chats".into()),
        (Method::GET, format!("/api/chats/{chat}")),
        (Method::POST, format!("/api/chats/{chat}/messages")),
        (Method::GET, format!("/api/chats/{chat}/events")),
        (Method::POST, format!("/api/chats/{chat}/approvals/x")),
        (Method::GET, "/api/runs/workflows".into()),
        (Method::GET, format!("/api/runs/workflows/{wf}")),
        (Method::GET, format!("/api/runs/workflows/{wf}/events")),
        (Method::GET, "/api/runs/benchmarks".into()),
        (Method::GET, "/api/runs/cost".into()),
        (Method::GET, "/api/runs/approvals".into()),
        (Method::POST, "/api/runs/approvals/x".into()),
        (Method::GET, "/no/such/route".into()),
    ]
}

async fn guarded() -> (
    tempfile::TempDir,
    thinkers_sim::Sim,
    thinkers_host::RunningHost,
    ChatHost,
) {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&sim, &dir.path().join("chat.db")).await;
    let config = HostConfig {
        token: Some(HostToken::new(TOKEN).unwrap()),
        ..HostConfig::default()
    };
    let host = ChatHost::new(&rt, factory("sim-small-a", false), config).unwrap();
    let running = host.start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    (dir, sim, running, host)
}

#[tokio::test]
async fn every_route_refuses_a_request_without_the_token() {
    let (_dir, _sim, running, host) = guarded().await;
    let url = running.url();
    let chat = host.create_chat("guarded").await.unwrap().id;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for (method, path) in routes(&chat) {
        let body = r#"{"text": "hello", "decision": "approve"}"#;
        for auth in [None, Some("Bearer wrong-token"), Some("Basic czNjcmV0")] {
            let mut req = http
                .request(method.clone(), format!("{url}{path}"))
                .body(body);
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            // A wrong cookie does not let anyone in either.
            req = req.header("cookie", "thinkers_token=wrong");
            let resp = req.send().await.unwrap();
            assert_eq!(resp.status(), 401, "{method} {path} with {auth:?}");
            assert_eq!(resp.headers()["www-authenticate"], "Bearer");
            let v: Value = resp.json().await.unwrap();
            assert_eq!(v["field"], "token", "{method} {path}");
            assert!(!v.to_string().contains(TOKEN));
        }
        // With the token the request reaches its handler (whatever that answers).
        let resp = http
            .request(method.clone(), format!("{url}{path}"))
            .bearer_auth(TOKEN)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_ne!(resp.status(), 401, "{method} {path} with the token");
    }
    // The chat's event stream answers with the token, as a stream.
    let resp = http
        .get(format!("{url}/api/chats/{chat}/events"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    drop(resp);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_browser_is_let_in_once_by_the_query_and_then_by_an_http_only_cookie() {
    let (_dir, _sim, running, _host) = guarded().await;
    let url = running.url();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    // A wrong token in the query is refused; the right one sets the cookie and leaves the URL.
    let wrong = http.get(format!("{url}/?token=nope")).send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    let login = http
        .get(format!("{url}/runs?token={TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    assert_eq!(login.headers()["location"], "/runs");
    let cookie = login.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.starts_with(&format!("thinkers_token={TOKEN};")),
        "{cookie}"
    );
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    // The API does not take the token from a query: only the header or the cookie.
    let query = http
        .get(format!("{url}/api/chats?token={TOKEN}"))
        .send()
        .await
        .unwrap();
    assert_eq!(query.status(), 401);
    let pair = cookie.split(';').next().unwrap();
    let page = http
        .get(format!("{url}/runs"))
        .header("cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let events = http
        .get(format!("{url}/api/runs/workflows"))
        .header("cookie", format!("other=1; {pair}"))
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    // No CORS: a cross-origin request gets no permission header, a preflight neither.
    let cross = http
        .get(format!("{url}/api/chats"))
        .header("cookie", pair)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert!(cross.headers().get("access-control-allow-origin").is_none());
    let preflight = http
        .request(reqwest::Method::OPTIONS, format!("{url}/api/chats"))
        .header("origin", "http://evil.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert!(
        preflight
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_public_address_without_a_token_refuses_to_start() {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&sim, &dir.path().join("chat.db")).await;
    let open = ChatHost::new(&rt, factory("sim-small-a", false), HostConfig::default()).unwrap();
    let any: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let err = open.start(any).await.unwrap_err().to_string();
    assert!(err.contains("addr") && err.contains("token"), "{err}");
    // With a token it starts (and still refuses requests without it).
    let config = HostConfig {
        token: Some(HostToken::new(TOKEN).unwrap()),
        ..HostConfig::default()
    };
    let guarded = ChatHost::new(&rt, factory("sim-small-a", false), config).unwrap();
    let running = guarded.start(any).await.unwrap();
    let port = running.addr().port();
    let resp = reqwest::get(format!("http://127.0.0.1:{port}/api/chats"))
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    running.shutdown().await.unwrap();
    // A blank token, or one a cookie cannot carry, is refused without echoing it.
    for bad in ["", "two words and then some", "semi;colon;and;then;some"] {
        let err = HostToken::new(bad).unwrap_err().to_string();
        assert!(err.contains("token"), "{err}");
        assert!(bad.is_empty() || !err.contains(bad), "{err}");
    }
    let shown = format!("{:?}", HostToken::new(TOKEN).unwrap());
    assert!(!shown.contains(TOKEN), "{shown}");
}

#[tokio::test]
async fn a_short_token_is_refused_naming_the_minimum_and_a_generated_one_lets_a_request_in() {
    assert_eq!(HostToken::MIN_CHARS, 16);
    for short in ["abc", "xyzzy-15-chars!", "ééééééééééééééé"] {
        assert!(short.chars().count() < 16);
        let err = HostToken::new(short).unwrap_err().to_string();
        assert!(err.contains("token") && err.contains("16"), "{err}");
        assert!(!err.contains(short), "the token was echoed: {err}");
    }
    assert!(HostToken::new("exactly-16-chars").is_ok());
    // Generated: long, unguessable (two differ), accepted by the checks a given one passes.
    let made = HostToken::generate();
    let secret = made.expose_secret().to_owned();
    assert!(secret.len() >= 32, "{}", secret.len());
    assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()), "{secret}");
    assert_ne!(HostToken::generate(), made);
    assert_eq!(HostToken::new(secret.clone()).unwrap(), made);
    assert!(!format!("{made:?}").contains(&secret));

    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&sim, &dir.path().join("chat.db")).await;
    let config = HostConfig {
        token: Some(made),
        ..HostConfig::default()
    };
    let host = ChatHost::new(&rt, factory("sim-small-a", false), config).unwrap();
    let running = host.start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let url = running.url();
    let http = reqwest::Client::new();
    let refused = http.get(format!("{url}/api/chats")).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let served = http
        .get(format!("{url}/api/chats"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200);
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn oversized_bodies_and_messages_get_413_with_a_clear_error() {
    let (_dir, _sim, running, host) = guarded().await;
    let url = running.url();
    let chat = host.create_chat("big").await.unwrap().id;
    let http = reqwest::Client::new();
    let max = HostConfig::default().max_body_bytes;

    // A body over the limit, declared by its length.
    let huge = json!({ "text": "x".repeat(max + 10) }).to_string();
    let resp = http
        .post(format!("{url}/api/chats/{chat}/messages"))
        .bearer_auth(TOKEN)
        .body(huge.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["field"], "body");
    assert!(
        v["error"].as_str().unwrap().contains(&max.to_string()),
        "{v}"
    );

    // The same body streamed without a length is stopped by the limit, with the same answer.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = huge
        .as_bytes()
        .chunks(8192)
        .map(|c| Ok(c.to_vec()))
        .collect();
    let resp = http
        .post(format!("{url}/api/chats/{chat}/messages"))
        .bearer_auth(TOKEN)
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["field"], "body", "{v}");

    // A message over its own limit inside an acceptable body.
    let long = HostConfig::default().max_message_bytes + 1;
    let resp = http
        .post(format!("{url}/api/chats/{chat}/messages"))
        .bearer_auth(TOKEN)
        .json(&json!({ "text": "y".repeat(long) }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["field"], "text");
    assert!(v["error"].as_str().unwrap().contains("at most"), "{v}");
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_write_from_another_site_is_refused_even_without_a_token() {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&sim, &dir.path().join("chat.db")).await;
    let host = ChatHost::new(&rt, factory("sim-small-a", false), HostConfig::default()).unwrap();
    let running = host.start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let url = running.url();
    let http = reqwest::Client::new();
    // A form on another site posting to the local host.
    let foreign = http
        .post(format!("{url}/api/chats"))
        .header("origin", "http://evil.example")
        .header("content-type", "text/plain")
        .body(r#"{"title": "planted"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    assert_eq!(foreign.json::<Value>().await.unwrap()["field"], "origin");
    assert!(
        host.list_chats().await.unwrap().is_empty(),
        "nothing was created"
    );
    // The host's own page, and clients without an Origin, may.
    let own = http
        .post(format!("{url}/api/chats"))
        .header("origin", url.clone())
        .json(&json!({"title": "mine"}))
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 201);
    let plain = http
        .post(format!("{url}/api/chats"))
        .json(&json!({"title": "script"}))
        .send()
        .await
        .unwrap();
    assert_eq!(plain.status(), 201);
    // Reading is not a write: a cross-site GET is answered (without CORS the browser keeps
    // the answer from the other site's script).
    let read = http
        .get(format!("{url}/api/chats"))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    assert!(read.headers().get("access-control-allow-origin").is_none());
    running.shutdown().await.unwrap();
}
