//! Failure rows: a failed run, a failed reference, one failed judge, every judge failed.

use thinkers::ErrorKind;
use thinkers::benchmark::{Benchmark, REPORT};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule};

use crate::support::{FailOn, Served, assert_row_matches_records, children, setup};

const SMALL: [&str; 3] = ["sim-small-a", "sim-small-b", "sim-small-text"];
/// What the sim's scripted judge answers instead of a verdict.
const NOT_A_VERDICT: &str = "I would rather not score this.";
/// The opening of a one-call tool's correction turn.
const CORRECTION: &str = "Your previous answer could not be used";

#[tokio::test]
async fn a_failed_run_is_a_row_that_says_so_and_the_rest_is_judged() {
    let s = setup(|c| c).await;
    let bench = Benchmark::new(
        || Served::failing(FailOn::Pin("sim-small-text")),
        "Which model are you?".to_owned(),
        2,
    );
    let slot = bench.report();
    let answer = s.rt.dispatcher().run(bench).await.unwrap();
    let report = slot.get().unwrap();
    assert_eq!(report.reference().unwrap().model, answer);
    assert_eq!(report.judge_failure, None);
    for row in report.candidates() {
        if row.model == "sim-small-text" {
            assert!(!row.succeeded, "{row:?}");
            let error = row.error.as_deref().unwrap();
            assert!(error.contains("refuses to answer"), "{error}");
            assert_eq!(row.unjudged.as_deref(), Some("the run failed"));
            assert_eq!(row.judge_score, None);
            assert_eq!(row.scorer_score, None);
            // Its model call happened before it failed and is on its row.
            assert_eq!(row.calls, 1);
            assert!(row.cost["EUR"] > 0.0, "{row:?}");
        } else {
            assert!(row.succeeded, "{row:?}");
            assert!(row.judge_score.is_some(), "{row:?}");
        }
    }
    let text = report.means_of("sim-small-text").unwrap();
    assert_eq!((text.runs, text.failed, text.judged), (2, 2, 0));
    assert!(report.table().contains("failed: "), "{}", report.table());
    assert_row_matches_records(&report, &s.rec);
}

#[tokio::test]
async fn a_failed_reference_fails_the_benchmark_after_the_report_with_every_run_unjudged() {
    let s = setup(|c| c).await;
    let bench = Benchmark::new(
        || Served::failing(FailOn::Unpinned),
        "Which model are you?".to_owned(),
        1,
    );
    let slot = bench.report();
    let handle = s.rt.dispatcher().submit(bench);
    let cx = handle.context().clone();
    let bench_id = handle.id();
    let err = handle.await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("refuses to answer"), "{err}");

    let report = slot
        .get()
        .expect("the report exists although the benchmark failed");
    assert!(cx.metadata(REPORT).is_some(), "the report was published");
    let reference = report.reference().unwrap();
    assert!(!reference.succeeded);
    assert!(
        report
            .reference_failure
            .as_deref()
            .unwrap()
            .contains("refuses")
    );
    assert_eq!(report.candidates().count(), 3);
    for row in report.candidates() {
        assert!(row.succeeded, "{row:?}");
        assert_eq!(row.unjudged.as_deref(), Some("the reference failed"));
        assert_eq!(row.judge_score, None);
        assert_eq!(row.judge_started_at_ms, None);
    }
    // No judge was ever submitted, and no judge failure is reported.
    assert_eq!(report.judge_failure, None);
    assert!(
        children(&s.rec, bench_id)
            .iter()
            .all(|j| j.start.class != "benchmark_judge")
    );
    assert!(report.table().contains("the reference run failed"));
}

#[tokio::test]
async fn one_failed_judge_costs_only_its_runs_score() {
    // Only the run pinned to sim-small-b carries the marker; its judge is answered (and
    // re-answered on every correction) with something that is not a verdict.
    let s = setup(|mut c| {
        c.script = Some(Script::new(vec![
            ScriptRule::when_contains("ZEBRA-7", ScriptAnswer::Text(NOT_A_VERDICT.into())),
            ScriptRule::when_contains(CORRECTION, ScriptAnswer::Text(NOT_A_VERDICT.into())),
        ]));
        c
    })
    .await;
    let bench = Benchmark::new(
        || Served::marking("sim-small-b", "ZEBRA-7"),
        "Which model are you?".to_owned(),
        1,
    )
    .candidates(SMALL);
    let slot = bench.report();
    s.rt.dispatcher().run(bench).await.unwrap();
    let report = slot.get().unwrap();

    assert_eq!(
        report.judge_failure, None,
        "one failed judge is not a judge failure"
    );
    for row in report.candidates() {
        assert!(row.succeeded, "{row:?}");
        if row.model == "sim-small-b" {
            assert_eq!(row.judge_score, None);
            let why = row.unjudged.as_deref().unwrap();
            assert!(why.starts_with("the judge failed"), "{why}");
            assert!(why.contains("answer"), "{why}");
            assert!(row.judge_ended_at_ms.is_some());
        } else {
            assert!(row.judge_score.is_some(), "{row:?}");
            assert_eq!(row.unjudged, None);
        }
    }
    assert_eq!(report.means_of("sim-small-b").unwrap().judged, 0);
}

#[tokio::test]
async fn the_report_names_a_judge_failure_when_every_judge_failed() {
    let s = setup(|mut c| {
        c.script = Some(Script::new(
            ["sim-mega-a", "sim-mega-b"]
                .into_iter()
                .map(|m| {
                    let mut rule =
                        ScriptRule::when_contains("", ScriptAnswer::Text(NOT_A_VERDICT.into()));
                    rule.model = Some(m.to_owned());
                    rule
                })
                .collect(),
        ));
        c
    })
    .await;
    let bench = Benchmark::new(Served::new, "Which model are you?".to_owned(), 1);
    let slot = bench.report();
    let answer = s.rt.dispatcher().run(bench).await.unwrap();
    let report = slot.get().unwrap();
    assert_eq!(
        report.reference().unwrap().model,
        answer,
        "the benchmark still answers"
    );
    let failure = report.judge_failure.as_deref().expect("every judge failed");
    assert!(failure.contains("answer"), "{failure}");
    for row in report.candidates() {
        assert!(row.succeeded);
        assert_eq!(row.judge_score, None);
        assert!(
            row.unjudged
                .as_deref()
                .unwrap()
                .starts_with("the judge failed")
        );
    }
    assert!(report.table().contains("every judge failed"));
}

#[tokio::test]
async fn bad_setups_are_refused_naming_what_is_wrong() {
    // An unknown candidate is refused before anything runs.
    let s = setup(|c| c).await;
    let bench = Benchmark::new(Served::new, "q".to_owned(), 1).candidates(["sim-small-zz"]);
    let err = s.rt.dispatcher().run(bench).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("sim-small-zz"), "{err}");
    assert!(err.to_string().contains("candidates"), "{err}");
    assert!(s.rec.llm_runs().is_empty());

    // Zero runs per entry is refused too.
    let err =
        s.rt.dispatcher()
            .run(Benchmark::new(Served::new, "q".to_owned(), 0))
            .await
            .unwrap_err();
    assert!(err.to_string().contains("times"), "{err}");

    // A dispatcher wired by hand without a cost ledger cannot benchmark.
    let bare = thinkers::Dispatcher::builder().build();
    let err = bare
        .run(Benchmark::new(Served::new, "q".to_owned(), 1))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::System, "{err}");
    assert!(err.to_string().contains("CostLedger"), "{err}");
}
