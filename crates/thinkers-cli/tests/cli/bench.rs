//! `thinkers bench` end to end against the in-process simulated provider: the bundled task and
//! a task file, the printed table, and the JSON and CSV files.

use std::path::Path;
use std::process::Command;

fn bench(args: &[&str], out: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_thinkers"))
        .arg("bench")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "bench failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The JSON report and the CSV rows agree with each other and with the grade raced.
fn check_files(out: &Path, entries: &[&str], times: usize) -> serde_json::Value {
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bench-report.json")).unwrap())
            .unwrap();
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1 + entries.len() * times);
    assert_eq!(rows[0]["role"], "reference");
    for entry in entries {
        let runs: Vec<_> = rows.iter().filter(|r| r["model"] == *entry).collect();
        assert!(runs.len() >= times, "{entry}: {rows:?}");
    }
    for r in rows.iter().skip(1) {
        assert_eq!(r["role"], "candidate");
        assert!(r["calls"].as_u64().unwrap() >= 1, "{r}");
        assert!(r["judge_score"].as_u64().unwrap() <= 10, "{r}");
    }
    assert_eq!(report["means"].as_array().unwrap().len(), entries.len());

    let csv = std::fs::read_to_string(out.join("bench-runs.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + rows.len(), "{csv}");
    assert!(lines[0].starts_with("role,model,run,job,status"), "{csv}");
    assert!(lines[1].starts_with("reference,"), "{csv}");
    for (line, row) in lines.iter().skip(1).zip(rows) {
        assert!(line.contains(row["job"].as_str().unwrap()), "{line}");
    }
    report
}

#[test]
fn bench_races_the_bundled_task_and_writes_json_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let stdout = bench(&["--grade", "small", "--times", "2", "--calm"], dir.path());
    for needle in [
        "Benchmark over grade small",
        "Means per model",
        "bench-runs.csv",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?}:\n{stdout}");
    }
    check_files(
        dir.path(),
        &["sim-small-a", "sim-small-b", "sim-small-text"],
        2,
    );
}

#[test]
fn bench_runs_a_task_file() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("task.json");
    std::fs::write(
        &task,
        r#"{"objective": "Answer yes or no.", "query": "Is 17 prime?", "answer": "yes_no"}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let stdout = bench(
        &[
            "--grade",
            "medium",
            "--task",
            task.to_str().unwrap(),
            "--calm",
        ],
        &out,
    );
    assert!(stdout.contains("Reference answer: {"), "{stdout}");
    let report = check_files(&out, &["sim-medium-a", "sim-medium-b"], 1);
    assert_eq!(report["grade"], "medium");
}

#[test]
fn bench_refuses_a_bad_task_file_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path().join("task.toml");
    std::fs::write(&task, "query = \"q\"\nanswer = \"colour\"\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_thinkers"))
        .args(["bench", "--grade", "small", "--task"])
        .arg(&task)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("task.toml"), "{stderr}");
}
