//! `thinkers serve` as a child process, and plain HTTP/1.1 requests to it, for the host tests.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

/// A running `thinkers serve`; killed when dropped.
pub(crate) struct Serve {
    pub(crate) child: Child,
    pub(crate) addr: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `thinkers serve --port 0 --grade small --db DB EXTRA…` and read the address it prints.
pub(crate) fn serve(db: &str, extra: &[&str]) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_thinkers"))
        .env_remove("THINKERS_DB")
        .env_remove("THINKERS_SIM_URL")
        .env("RUST_LOG", "warn")
        .args(["serve", "--port", "0", "--grade", "small", "--db", db])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut first).unwrap();
    // Keep draining what the host prints: with the pipe closed, its next line would fail and
    // end the process mid-turn.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let addr = first
        .trim()
        .strip_prefix("chat host listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line: {first}"))
        .to_owned();
    Serve { child, addr }
}

/// One HTTP/1.1 request, naming the host by its address (a host without a token answers only
/// loopback names); the response's status line and body.
pub(crate) fn http(addr: &str, method: &str, path: &str, body: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    stream.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}
