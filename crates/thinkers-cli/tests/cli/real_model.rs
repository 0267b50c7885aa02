//! The command line against a real OpenAI-compatible model server: llama-cpp-python's server
//! with SmolLM2-135M-Instruct (`scripts/real-model-server.sh start PORT` prints its base URL).
//! `thinkers catalog --check` calls both entries of a catalog written for it, and the demo with
//! `--catalog` pointing at it runs every stage to the end, no stage failing on the protocol.
//!
//! The base URL comes from `THINKERS_REAL_MODEL_URL`. When it is unset each test says it skipped
//! and passes, unless `THINKERS_REQUIRE_REAL_MODEL=1`, when it fails instead. The server answers
//! one request at a time, so the tests take turns through one lock.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

#[path = "../../../thinkers/tests/real_model/gate.rs"]
mod gate;

static SERVER: Mutex<()> = Mutex::new(());

/// The stages of the demo, in the order it runs them.
const STAGES: [&str; 6] = [
    "dispatcher",
    "thinkers",
    "one-call",
    "providers",
    "chat",
    "benchmark",
];

/// What a stage's error says when the failure is the protocol's rather than the model's: the
/// server refused or failed the request, or the client could not read what came back.
const PROTOCOL_FAILURES: [&str; 6] = [
    "http ",
    "external service",
    "internal_server_error",
    "decode",
    "connection",
    "timed out",
];

/// The catalog file for the server, and the lock on it; `None` when skipped (it said so).
fn server(test: &str, dir: &Path) -> Option<(PathBuf, MutexGuard<'static, ()>)> {
    let url = gate::server_url(test)?;
    let turn = SERVER.lock().unwrap_or_else(PoisonError::into_inner);
    gate::wait_until_idle(&url);
    let path = dir.join("real-model.toml");
    std::fs::write(&path, gate::catalog_toml(&url)).unwrap();
    Some((path, turn))
}

fn thinkers(args: &[&str], catalog: &Path, dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_thinkers"))
        .args(args)
        .arg("--catalog")
        .arg(catalog)
        .current_dir(dir)
        .env_remove("THINKERS_CATALOG")
        .env_remove("THINKERS_DB")
        .output()
        .unwrap()
}

#[test]
fn catalog_check_calls_both_entries() {
    let dir = tempfile::tempdir().unwrap();
    let Some((catalog, _turn)) = server("catalog --check", dir.path()) else {
        return;
    };
    // A 135M model on two shared cores answered in 13 s while a build ran beside it, past the
    // check's default 20 s for its first call: the test gives each entry two minutes.
    let out = thinkers(
        &["catalog", "--check", "--timeout", "2m"],
        &catalog,
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for id in ["smol", "smol-text"] {
        let row = stdout
            .lines()
            .rev()
            .map(|l| l.split(['|', '│']).map(str::trim).collect::<Vec<_>>())
            .find(|cells| cells.len() > 2 && cells[1] == id)
            .unwrap_or_else(|| panic!("no check row for {id} in:\n{stdout}"));
        assert_eq!(row[2], "yes", "{id}: {row:?}");
    }
}

#[test]
fn the_demo_runs_every_stage_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let Some((catalog, _turn)) = server("demo", dir.path()) else {
        return;
    };
    let started = Instant::now();
    let out = thinkers(&["demo", "--db", "demo.db"], &catalog, dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "demo against the real model: {:.0} s\n{stdout}\n{stderr}",
        started.elapsed().as_secs_f64()
    );
    assert!(
        stdout.contains("against the providers of"),
        "the demo started a simulated provider: {stdout}"
    );
    let summary = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Stages passed: "))
        .unwrap_or_else(|| panic!("the demo did not reach its end:\n{stdout}\n{stderr}"));
    for stage in STAGES {
        assert_eq!(
            summary.matches(&format!("{stage} (")).count(),
            1,
            "{stage} is not listed once: {summary}"
        );
    }
    // The dispatcher stage calls no model: it always passes. A model stage may end by what the
    // tiny model does (a thinker at its iteration limit), never by a failure of the protocol:
    // an HTTP error from the server or an answer the client could not read.
    let (passed, failed) = summary.split_once("; failed: ").unwrap();
    assert!(passed.contains("dispatcher ("), "{summary}");
    for line in stdout.lines().filter(|l| l.starts_with("Stage `")) {
        for protocol in PROTOCOL_FAILURES {
            assert!(
                !line.to_lowercase().contains(protocol),
                "a stage failed on the protocol ({protocol}): {line}"
            );
        }
    }
    assert_eq!(
        out.status.success(),
        failed == "none",
        "the exit code disagrees with the summary: {summary}\n{stderr}"
    );
}
