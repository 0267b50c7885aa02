//! The seed's BenchmarkTest: a job that answers with the entry it was served, raced across the
//! small grade through the dispatcher, every row checked; judging overlaps the race; the judge
//! is blind on the wire.

use thinkers::benchmark::{Benchmark, HIDDEN, REPORT, RunRole};
use thinkers::job::JobId;
use thinkers::model::{Catalog, Grade};
use thinkers::record::JobStatus;

use crate::support::{Served, assert_row_matches_records, children, setup};

const SMALL: [&str; 3] = ["sim-small-a", "sim-small-b", "sim-small-text"];

#[tokio::test]
async fn a_job_raced_across_its_grade_returns_the_reference_and_reports_every_run() {
    let s = setup(|c| c).await;
    let bench = Benchmark::new(Served::new, "Which model are you?".to_owned(), 2).scorer(
        |reference: &String, candidate: &String| f64::from(u8::from(reference == candidate)),
    );
    let slot = bench.report();
    let handle = s.rt.dispatcher().submit(bench);
    let cx = handle.context().clone();
    let bench_id = handle.id();
    let answer = handle.await.unwrap();

    let report = slot.get().expect("the report is readable after the run");
    assert_eq!(report.grade, Grade::Small);
    assert_eq!(report.times, 2);
    assert_eq!(report.rows.len(), 1 + SMALL.len() * 2);
    assert_eq!(report.reference_failure, None);
    assert_eq!(report.judge_failure, None);

    // The benchmark returns the reference's answer: the entry the picker served it.
    let reference = report.reference().unwrap();
    assert_eq!(reference.role, RunRole::Reference);
    assert!(reference.succeeded);
    assert_eq!(reference.model, answer);
    assert!(SMALL.contains(&answer.as_str()), "{answer}");
    assert_eq!((reference.calls, reference.iterations), (1, 1));
    assert_eq!(reference.judge_score, None, "the reference is never judged");
    assert_eq!(reference.unjudged, None);

    let catalog = Catalog::bundled();
    for entry in SMALL {
        let rows: Vec<_> = report.candidates().filter(|r| r.model == entry).collect();
        assert_eq!(
            rows.iter().map(|r| r.run).collect::<Vec<_>>(),
            [1, 2],
            "{entry}"
        );
        let currency = &catalog
            .entry(entry)
            .unwrap()
            .currency()
            .unwrap()
            .to_string();
        for row in rows {
            assert!(row.succeeded, "{row:?}");
            assert_eq!(row.error, None);
            assert_eq!((row.calls, row.iterations), (1, 1), "{row:?}");
            assert!(row.input_tokens > 0 && row.output_tokens > 0, "{row:?}");
            assert!(row.wall_ms >= row.latency_ms, "{row:?}");
            assert_eq!(row.cost.keys().collect::<Vec<_>>(), [currency], "{row:?}");
            assert!(row.cost[currency] > 0.0);
            // The run answered with the entry it was pinned to: the scorer agrees with the
            // reference exactly when the reference was served the same entry.
            let same = f64::from(u8::from(entry == answer));
            assert_eq!(row.scorer_score, Some(same), "{row:?}");
            let (score, acc, work) = (
                row.judge_score.unwrap(),
                row.judge_accuracy.unwrap(),
                row.judge_work.unwrap(),
            );
            assert!(acc <= 7 && work <= 3 && score == acc + work, "{row:?}");
            assert!(!row.judge_reason.as_deref().unwrap().is_empty());
            assert!(row.judge_started_at_ms.unwrap() >= row.ended_at_ms);
            assert!(row.judge_ended_at_ms.unwrap() >= row.judge_started_at_ms.unwrap());
        }
        let means = report.means_of(entry).unwrap();
        assert_eq!((means.runs, means.failed, means.judged), (2, 0, 2));
        assert_eq!(means.calls, 1.0);
        assert!(means.judge_score.unwrap() <= 10.0);
    }
    assert_row_matches_records(&report, &s.rec);

    // Published on the job's metadata, identical to what the accessor reads.
    assert_eq!(
        cx.metadata(REPORT).unwrap(),
        serde_json::to_value(&report).unwrap()
    );

    // Through the dispatcher: the reference alone in step 1, the race in step 2, the judges in
    // step 3; every run is a child of the benchmark.
    let kids = children(&s.rec, bench_id);
    let by_class = |class: &str| {
        kids.iter()
            .filter(|j| j.start.class == class)
            .collect::<Vec<_>>()
    };
    let runs = by_class("served_model");
    let judges = by_class("benchmark_judge");
    assert_eq!(runs.len(), 7);
    assert_eq!(judges.len(), 6);
    assert!(kids.iter().all(|j| j.status() == JobStatus::Succeeded));
    let ref_job = JobId::parse(&reference.job).unwrap();
    for r in &runs {
        let expected = if r.start.id == ref_job { 1 } else { 2 };
        assert_eq!(r.start.ordinal, Some(expected));
    }
    assert!(judges.iter().all(|j| j.start.ordinal == Some(3)));
    // The judges ran at the ceiling (mega in the bundled catalog).
    let judge_ids: Vec<JobId> = judges.iter().map(|j| j.start.id).collect();
    let judge_runs: Vec<_> = s
        .rec
        .llm_runs()
        .into_iter()
        .filter(|r| judge_ids.contains(&r.job))
        .collect();
    assert_eq!(judge_runs.len(), 6);
    assert!(
        judge_runs.iter().all(|r| r.entry.starts_with("sim-mega")),
        "{judge_runs:?}"
    );
}

#[tokio::test]
async fn judges_start_while_the_race_is_still_running_and_never_see_a_model_name() {
    // One entry answers slowly, so the others land (and are judged) well before it does.
    let s = setup(|mut c| {
        for m in &mut c.models {
            if m.name == "sim-small-b"
                && let Some(p) = &mut m.profile
            {
                p.latency_ms = [600, 600];
            }
        }
        c
    })
    .await;
    let bench = Benchmark::new(Served::new, "Which model are you?".to_owned(), 1).candidates(SMALL);
    let slot = bench.report();
    let handle = s.rt.dispatcher().submit(bench);
    let bench_id = handle.id();
    handle.await.unwrap();
    let report = slot.get().unwrap();

    // The dispatcher's own records agree: a judge job was submitted before the slow run ended.
    let slow = report
        .candidates()
        .find(|r| r.model == "sim-small-b")
        .unwrap();
    let slow_job = JobId::parse(&slow.job).unwrap();
    let slow_end = s.rec.job(slow_job).unwrap().end.unwrap().ended_at_ms;
    let first_judge_submitted = children(&s.rec, bench_id)
        .iter()
        .filter(|j| j.start.class == "benchmark_judge")
        .map(|j| j.start.started_at_ms)
        .min()
        .unwrap();
    assert!(
        first_judge_submitted < slow_end,
        "first judge submitted at {first_judge_submitted}, slow run ended at {slow_end}"
    );

    let race_end = report.candidates().map(|r| r.ended_at_ms).max().unwrap();
    let first_judge = report
        .candidates()
        .filter_map(|r| r.judge_started_at_ms)
        .min()
        .unwrap();
    assert!(
        first_judge < race_end,
        "the first judge started at {first_judge}, after the race ended at {race_end}"
    );
    let slow = report
        .candidates()
        .find(|r| r.model == "sim-small-b")
        .unwrap();
    assert!(
        report
            .candidates()
            .filter(|r| r.model != "sim-small-b")
            .all(|r| r.judge_started_at_ms.unwrap() < slow.ended_at_ms),
        "{report:#?}"
    );

    // Blind: the judge prompts the sim received name no entry, model or provider of the
    // catalog, although every run's transcript and answer named the entry that served it.
    let catalog = Catalog::bundled();
    let mut names: Vec<String> = catalog
        .entries()
        .iter()
        .flat_map(|e| [e.id().to_owned(), e.model().to_owned()])
        .collect();
    names.extend(catalog.providers().keys().cloned());
    let judge_bodies: Vec<String> = s
        .sim
        .requests()
        .into_iter()
        .filter(|r| r.raw_body.contains("reference_attempt"))
        .map(|r| {
            let mut body = r.body;
            // The body's own `model` field addresses the judge's model; it is not the prompt.
            body.as_object_mut().unwrap().remove("model");
            body.to_string().to_ascii_lowercase()
        })
        .collect();
    assert_eq!(judge_bodies.len(), 3);
    for body in &judge_bodies {
        for name in &names {
            assert!(
                !body.contains(name.as_str()),
                "{name} leaked into a judge prompt: {body}"
            );
        }
        assert!(body.contains(&HIDDEN.to_ascii_lowercase()), "{body}");
    }
}
