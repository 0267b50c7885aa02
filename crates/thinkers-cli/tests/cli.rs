//! The `thinkers` binary end to end: the demo runs, stores its workflow, and `trace` prints it.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;

fn thinkers() -> Command {
    Command::new(env!("CARGO_BIN_EXE_thinkers"))
}

#[test]
fn demo_runs_and_trace_prints_the_stored_trajectory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let out = thinkers().args(["demo", "--db"]).arg(&db).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "fan-out (one step, in parallel)",
        "throttled call succeeded on attempt 2",
        "corrected job",
        "failed child, recorded and survived",
        "demo_workflow #- succeeded",
        "rate_limited_call #2 succeeded",
        "flaky_service #4 failed",
        "Thinker stage",
        "Q: What is a seat?",
        "resumed conversation",
        "explain_workflow #- succeeded",
        "explainer #1 succeeded",
        "glossary_lookup",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    let workflow = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Trajectory of workflow "))
        .map(|s| s.trim_end_matches(':').to_owned())
        .unwrap();

    let list = thinkers()
        .args(["trace", "--list", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(list.status.success());
    assert!(String::from_utf8_lossy(&list.stdout).contains(&workflow));

    let trace = thinkers()
        .args(["trace", &workflow, "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&trace.stdout);
    assert!(trace.status.success(), "{text}");
    let order: Vec<&str> = text
        .lines()
        .map(|l| l.trim_start_matches(['├', '└', '─', '│', ' ']))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        order,
        [
            "demo_workflow",
            "fetch_source",
            "fetch_source",
            "fetch_source",
            "rate_limited_call",
            "self_correcting_parse",
            "flaky_service"
        ]
    );
}

#[test]
fn trace_of_an_unknown_workflow_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    assert!(
        thinkers()
            .args(["demo", "--db"])
            .arg(&db)
            .output()
            .unwrap()
            .status
            .success()
    );
    let unknown = "01a22beb-a2dc-752c-8594-2336c544f5db";
    let out = thinkers()
        .args(["trace", unknown, "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(unknown) && err.contains("workflow"), "{err}");
    let out = thinkers()
        .args(["trace", "not-an-id", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not-an-id"));
}
