//! `thinkers serve` lets in only who it should: on a non-loopback address without a token it
//! refuses to start, before opening anything; without a token it answers only requests that
//! name a loopback host (a rebound domain gets 421); a token under 16 characters is refused
//! naming the minimum; `--token generate` prints one token once and it lets requests in; with
//! `THINKERS_SERVE_TOKEN` every route, event streams included, answers 401 without the token,
//! and the token never shows in what the process prints or logs (debug logging on).

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

/// One HTTP/1.1 request naming the host by its address, with optional headers; the status
/// line and the head.
fn request(addr: &str, path: &str, headers: &str) -> String {
    request_as(addr, addr, path, headers)
}

/// One HTTP/1.1 request naming the host `host`, with optional headers; the status line and the
/// head.
fn request_as(addr: &str, host: &str, path: &str, headers: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{headers}Connection: close\r\n\r\n"
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

/// A `thinkers serve` child, killed when dropped (a failed assertion leaves no host behind).
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A `thinkers serve` with debug logging, its output in files.
struct Logged {
    child: Running,
    addr: String,
    out: std::path::PathBuf,
    err: std::path::PathBuf,
}

impl Logged {
    /// Wait until `read` finds what it looks for in the output file `path` (60 s at most).
    fn wait_for(path: &std::path::Path, read: impl Fn(&str) -> Option<String>) -> String {
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(path).unwrap();
            if let Some(found) = read(&text) {
                return found;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "not found in {}: {text}",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stop the host; everything it printed, stdout and stderr.
    fn stop(self) -> (String, String) {
        drop(self.child);
        (
            std::fs::read_to_string(&self.out).unwrap(),
            std::fs::read_to_string(&self.err).unwrap(),
        )
    }
}

/// The first whole line after `marker` in `text`.
fn line_after(text: &str, marker: &str) -> Option<String> {
    let rest = text.split(marker).nth(1)?;
    rest.contains('\n')
        .then(|| rest.lines().next().unwrap_or_default().trim().to_owned())
}

/// `thinkers serve --port 0 --grade small --db DIR/chat.db EXTRA…` with debug logging, once it
/// listens.
fn serve_logged(dir: &std::path::Path, extra: &[&str]) -> Logged {
    let out = dir.join("out.txt");
    let err = dir.join("err.txt");
    let child = Running(
        thinkers()
            .env("RUST_LOG", "debug")
            .args(["serve", "--port", "0", "--grade", "small", "--db"])
            .arg(dir.join("chat.db"))
            .args(extra)
            .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
            .stderr(Stdio::from(std::fs::File::create(&err).unwrap()))
            .spawn()
            .unwrap(),
    );
    let addr = Logged::wait_for(&out, |t| line_after(t, "chat host listening on http://"));
    Logged {
        child,
        addr,
        out,
        err,
    }
}

#[test]
fn a_token_under_16_characters_is_refused_naming_the_minimum() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let err_path = dir.path().join("err.txt");
    let short = "short-tok-7f3";
    for token in [Some(short), None] {
        let mut cmd = thinkers();
        cmd.args(["serve", "--port", "0", "--db"])
            .arg(&db)
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&err_path).unwrap()));
        match token {
            Some(t) => cmd.args(["--token", t]),
            None => cmd.env("THINKERS_SERVE_TOKEN", short),
        };
        let mut child = Running(cmd.spawn().unwrap());
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.0.try_wait().unwrap() {
                break status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "it started with a {}-character token",
                short.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let stderr = std::fs::read_to_string(&err_path).unwrap();
        assert!(!status.success(), "{stderr}");
        assert!(
            stderr.contains("--token") && stderr.contains("at least 16 characters"),
            "{stderr}"
        );
        assert!(!stderr.contains(short), "the token was echoed: {stderr}");
        assert!(!db.exists(), "nothing was opened before the refusal");
    }
}

#[test]
fn token_generate_prints_one_token_once_and_it_lets_a_request_in() {
    let dir = tempfile::tempdir().unwrap();
    let host = serve_logged(dir.path(), &["--host", "0.0.0.0", "--token", "generate"]);
    let port = host.addr.rsplit(':').next().unwrap();
    let local = format!("127.0.0.1:{port}");
    let token = Logged::wait_for(&host.err, |t| {
        line_after(t, "generated token (shown only now): ")
    });
    assert!(token.len() >= 32, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    let refused = request(&local, "/api/chats", "");
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let served = request(
        &local,
        "/api/chats",
        &format!("Authorization: Bearer {token}\r\n"),
    );
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");
    let (out, err) = host.stop();
    assert!(!out.contains(&token), "the token went to stdout: {out}");
    assert_eq!(err.matches(&token).count(), 1, "{err}");
}

#[test]
fn without_a_token_only_loopback_names_are_answered() {
    let dir = tempfile::tempdir().unwrap();
    let host = serve_logged(dir.path(), &[]);
    let addr = host.addr.clone();
    let port = addr.rsplit(':').next().unwrap();
    for name in [
        "attacker.example".to_owned(),
        format!("attacker.example:{port}"),
    ] {
        for path in ["/", "/api/chats", "/runs"] {
            let head = request_as(&addr, &name, path, "");
            assert!(head.starts_with("HTTP/1.1 421"), "{name} {path}: {head}");
        }
    }
    for name in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let head = request_as(&addr, &name, "/api/chats", "");
        assert!(head.starts_with("HTTP/1.1 200"), "{name}: {head}");
    }
    host.stop();
}
