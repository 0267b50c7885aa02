//! `thinkers serve` lets in only who it should: on a non-loopback address without a token it
//! refuses to start, before opening anything; with `THINKERS_SERVE_TOKEN` every route, event
//! streams included, answers 401 without the token, and the token never shows in what the
//! process prints or logs (debug logging on).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOKEN: &str = "cli-token-7c1e55";

fn thinkers() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_thinkers"));
    c.env_remove("THINKERS_DB")
        .env_remove("THINKERS_SIM_URL")
        .env_remove("THINKERS_SERVE_TOKEN");
    c
}

#[test]
fn a_public_address_without_a_token_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let out = thinkers()
        .args(["serve", "--host", "0.0.0.0", "--port", "0", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it started: {stderr}");
    assert!(
        stderr.contains("refusing to listen on 0.0.0.0") && stderr.contains("--token"),
        "{stderr}"
    );
    assert!(!db.exists(), "nothing was opened before the refusal");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
}

/// One HTTP/1.1 request with optional headers; the status line and the head.
fn request(addr: &str, path: &str, headers: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // Read the head only: an event stream's body does not end.
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

#[test]
fn with_a_token_every_route_needs_it_and_it_is_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let out_path = dir.path().join("out.txt");
    let err_path = dir.path().join("err.txt");
    let mut child = thinkers()
        .env("THINKERS_SERVE_TOKEN", TOKEN)
        .env("RUST_LOG", "debug")
        .args(["serve", "--port", "0", "--grade", "small", "--db"])
        .arg(&db)
        .stdout(Stdio::from(std::fs::File::create(&out_path).unwrap()))
        .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()))
        .spawn()
        .unwrap();
    let started = Instant::now();
    let addr = loop {
        let out = std::fs::read_to_string(&out_path).unwrap();
        if let Some(rest) = out.split("chat host listening on http://").nth(1) {
            break rest.lines().next().unwrap().trim().to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no address: {out}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let chat = "00000000-0000-0000-0000-000000000000";
    for path in [
        "/",
        "/runs",
        "/api/chats",
        &format!("/api/chats/{chat}/events"),
        "/api/runs/workflows",
        "/api/runs/cost",
    ] {
        let head = request(&addr, path, "");
        assert!(head.starts_with("HTTP/1.1 401"), "{path}: {head}");
        let wrong = request(&addr, path, "Authorization: Bearer nope\r\n");
        assert!(wrong.starts_with("HTTP/1.1 401"), "{path}: {wrong}");
    }
    let ok = request(
        &addr,
        "/api/chats",
        &format!("Authorization: Bearer {TOKEN}\r\n"),
    );
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    let login = request(&addr, &format!("/?token={TOKEN}"), "");
    assert!(login.starts_with("HTTP/1.1 303"), "{login}");
    child.kill().unwrap();
    child.wait().unwrap();
    let printed =
        std::fs::read_to_string(&out_path).unwrap() + &std::fs::read_to_string(&err_path).unwrap();
    assert!(printed.contains("runs explorer at"), "{printed}");
    assert!(
        !printed.contains(TOKEN),
        "the token was printed:\n{printed}"
    );
}
