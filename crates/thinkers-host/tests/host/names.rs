//! Which names and origins a host answers, over its real listener with raw HTTP/1.x requests
//! (so the `Host` and `Origin` are exactly what a browser under attack would send): without a
//! token only a request that names a loopback host is served, so a page that rebinds its own
//! domain to 127.0.0.1 reads and starts nothing (421); a write whose `Origin` is another site is
//! refused (403); with a token the name is not checked, the token is.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use thinkers_host::{ChatHost, HostConfig, HostToken};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::{events_until_answer, factory, host, runtime, sim};

/// Send `request` as written and read the whole answer: its status and body.
async fn raw(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut out))
        .await
        .expect("no answer within 30 s")
        .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

/// An HTTP/1.1 request naming `host` (none when `None`), with `extra` header lines.
fn request(method: &str, path: &str, host: Option<&str>, extra: &str, body: &str) -> String {
    let host = host.map(|h| format!("Host: {h}\r\n")).unwrap_or_default();
    format!(
        "{method} {path} HTTP/1.1\r\n{host}{extra}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

const QUESTION: &str = r#"{"text": "What is the capital of France?"}"#;

#[tokio::test]
async fn a_page_that_rebinds_its_name_to_the_loopback_reads_and_starts_nothing() {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let h = host(&sim, &dir.path().join("chat.db"), false).await;
    let addr = h.running.addr();
    let port = addr.port();
    let chat = h.host.create_chat("private").await.unwrap().id;
    let messages = format!("/api/chats/{chat}/messages");

    // The attacker's page asks under its own name, rebound to 127.0.0.1.
    for name in [
        "attacker.example".to_owned(),
        format!("attacker.example:{port}"),
        format!("localhost.attacker.example:{port}"),
        format!("127.0.0.1.attacker.example:{port}"),
    ] {
        for (method, path, body) in [
            ("GET", "/api/chats", ""),
            ("GET", "/", ""),
            ("GET", "/api/runs/workflows", ""),
            ("POST", "/api/chats", "{}"),
            ("POST", messages.as_str(), QUESTION),
        ] {
            let (status, text) = raw(addr, &request(method, path, Some(&name), "", body)).await;
            assert_eq!(status, 421, "{method} {path} as {name}: {text}");
            assert!(text.contains(&format!("\"{name}\"")), "{text}");
            assert!(!text.contains("private"), "{text}");
        }
    }
    // A name with bytes that are not a host's is not echoed as sent.
    let (status, text) = raw(
        addr,
        &request("GET", "/api/chats", Some("<script>x</script>"), "", ""),
    )
    .await;
    assert_eq!(status, 421, "{text}");
    assert!(!text.contains('<') && !text.contains('>'), "{text}");
    // A request naming no host at all is refused too: HTTP/1.1 without Host, and HTTP/1.0.
    let (status, text) = raw(addr, &request("GET", "/api/chats", None, "", "")).await;
    assert_eq!(status, 421, "{text}");
    assert!(text.contains("no host"), "{text}");
    let (status, text) = raw(addr, "GET /api/chats HTTP/1.0\r\n\r\n").await;
    assert_eq!(status, 421, "{text}");
    assert_eq!(
        h.host.list_chats().await.unwrap().len(),
        1,
        "nothing created"
    );
    assert!(sim.requests().is_empty(), "no turn reached the provider");

    // The same requests by a loopback name work.
    for name in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let (status, text) = raw(addr, &request("GET", "/api/chats", Some(&name), "", "")).await;
        assert_eq!(status, 200, "{name}: {text}");
        let listed: Value = serde_json::from_str(&text).unwrap();
        let ids: Vec<&str> = listed["chats"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        assert!(ids.contains(&chat.as_str()), "{name}: {text}");
        let (status, text) = raw(addr, &request("POST", "/api/chats", Some(&name), "", "{}")).await;
        assert_eq!(status, 201, "{name}: {text}");
    }
    for name in ["127.0.0.1", "LocalHost", "[::1]:1", "app.localhost"] {
        let (status, text) = raw(addr, &request("GET", "/api/chats", Some(name), "", "")).await;
        assert_eq!(status, 200, "{name}: {text}");
    }
    let name = format!("127.0.0.1:{port}");
    let (status, text) = raw(addr, &request("POST", &messages, Some(&name), "", QUESTION)).await;
    assert_eq!(status, 202, "{text}");
    let events = events_until_answer(&h.url, &chat, 0).await;
    assert_eq!(events.last().unwrap().name, "answer", "{events:?}");
    h.running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_write_from_another_origin_is_refused_by_the_real_listener() {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let h = host(&sim, &dir.path().join("chat.db"), false).await;
    let addr = h.running.addr();
    let port = addr.port();
    let chat = h.host.create_chat("private").await.unwrap().id;
    let messages = format!("/api/chats/{chat}/messages");
    let name = format!("127.0.0.1:{port}");
    for origin in [
        "http://attacker.example".to_owned(),
        format!("http://attacker.example:{port}"),
        format!("http://localhost:{}", port.wrapping_add(1)),
        format!("http://10.0.0.1:{port}"),
        "null".to_owned(),
    ] {
        let header = format!("Origin: {origin}\r\n");
        for (path, body) in [("/api/chats", "{}"), (messages.as_str(), QUESTION)] {
            let (status, text) =
                raw(addr, &request("POST", path, Some(&name), &header, body)).await;
            assert_eq!(status, 403, "{origin} {path}: {text}");
            let refusal: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(refusal["field"], "origin", "{text}");
        }
    }
    assert_eq!(
        h.host.list_chats().await.unwrap().len(),
        1,
        "nothing created"
    );
    assert!(sim.requests().is_empty(), "no turn reached the provider");
    // The host's own page, by the name the request uses or by another loopback name with the
    // port the host listens on, may write.
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}/"),
    ] {
        let header = format!("Origin: {origin}\r\n");
        let (status, text) = raw(
            addr,
            &request("POST", "/api/chats", Some(&name), &header, "{}"),
        )
        .await;
        assert_eq!(status, 201, "{origin}: {text}");
    }
    h.running.shutdown().await.unwrap();
}

#[tokio::test]
async fn with_a_token_any_name_is_answered_but_only_with_the_token() {
    let sim = sim().await;
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(&sim, &dir.path().join("chat.db")).await;
    let token = HostToken::generate();
    let config = HostConfig {
        token: Some(token.clone()),
        ..HostConfig::default()
    };
    let host = ChatHost::new(&rt, factory("sim-small-a", false), config).unwrap();
    let running = host.start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = running.addr();
    // A rebound page knows neither the token nor has the host's cookie: 401.
    let (status, _) = raw(
        addr,
        &request("GET", "/api/chats", Some("attacker.example"), "", ""),
    )
    .await;
    assert_eq!(status, 401);
    // A proxy or a LAN name the host cannot know in advance, with the token: served.
    let bearer = format!("Authorization: Bearer {}\r\n", token.expose_secret());
    let (status, text) = raw(
        addr,
        &request("GET", "/api/chats", Some("chat.internal:443"), &bearer, ""),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    // Writes from another site are still refused, token or not.
    let foreign = format!("{bearer}Origin: http://attacker.example\r\n");
    let (status, text) = raw(
        addr,
        &request("POST", "/api/chats", Some("chat.internal"), &foreign, "{}"),
    )
    .await;
    assert_eq!(status, 403, "{text}");
    let own = format!("{bearer}Origin: https://chat.internal\r\n");
    let (status, text) = raw(
        addr,
        &request("POST", "/api/chats", Some("chat.internal"), &own, "{}"),
    )
    .await;
    assert_eq!(status, 201, "{text}");
    running.shutdown().await.unwrap();
}
