//! The `thinkers` binary end to end: the demo runs, stores its workflow, and `trace` prints it;
//! a keyed `thinkers run` pauses for a person and the same command resumes it.

use crate::support::{errands, thinkers};

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
        "researcher #1 succeeded",
        "request_tools #1 succeeded",
        "request_skill #2 succeeded",
        "sub_thinker #3 succeeded",
        "sub_thinker.turn #1 succeeded",
        "One-call thinkers",
        "toolless classification: urgency",
        "decision: route to",
        "person: What is a seat",
        "streamed pieces",
        "is durable",
        "Benchmark over grade small",
        "Means per model",
        "Model calls and spend of this demo",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    // Every stage passed, and the closing line says so.
    let summary = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Stages passed: "))
        .unwrap_or_else(|| panic!("no summary line in:\n{stdout}"));
    assert!(summary.ends_with("; failed: none"), "{summary}");
    for stage in ["dispatcher", "thinkers", "one-call", "chat", "benchmark"] {
        assert!(summary.contains(&format!("{stage} (")), "{summary}");
    }
    let workflow = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Trajectory of workflow "))
        .map(|s| s.trim_end_matches(':').to_owned())
        .unwrap();

    // Only the one failure the demo stages on purpose.
    // (trajectory lines and benchmark rows carry an ordinal `#n`.)
    let failed: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains('#') && (l.contains(" failed ") || l.contains("failed:")))
        .collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert!(failed[0].contains("flaky_service"));

    let list = thinkers()
        .args(["trace", "--list", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(list.status.success());
    let listed = String::from_utf8_lossy(&list.stdout);
    for stored in [
        workflow.as_str(),
        "explain_workflow",
        "triage",
        "route_ticket",
        "benchmark",
    ] {
        assert!(listed.contains(stored), "{stored} not stored:\n{listed}");
    }

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

/// `thinkers run --key` on the embedded default: a durable run over one SQLite file pauses on
/// each call that waits for a person, and the same command resumes it from the journal; each
/// errand runs once and no model call is paid twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_run_pauses_for_a_person_and_the_same_command_resumes_it() {
    let sim = errands::sim().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("run.db").to_string_lossy().into_owned();
    let ledger = dir.path().join("ledger.txt");
    let input = serde_json::json!({
        "errands": ["errand-one", "errand-two", "errand-three"],
        "ledger": ledger, "approval": true, "entry": "sim-small-a",
    })
    .to_string();
    let url = sim.base_url();
    let cli = |args: Vec<&str>| {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_thinkers"))
            .args(args)
            .env_remove("THINKERS_DB")
            .env_remove("THINKERS_SIM_URL")
            .output()
    };
    let run = || {
        cli(vec![
            "run",
            "errands",
            "--key",
            "trip",
            "--input",
            &input,
            "--db",
            &db,
            "--sim-url",
            &url,
        ])
    };
    for (n, errand) in ["errand-one", "errand-two", "errand-three"]
        .into_iter()
        .enumerate()
    {
        let out = run().await.unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "paused, not finished: {err}");
        assert!(
            err.contains("run `trip` paused") && err.contains("thinkers approve"),
            "{err}"
        );
        assert_eq!(
            errands::ledger_lines(&ledger).len(),
            n,
            "nothing ran unapproved"
        );
        let listed = cli(vec!["approvals", "--db", &db, "--json"]).await.unwrap();
        let pending: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
        assert_eq!(pending.len(), 1, "{pending:?}");
        assert_eq!(pending[0]["arguments"]["errand"], errand);
        let id = pending[0]["id"].as_str().unwrap().to_owned();
        let approved = cli(vec!["approve", &id, "--db", &db]).await.unwrap();
        assert!(approved.status.success(), "{approved:?}");
    }
    let out = run().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["summary"]
            .as_str()
            .is_some_and(|s| s.contains("all three errands are done")),
        "{report}"
    );
    assert_eq!(
        errands::ledger_lines(&ledger),
        ["errand-one", "errand-two", "errand-three"],
        "each errand once, in order"
    );
    assert_eq!(
        errands::paid_once(&sim),
        4,
        "three tool-call turns and the report, each paid once"
    );
}
