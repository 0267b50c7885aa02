//! The log flags: JSON logs, and model payloads only with `--log-payloads`.

use std::path::Path;

use super::{run, seeded_db, thinkers};

/// The JSON log events (`fields.message`, `fields.body`) of the model request and response
/// bodies in `stderr`, which may also hold the CLI's own plain lines.
fn body_events(stderr: &str) -> Vec<(String, String)> {
    stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"))
        })
        .filter_map(|event| {
            let message = event["fields"]["message"].as_str()?;
            message.starts_with("model re").then(|| {
                let body = event["fields"]["body"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{event}"));
                (message.to_owned(), body.to_owned())
            })
        })
        .collect()
}

/// `thinkers run explain` against the in-process simulated provider with debug JSON logs,
/// asking `question`, with or without `--log-payloads`; its stderr.
fn explain_with_debug_logs(db: &Path, question: &str, key: &str, payloads: bool) -> String {
    let input = serde_json::json!({ "question": question }).to_string();
    let mut cmd = thinkers();
    cmd.env("THINKERS_LOG", "debug")
        .env("THINKERS_SIM_KEY", key)
        .env_remove("THINKERS_SIM_URL")
        .args([
            "--log-format",
            "json",
            "run",
            "explain",
            "--input",
            &input,
            "--db",
        ])
        .arg(db);
    if payloads {
        cmd.arg("--log-payloads");
    }
    let (out, stdout, stderr) = run(&mut cmd);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    stderr
}

#[tokio::test]
async fn json_logs_on_request_and_model_payloads_only_with_the_flag() {
    let (_dir, db, _) = seeded_db().await;
    let (out, stdout, stderr) = run(thinkers()
        .env("THINKERS_LOG", "debug")
        .args(["--log-format", "json", "sizing", "--log-payloads", "--db"])
        .arg(&db));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("extract_claims"));
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "debug logging printed nothing");
    for line in &lines {
        let event: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(event["level"].is_string(), "{line}");
    }
    assert!(stderr.contains("sqlite store open"), "{stderr}");
    // The environment variable selects the format too; human lines are not JSON.
    let (out, _, stderr) = run(thinkers()
        .env("THINKERS_LOG", "debug")
        .env("THINKERS_LOG_FORMAT", "json")
        .args(["sizing", "--db"])
        .arg(&db));
    assert!(out.status.success());
    assert!(stderr.lines().all(|l| l.starts_with('{')), "{stderr}");
    let (_, _, stderr) = run(thinkers()
        .env("THINKERS_LOG", "debug")
        .args(["sizing", "--db"])
        .arg(&db));
    assert!(
        stderr.contains("sqlite store open") && !stderr.starts_with('{'),
        "{stderr}"
    );

    // Model payloads: with --log-payloads the debug lines carry the request bodies (the question
    // sent to the simulated provider) and the response bodies; without it every body is
    // withheld and no line carries the question. The key is in no line either way.
    let question = "What is a seat? (payload marker 7d41c)";
    let key = "sk-ops-log-secret-4f9c2e81";
    let shown = explain_with_debug_logs(&db, question, key, true);
    let bodies = body_events(&shown);
    let requests: Vec<&str> = bodies
        .iter()
        .filter(|(m, _)| m == "model request")
        .map(|(_, b)| b.as_str())
        .collect();
    assert!(
        !requests.is_empty(),
        "no model request was logged:\n{shown}"
    );
    let first: serde_json::Value = serde_json::from_str(requests[0]).unwrap_or_else(|e| {
        panic!(
            "the logged request is not its JSON body ({e}): {}",
            requests[0]
        )
    });
    assert!(first.to_string().contains(question), "{first}");
    assert!(
        bodies
            .iter()
            .any(|(m, b)| m.starts_with("model response") && !b.starts_with("<payload")),
        "no model response body was logged:\n{shown}"
    );
    assert!(!shown.contains(key), "the API key was logged:\n{shown}");

    let withheld = explain_with_debug_logs(&db, question, key, false);
    let bodies = body_events(&withheld);
    assert!(
        bodies.iter().any(|(m, _)| m == "model request"),
        "no model request was logged:\n{withheld}"
    );
    for (message, body) in &bodies {
        assert!(body.starts_with("<payload withheld: "), "{message}: {body}");
    }
    let carrying: Vec<&str> = withheld
        .lines()
        .filter(|l| l.contains("payload marker 7d41c"))
        .collect();
    assert!(carrying.is_empty(), "without --log-payloads: {carrying:#?}");
    assert!(
        !withheld.contains(key),
        "the API key was logged:\n{withheld}"
    );
}
