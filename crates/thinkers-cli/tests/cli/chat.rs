//! `thinkers chat` with piped stdin (answers streamed to stdout, the conversation resumable by
//! id) and `thinkers serve` (the page and the API answer over HTTP).

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::Stdio;

use crate::support::thinkers;

/// `thinkers chat --db DB EXTRA…` with `input` piped to it, run to its end.
fn run_chat(db: &std::path::Path, extra: &[&str], input: &str) -> std::process::Output {
    let mut child = thinkers()
        .args(["chat", "--db"])
        .arg(db)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn chat(db: &std::path::Path, extra: &[&str], input: &str) -> (String, String) {
    let out = run_chat(db, extra, input);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "chat failed:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn chat_answers_piped_messages_and_resumes_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    let (stdout, stderr) = chat(&db, &[], "What is a seat?\n\n");
    let answer = stdout
        .lines()
        .find(|l| l.starts_with("assistant: "))
        .unwrap_or_else(|| panic!("no answer in:\n{stdout}\n{stderr}"));
    assert!(answer.contains("What is a seat?"), "{answer}");
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("conversation "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no conversation id in:\n{stderr}"))
        .to_owned();

    let (stdout, stderr) = chat(&db, &["--resume", &id], "And a grade?\n");
    assert!(
        stderr.contains(&format!("resuming conversation {id}")),
        "{stderr}"
    );
    let answer = stdout
        .lines()
        .find(|l| l.starts_with("assistant: "))
        .unwrap_or_else(|| panic!("no answer in:\n{stdout}\n{stderr}"));
    assert!(answer.contains("And a grade?"), "{answer}");
    assert!(stderr.contains(&format!("conversation {id}")), "{stderr}");

    // An unknown id is refused, naming it.
    let out = thinkers()
        .args(["chat", "--db"])
        .arg(&db)
        .args(["--resume", "0190aaaa-0000-7000-8000-000000000000"])
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("0190aaaa-0000-7000-8000-000000000000"),
        "{stderr}"
    );
}

/// A turn that gives no answer (here: the provider's key variable is unset, so nothing can be
/// sent) is reported on stderr, and the command exits non-zero.
#[test]
fn chat_exits_non_zero_when_the_last_turn_failed() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("unreachable.toml");
    std::fs::write(
        &catalog,
        "[providers.nokey]\ndialect = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         api_key_env = \"THINKERS_TEST_UNSET_CHAT_KEY\"\n\n[[entries]]\nid = \"m\"\n\
         provider = \"nokey\"\nmodel = \"m\"\ngrade = \"medium\"\ncontext_window = 8192\n\
         output_ceiling = 1024\nprice_in = 1.0\nprice_out = 1.0\ncurrency = \"USD\"\n",
    )
    .unwrap();
    let catalog = catalog.to_string_lossy();
    // The variable must be unset in this process, which the child inherits.
    assert!(std::env::var_os("THINKERS_TEST_UNSET_CHAT_KEY").is_none());
    let out = run_chat(
        &dir.path().join("chat.db"),
        &["--catalog", &catalog],
        "What is a seat?\n",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "exited 0 after a failed turn:\n{stderr}"
    );
    assert!(
        stderr.contains("THINKERS_TEST_UNSET_CHAT_KEY") && stderr.contains("no answer"),
        "{stderr}"
    );
}

fn http(addr: &str, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn serve_answers_the_page_and_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("serve.db");
    let mut child = thinkers()
        .args(["serve", "--port", "0", "--db"])
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("chat host listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_owned();
    let addr = url.strip_prefix("http://").unwrap();

    let page = http(
        addr,
        &format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    );
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("<title>thinkers chat</title>"));
    let body = "{\"title\": \"from the cli test\"}";
    let created = http(
        addr,
        &format!(
            "POST /api/chats HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let list = http(
        addr,
        &format!("GET /api/chats HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    );
    assert!(list.contains("from the cli test"), "{list}");
    child.kill().unwrap();
    child.wait().unwrap();
}
