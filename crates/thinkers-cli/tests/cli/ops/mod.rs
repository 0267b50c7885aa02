//! `thinkers sizing` and `thinkers cost` against a seeded database, and the log flags
//! (`logs`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use thinkers::job::JobId;
use thinkers::record::{JobEnd, JobStart, JobStatus, LlmRun, Recorder as _, now_ms};
use thinkers_store::{SqliteRecorder, SqliteStore};

mod logs;

fn thinkers() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_thinkers"));
    for var in [
        "THINKERS_LOG",
        "THINKERS_LOG_FORMAT",
        "THINKERS_LOG_PAYLOADS",
        "THINKERS_DB",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn run(cmd: &mut Command) -> (Output, String, String) {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

const HOUR_MS: i64 = 3_600_000;

/// The jobs and calls of one seeded workflow.
struct Seeded {
    workflow: JobId,
    sub: JobId,
}

#[allow(clippy::too_many_arguments)]
fn call(
    job: JobId,
    workflow: JobId,
    class: &str,
    entry: &str,
    output: u64,
    budget: u64,
    cost: f64,
    currency: &str,
    at_ms: i64,
) -> LlmRun {
    LlmRun {
        job,
        workflow,
        class: class.to_owned(),
        entry: entry.to_owned(),
        model: entry.to_owned(),
        input_tokens: 1_500,
        output_tokens: output,
        reasoning_tokens: output / 10,
        cached_tokens: 500,
        cache_write_tokens: 200,
        output_budget: budget,
        latency_ms: 300 + output / 4,
        stop_reason: "end_turn".to_owned(),
        cost: Some(cost),
        currency: currency.to_owned(),
        at_ms,
        escalated: false,
    }
}

/// A database holding two workflows of a research doer: a sub-thinker below it whose tool
/// calls hit their Compact budget (three truncations, two escalations), a classifier declared
/// far too large, a judge on a EUR entry, and one call from three days ago.
async fn seed(path: &Path) -> Vec<Seeded> {
    let store = SqliteStore::open(path.to_str().unwrap()).await.unwrap();
    let recorder = SqliteRecorder::new(&store).unwrap();
    let now = now_ms();
    let mut seeded = Vec::new();
    for w in 0..2_i64 {
        let at = now - HOUR_MS + w * 60_000;
        let root = JobId::new();
        let sub = JobId::new();
        let classify = JobId::new();
        let tools: Vec<JobId> = (0..4).map(|_| JobId::new()).collect();
        let judge = JobId::new();
        let mut jobs = vec![
            (root, None, "research", None),
            (classify, Some(root), "classify_ticket", Some(1)),
            (sub, Some(root), "sub_thinker", Some(2)),
            (judge, Some(root), "judge_answer", Some(3)),
        ];
        for tool in &tools {
            jobs.push((*tool, Some(sub), "extract_claims", Some(1)));
        }
        for (id, parent, class, ordinal) in jobs {
            recorder.job_started(JobStart {
                id,
                parent,
                workflow: root,
                class: class.to_owned(),
                ordinal,
                started_at_ms: at,
            });
            recorder.job_finished(JobEnd {
                id,
                status: JobStatus::Succeeded,
                error_kind: None,
                error: None,
                ended_at_ms: at + 1_000,
                attempts: 1,
            });
        }
        let mut runs = Vec::new();
        for n in 0..10 {
            runs.push(call(
                classify,
                root,
                "classify_ticket",
                "sim-small-a",
                40 + n * 17 + w as u64,
                16_384,
                0.0004,
                "USD",
                at,
            ));
        }
        runs.push(call(
            sub,
            root,
            "sub_thinker",
            "sim-medium-a",
            900,
            4_096,
            0.02,
            "USD",
            at,
        ));
        for (n, tool) in tools.iter().enumerate() {
            runs.push(call(
                *tool,
                root,
                "extract_claims",
                "sim-medium-a",
                1_800 + n as u64 * 300,
                4_096,
                0.03,
                "USD",
                at,
            ));
        }
        let mut cut = call(
            tools[0],
            root,
            "extract_claims",
            "sim-medium-a",
            4_096,
            4_096,
            0.05,
            "USD",
            at + 1,
        );
        cut.stop_reason = "max_tokens".to_owned();
        runs.push(cut.clone());
        if w == 0 {
            runs.push(cut);
        }
        let mut escalated = call(
            tools[0],
            root,
            "extract_claims",
            "sim-medium-a",
            5_900 + w as u64 * 300,
            16_384,
            0.08,
            "USD",
            at + 2,
        );
        escalated.escalated = true;
        runs.push(escalated);
        for n in 0..3 {
            runs.push(call(
                judge,
                root,
                "judge_answer",
                "sim-large-a",
                150 + n * 90,
                1_024,
                0.01,
                "EUR",
                at,
            ));
        }
        for run in runs {
            recorder.llm_run(run);
        }
        seeded.push(Seeded {
            workflow: root,
            sub,
        });
    }
    // An old summary on an entry whose ceiling (8,192) caps its Standard budget.
    let old = JobId::new();
    recorder.llm_run(call(
        old,
        old,
        "summarize_section",
        "sim-small-b",
        2_500,
        8_192,
        0.002,
        "USD",
        now - 72 * HOUR_MS,
    ));
    recorder.flush().await.unwrap();
    store.close().await;
    seeded
}

async fn seeded_db() -> (tempfile::TempDir, PathBuf, Vec<Seeded>) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ops.db");
    let seeded = seed(&db).await;
    (dir, db, seeded)
}

/// The cells of the table row whose first cell is `first` (and, if given, whose cells include
/// `also`).
fn row(table: &str, first: &str, also: Option<&str>) -> Vec<String> {
    table
        .lines()
        .map(|l| {
            l.split('|')
                .map(|c| c.trim().to_owned())
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
        })
        .find(|cells| {
            cells.first().is_some_and(|c| c == first)
                && also.is_none_or(|a| cells.iter().any(|c| c == a))
        })
        .unwrap_or_else(|| panic!("no row {first} {also:?} in:\n{table}"))
}

#[tokio::test]
async fn sizing_prints_recommendations_and_flags_truncated_classes() {
    let (_dir, db, _) = seeded_db().await;
    let (out, stdout, stderr) = run(thinkers().arg("sizing").arg("--db").arg(&db));
    assert!(out.status.success(), "{stderr}");
    println!("$ thinkers sizing\n{stdout}");
    assert!(
        stdout.contains("Sizing from 42 model calls over 5 job classes"),
        "{stdout}"
    );
    let header = [
        "class",
        "calls",
        "max out",
        "p95 out",
        "declared",
        "recommended",
        "change",
        "truncated",
        "escalated",
    ];
    assert_eq!(row(&stdout, "class", None), header);
    assert_eq!(
        row(&stdout, "classify_ticket", None),
        [
            "classify_ticket",
            "20",
            "194",
            "193",
            "standard",
            "verdict",
            "lower",
            "-",
            "0"
        ]
    );
    assert_eq!(
        row(&stdout, "extract_claims", None),
        [
            "extract_claims",
            "13",
            "6200",
            "6200",
            "compact",
            "standard",
            "raise",
            "YES (3)",
            "2"
        ]
    );
    assert_eq!(
        row(&stdout, "judge_answer", None),
        [
            "judge_answer",
            "6",
            "330",
            "330",
            "verdict",
            "verdict",
            "keep",
            "-",
            "0"
        ]
    );
    assert_eq!(
        row(&stdout, "summarize_section", None)[4],
        "standard+ (capped at 8,192)"
    );
    assert!(
        stdout.contains("! extract_claims: 3 of 13 calls stopped at the output budget"),
        "{stdout}"
    );
    assert!(
        stdout.contains("re-ran 2 calls at the model's ceiling"),
        "{stdout}"
    );

    // The window leaves the three-day-old class out; JSON carries the same data.
    let (out, stdout, _) = run(thinkers()
        .args(["sizing", "--since", "24h", "--json", "--db"])
        .arg(&db));
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let classes = json["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 4);
    assert_eq!(classes[1]["class"], "extract_claims");
    assert_eq!(classes[1]["recommended"], "standard");
    assert_eq!(classes[1]["truncations"], 3);
}

#[tokio::test]
async fn cost_groups_per_currency_and_rolls_up_workflows_and_subtrees() {
    let (_dir, db, seeded) = seeded_db().await;
    let (out, stdout, stderr) = run(thinkers().args(["cost", "--by", "class", "--db"]).arg(&db));
    assert!(out.status.success(), "{stderr}");
    println!("$ thinkers cost --by class\n{stdout}");
    assert_eq!(
        row(&stdout, "classify_ticket", Some("USD")),
        [
            "classify_ticket",
            "USD",
            "20",
            // 20 calls of 1,500 input tokens: 500 read from the cache, 200 written to it.
            "16000",
            "10000",
            "4000",
            "2340",
            "225",
            "327",
            "348",
            "348",
            "0.0080"
        ]
    );
    assert_eq!(row(&stdout, "judge_answer", Some("EUR"))[2], "6");
    // Never one total across currencies.
    assert_eq!(row(&stdout, "TOTAL", Some("EUR"))[11], "0.0600");
    assert_eq!(row(&stdout, "TOTAL", Some("USD"))[1], "USD");

    // By workflow: every job's spend, sub-thinker and tools included, lands on its workflow.
    let (out, stdout, _) = run(thinkers()
        .args(["cost", "--by", "workflow", "--since", "1d", "--db"])
        .arg(&db));
    assert!(out.status.success());
    println!("$ thinkers cost --by workflow --since 1d\n{stdout}");
    let first = seeded[0].workflow.to_string();
    let usd = row(&stdout, &first, Some("USD"));
    assert_eq!(usd[1], "research");
    // 10 × 0.0004 + 0.02 + 4 × 0.03 + 2 × 0.05 + 0.08
    assert_eq!((usd[3].as_str(), usd[12].as_str()), ("18", "0.3240"));
    assert_eq!(
        (usd[4].as_str(), usd[5].as_str(), usd[6].as_str()),
        ("14400", "9000", "3600")
    );
    assert_eq!(row(&stdout, &first, Some("EUR"))[12], "0.0300");

    // Under the sub-thinker: its call and its tools' calls only.
    let sub = seeded[0].sub.to_string();
    let (out, stdout, stderr) = run(thinkers().args(["cost", "--under", &sub, "--db"]).arg(&db));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("Spend of sub_thinker"), "{stdout}");
    let usd = row(&stdout, "USD", None);
    assert_eq!((usd[1].as_str(), usd[10].as_str()), ("8", "0.3200"));
    assert_eq!(
        (usd[2].as_str(), usd[3].as_str(), usd[4].as_str()),
        ("6400", "4000", "1600")
    );
}

#[tokio::test]
async fn cost_shows_the_calls_of_an_entry_without_prices_as_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("unpriced.db");
    let store = SqliteStore::open(db.to_str().unwrap()).await.unwrap();
    let recorder = SqliteRecorder::new(&store).unwrap();
    let (root, now) = (JobId::new(), now_ms());
    recorder.llm_run(call(
        root,
        root,
        "answer",
        "gpt-4o-mini",
        100,
        1_024,
        0.25,
        "USD",
        now,
    ));
    for _ in 0..2 {
        recorder.llm_run(LlmRun {
            cost: None,
            currency: String::new(),
            ..call(
                root,
                root,
                "answer",
                "local-llama",
                100,
                1_024,
                0.0,
                "",
                now,
            )
        });
    }
    recorder.flush().await.unwrap();
    store.close().await;

    let (out, stdout, stderr) = run(thinkers().args(["cost", "--by", "entry", "--db"]).arg(&db));
    assert!(out.status.success(), "{stderr}");
    println!("$ thinkers cost --by entry\n{stdout}");
    let unpriced = row(&stdout, "local-llama", None);
    assert_eq!((unpriced[1].as_str(), unpriced[2].as_str()), ("-", "2"));
    assert_eq!(unpriced.last().unwrap(), "unknown", "{stdout}");
    assert_eq!(row(&stdout, "gpt-4o-mini", Some("USD"))[11], "0.2500");
    // The totals: the known spend, and the unknown beside it, never added as 0.
    assert_eq!(row(&stdout, "TOTAL", Some("USD"))[11], "0.2500");
    assert_eq!(row(&stdout, "TOTAL", Some("-"))[11], "unknown");
    // The unpriced calls' tokens are counted all the same, cache reads and writes apart.
    assert_eq!(
        row(&stdout, "TOTAL", Some("-"))[3..6],
        ["1600", "1000", "400"]
    );

    let (out, stdout, _) = run(thinkers()
        .args(["cost", "--by", "entry", "--json", "--db"])
        .arg(&db));
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = json["rows"].as_array().unwrap();
    let local = rows.iter().find(|r| r["group"] == "local-llama").unwrap();
    assert!(local["cost"].is_null(), "{local}");
    assert_eq!(local["unpriced_calls"], 2);
    assert_eq!(local["input_tokens"], 3_000, "{local}");
    assert_eq!(local["cache_read_tokens"], 1_000, "{local}");
    assert_eq!(local["cache_write_tokens"], 400, "{local}");
}

#[tokio::test]
async fn bad_arguments_are_named() {
    let (_dir, db, _) = seeded_db().await;
    let (out, _, stderr) = run(thinkers()
        .args(["cost", "--since", "fortnight", "--db"])
        .arg(&db));
    assert!(!out.status.success());
    assert!(
        stderr.contains("since") && stderr.contains("fortnight"),
        "{stderr}"
    );
    let (out, _, stderr) = run(thinkers().args(["cost", "--by", "model", "--db"]).arg(&db));
    assert!(!out.status.success());
    assert!(
        stderr.contains("model") && stderr.contains("workflow"),
        "{stderr}"
    );
    let (out, _, stderr) = run(thinkers().args(["sizing", "--db", "/nonexistent/ops.db"]));
    assert!(!out.status.success());
    assert!(stderr.contains("/nonexistent/ops.db"), "{stderr}");
    let (out, _, stderr) = run(thinkers()
        .env("THINKERS_LOG", "thinkers=loud")
        .args(["sizing", "--db"])
        .arg(&db));
    assert!(!out.status.success());
    assert!(stderr.contains("THINKERS_LOG"), "{stderr}");
}

#[tokio::test]
async fn cost_shows_where_each_spending_cap_stands() {
    let (dir, db, seeded) = seeded_db().await;
    // A catalog capping each run and the `sim-small-a` entry's day; a day cap from the flags.
    let catalog = dir.path().join("caps.toml");
    std::fs::write(
        &catalog,
        "[spend]\ncurrency = \"USD\"\nper_run = 0.5\n\n[providers.p]\ndialect = \"openai\"\n\
         base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"K\"\n\n[[entries]]\n\
         id = \"sim-small-a\"\nprovider = \"p\"\nmodel = \"m\"\ngrade = \"small\"\n\
         context_window = 1000\noutput_ceiling = 100\nprice_in = 1\nprice_out = 1\n\
         currency = \"USD\"\nspend = { per_day = 1 }\n",
    )
    .unwrap();
    let (out, stdout, stderr) = run(thinkers()
        .args(["cost", "--max-cost-per-day", "2", "--catalog"])
        .arg(&catalog)
        .arg("--db")
        .arg(&db));
    assert!(out.status.success(), "{stderr}");
    println!("$ thinkers cost --max-cost-per-day 2 --catalog caps.toml\n{stdout}");
    let first = seeded[0].workflow.to_string();
    let second = seeded[1].workflow.to_string();
    let run_line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("run:"))
        .unwrap_or_else(|| panic!("a run cap line: {stdout}"));
    // Each workflow spent 0.3240 USD: the cap has 0.176 left for the costliest.
    assert!(
        run_line.contains("0.324000 of 0.5 USD spent") && run_line.contains("0.176000 USD left"),
        "{run_line}"
    );
    assert!(
        run_line.contains(&first) || run_line.contains(&second),
        "{run_line}"
    );
    assert!(
        stdout.contains("day ") && stdout.contains("of 2 USD spent"),
        "{stdout}"
    );
    assert!(stdout.contains("on entry `sim-small-a`"), "{stdout}");

    // The JSON carries the same standing.
    let (out, stdout, _) = run(thinkers()
        .args(["cost", "--json", "--max-cost", "0.5", "--db"])
        .arg(&db));
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let caps = json["caps"].as_array().unwrap();
    assert_eq!(caps.len(), 1);
    assert_eq!(caps[0]["cap"], "run");
    let left = caps[0]["left"].as_f64().unwrap();
    assert!((left - 0.176).abs() < 1e-9, "{left}");
    // Without caps the JSON is the report alone.
    let (_, stdout, _) = run(thinkers().args(["cost", "--json", "--db"]).arg(&db));
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(json.get("caps").is_none());
}
