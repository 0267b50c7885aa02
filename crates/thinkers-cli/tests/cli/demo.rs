//! `thinkers demo` when a stage fails: the failure is reported under the stage's name, the later
//! stages still run, a closing line lists what passed and what failed, and the exit code says
//! that something failed. Against the simulated provider the demo starts itself.

use thinkers::model::catalog::BUNDLED_TOML;

use crate::support::thinkers;

/// The bundled catalog with `sim-small-a` closed. The one-call stage pins that entry for its
/// decision (the OpenAI dialect's log-probabilities), so the pin is refused and that stage fails;
/// every other stage picks among the open small entries and passes.
fn catalog_with_pinned_entry_closed() -> String {
    let at = BUNDLED_TOML.find("id = \"sim-small-a\"").unwrap();
    let (head, tail) = BUNDLED_TOML.split_at(at);
    let tail = tail.replacen("open = true", "open = false", 1);
    assert_ne!(
        tail,
        BUNDLED_TOML[at..],
        "sim-small-a has no `open = true` line"
    );
    format!("{head}{tail}")
}

#[test]
fn a_failed_stage_is_reported_and_the_next_stages_still_run() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("closed-pin.toml");
    std::fs::write(&catalog, catalog_with_pinned_entry_closed()).unwrap();
    let out = thinkers()
        .args(["demo", "--db"])
        .arg(dir.path().join("demo.db"))
        .arg("--catalog")
        .arg(&catalog)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a failed stage must fail the demo:\n{stdout}\n{stderr}"
    );

    // The failure names the stage and carries the error.
    let failure = stdout
        .lines()
        .find(|l| l.starts_with("Stage `one-call` failed after "))
        .unwrap_or_else(|| panic!("no failure line for the one-call stage in:\n{stdout}"));
    assert!(
        failure.contains("sim-small-a") && failure.contains("closed"),
        "{failure}"
    );
    // The stages before and after it ran and printed their outcome.
    for needle in [
        "Dispatcher stage",
        "Thinker stage",
        "person: What is a seat",
        "streamed pieces",
        "Benchmark over grade small",
        "Model calls and spend of this demo",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    assert!(!stdout.contains("One-call thinkers"), "{stdout}");

    // The closing line lists both sides, each stage once.
    let summary = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Stages passed: "))
        .unwrap_or_else(|| panic!("no summary line in:\n{stdout}"));
    let (passed, failed) = summary.split_once("; failed: ").unwrap();
    for stage in [
        "dispatcher (",
        "thinkers (",
        "providers (",
        "chat (",
        "benchmark (",
    ] {
        assert!(passed.contains(stage), "{stage} not passed: {summary}");
    }
    assert!(
        failed.starts_with("one-call (") && !failed.contains(','),
        "{summary}"
    );
    assert!(
        stderr.contains("1 of 6 demo stages failed: one-call"),
        "{stderr}"
    );
}

/// The demo over a catalog mixing every family the runtime speaks (OpenAI Chat Completions and
/// Responses, Azure OpenAI, Anthropic, Gemini, Bedrock Converse), all served by the in-process
/// sim: every stage passes, the providers stage has each family answer through its entry, and
/// the record names the entries that served each stage.
#[test]
fn the_demo_runs_over_a_catalog_mixing_every_family() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cli/fixtures/mixed-families.toml"
    );
    let out = thinkers()
        .args(["demo", "--db"])
        .arg(dir.path().join("demo.db"))
        .args(["--catalog", catalog])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("failed: none"), "{stdout}");
    let used: Vec<&str> = [
        "mix-openai",
        "mix-anthropic",
        "mix-responses",
        "mix-azure-chat",
        "mix-azure-responses",
        "mix-gemini",
        "mix-bedrock",
    ]
    .into_iter()
    .filter(|id| stdout.contains(&format!("| {id} ")))
    .collect();
    assert!(used.len() >= 3, "entries with calls: {used:?}\n{stdout}");
    for (family, entry) in [
        ("OpenAI Chat Completions", "mix-openai"),
        ("Gemini generateContent", "mix-gemini"),
        ("Bedrock Converse", "mix-bedrock"),
        ("Anthropic Messages", "mix-anthropic"),
        ("Azure OpenAI Chat Completions", "mix-azure-chat"),
        ("OpenAI Responses", "mix-responses"),
        ("Azure OpenAI Responses", "mix-azure-responses"),
    ] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(family) && l.contains(&format!(" {entry} ")))
            .unwrap_or_else(|| panic!("no answer of {family} through {entry} in:\n{stdout}"));
        assert!(line.contains(" pieces, "), "{line}");
        let served = stdout
            .lines()
            .find(|l| l.trim_start().starts_with("providers "))
            .unwrap_or_else(|| panic!("no served-by line for the providers stage:\n{stdout}"));
        // At least one call: the stages are told apart by time, and under load a call of
        // another stage that ends late (or a retried attempt) can land in this one's window.
        assert!(served.contains(&format!("{entry} ({family}, ")), "{served}");
    }
}

/// The demo over the bundled catalog calls each family the sim speaks through a bundled entry,
/// and says which entries, of which family, served each stage.
#[test]
fn the_demo_calls_every_bundled_family_and_names_what_served_each_stage() {
    let dir = tempfile::tempdir().unwrap();
    let out = thinkers()
        .env_remove("THINKERS_SIM_URL")
        .args(["demo", "--db"])
        .arg(dir.path().join("demo.db"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for (family, entry) in [
        ("OpenAI Chat Completions", "sim-small-text"),
        ("Anthropic Messages", "sim-small-b"),
        ("OpenAI Responses", "sim-large-responses"),
        ("Bedrock Converse", "sim-large-bedrock"),
        ("Gemini generateContent", "sim-xl-gemini"),
    ] {
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(family)
                && l.contains(&format!(" {entry} (model {entry}): "))),
            "no answer of {family} through {entry} in:\n{stdout}"
        );
    }
    let served: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Entries that served each stage"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    let stages: Vec<&str> = served
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        stages,
        [
            "dispatcher",
            "thinkers",
            "one-call",
            "providers",
            "chat",
            "benchmark"
        ],
        "{stdout}"
    );
    assert!(served[0].ends_with("no model call"), "{}", served[0]);
    // The one-call decision is pinned to sim-small-a for its log-probabilities.
    assert!(
        served[2].contains("sim-small-a (OpenAI Chat Completions, "),
        "{}",
        served[2]
    );
    // At least one call each (stages are told apart by time: see the mixed-catalog test).
    assert!(
        served[3].contains("sim-xl-gemini (Gemini generateContent, ")
            && served[3].contains("sim-large-bedrock (Bedrock Converse, ")
            && served[3].contains("sim-large-responses (OpenAI Responses, "),
        "{}",
        served[3]
    );
}
