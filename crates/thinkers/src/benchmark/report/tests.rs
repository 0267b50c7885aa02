use super::*;

fn row(model: &str, run: u32, ok: bool, judge: Option<u8>, cost: f64) -> RunRow {
    RunRow {
        role: RunRole::Candidate,
        model: model.into(),
        run,
        job: "j".into(),
        succeeded: ok,
        error: (!ok).then(|| "boom, \"quoted\"".to_owned()),
        calls: 2,
        iterations: 2,
        input_tokens: 100,
        cache_read_tokens: 60,
        cache_write_tokens: 15,
        output_tokens: 10,
        latency_ms: 30,
        wall_ms: 40,
        cost: BTreeMap::from([("USD".to_owned(), cost)]),
        unpriced_calls: 0,
        started_at_ms: 0,
        ended_at_ms: 40,
        judge_score: judge,
        judge_accuracy: judge.map(|j| j.min(7)),
        judge_work: judge.map(|j| j.saturating_sub(7)),
        judge_reason: judge.map(|_| "close".to_owned()),
        unjudged: None,
        judge_started_at_ms: None,
        judge_ended_at_ms: None,
        scorer_score: ok.then_some(1.0),
    }
}

#[test]
fn means_skip_failed_runs_and_unjudged_ones() {
    let report = BenchmarkReport::new(
        Grade::Small,
        2,
        vec![
            row("a", 1, true, Some(8), 0.25),
            row("a", 2, true, Some(6), 0.75),
            row("b", 1, false, None, 0.0),
            row("b", 2, true, None, 1.0),
        ],
        None,
        None,
    );
    let a = report.means_of("a").unwrap();
    assert_eq!((a.runs, a.failed, a.judged), (2, 0, 2));
    assert_eq!(a.judge_score, Some(7.0));
    assert_eq!(a.cost["USD"], 0.5);
    assert_eq!(
        (
            a.uncached_input_tokens(),
            a.cache_read_tokens,
            a.cache_write_tokens
        ),
        (25.0, 60.0, 15.0)
    );
    let b = report.means_of("b").unwrap();
    assert_eq!((b.runs, b.failed, b.judged), (2, 1, 0));
    assert_eq!(b.judge_score, None);
    assert_eq!(b.cost["USD"], 1.0);
    assert_eq!(
        report
            .means
            .iter()
            .map(|m| m.model.as_str())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );

    let table = report.table();
    assert!(table.contains("8/10 close"), "{table}");
    assert!(table.contains("failed: boom"), "{table}");
    // The input in three parts: uncached, cache reads, cache writes; then the output.
    let first = table.lines().nth(2).unwrap();
    let cells: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(
        cells[0..9],
        ["#1", "a", "ok", "2", "2", "25", "60", "15", "10"],
        "{table}"
    );
    let header = table.lines().nth(1).unwrap();
    assert!(
        header.contains("uncached in  cache rd  cache wr  tok out"),
        "{table}"
    );
    let csv = report.rows_csv();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0], CSV_HEADER.join(","));
    assert!(lines[3].contains("\"boom, \"\"quoted\"\"\""), "{csv}");
    assert!(lines[1].ends_with(",0,60,15"), "{csv}");
}

#[test]
fn a_run_with_unpriced_calls_shows_its_cost_as_unknown_never_zero() {
    let mixed = RunRow {
        unpriced_calls: 1,
        ..row("a", 1, true, None, 0.25)
    };
    let unknown = RunRow {
        cost: BTreeMap::new(),
        unpriced_calls: 2,
        ..row("b", 1, true, None, 0.0)
    };
    assert_eq!(mixed.cost_text(), "≥ 0.250000 USD + unknown");
    assert_eq!(unknown.cost_text(), "unknown");
    let report = BenchmarkReport::new(Grade::Small, 1, vec![mixed, unknown], None, None);
    assert_eq!(report.means_of("b").unwrap().unpriced_calls, 2);
    let table = report.table();
    assert!(table.contains("≥ 0.250000 USD + unknown"), "{table}");
    assert!(table.contains("unknown"), "{table}");
    let csv = report.rows_csv();
    assert!(csv.lines().nth(2).unwrap().ends_with(",2,60,15"), "{csv}");
}
