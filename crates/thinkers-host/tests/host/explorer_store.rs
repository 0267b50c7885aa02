//! The explorer's store queries on both backends: the paged, filtered workflow list (newest
//! first, with the total), the root classes, and benchmark reports kept and read back.

use std::time::Duration;

use thinkers::benchmark::BenchmarkReport;
use thinkers::job::JobId;
use thinkers::model::Grade;
use thinkers::record::{JobEnd, JobStart, JobStatus};
use thinkers_store::{Store, WorkflowQuery};

/// Five workflows (classes a, b, a, b, a; the last two still running), each with one child.
async fn record(store: &Store) -> Vec<JobId> {
    let recorder = store.recorder().unwrap();
    let mut roots = Vec::new();
    for (i, class) in ["a", "b", "a", "b", "a"].into_iter().enumerate() {
        let root = JobId::new();
        let child = JobId::new();
        let at = 1_700_000_000_000 + i as i64 * 1000;
        for (id, parent, class) in [(root, None, class), (child, Some(root), "child")] {
            recorder.job_started(JobStart {
                id,
                parent,
                workflow: root,
                class: class.to_owned(),
                ordinal: parent.map(|_| 1),
                started_at_ms: at,
            });
        }
        if i < 3 {
            recorder.job_finished(JobEnd {
                id: root,
                status: if i == 1 {
                    JobStatus::Failed
                } else {
                    JobStatus::Succeeded
                },
                error_kind: None,
                error: None,
                ended_at_ms: at + 500,
                attempts: 1,
            });
        }
        roots.push(root);
    }
    recorder.flush().await.unwrap();
    roots
}

async fn check(store: &Store) {
    let roots = record(store).await;
    let all = store
        .workflow_page(&WorkflowQuery::default())
        .await
        .unwrap();
    assert_eq!(all.total, 5);
    let ids: Vec<JobId> = all.workflows.iter().map(|w| w.workflow).collect();
    let newest_first: Vec<JobId> = roots.iter().rev().copied().collect();
    assert_eq!(ids, newest_first);
    assert!(all.workflows.iter().all(|w| w.job_count == 2));

    let page2 = store
        .workflow_page(&WorkflowQuery {
            limit: 2,
            offset: 2,
            ..WorkflowQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(page2.total, 5);
    assert_eq!(
        page2
            .workflows
            .iter()
            .map(|w| w.workflow)
            .collect::<Vec<_>>(),
        newest_first[2..4]
    );

    let a = store
        .workflow_page(&WorkflowQuery {
            class: Some("a".into()),
            ..WorkflowQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(a.total, 3);
    assert!(a.workflows.iter().all(|w| w.root_class == "a"));
    let running = store
        .workflow_page(&WorkflowQuery {
            status: Some(JobStatus::Running),
            ..WorkflowQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(
        running
            .workflows
            .iter()
            .map(|w| w.workflow)
            .collect::<Vec<_>>(),
        [roots[4], roots[3]]
    );
    let failed_b = store
        .workflow_page(&WorkflowQuery {
            status: Some(JobStatus::Failed),
            class: Some("b".into()),
            ..WorkflowQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(failed_b.total, 1);
    assert_eq!(failed_b.workflows[0].workflow, roots[1]);
    assert_eq!(store.root_classes().await.unwrap(), ["a", "b"]);

    // Benchmark reports: kept per job (a second save replaces the first), newest first.
    let report = BenchmarkReport::new(Grade::Small, 1, Vec::new(), None, None);
    let bench = JobId::new();
    store
        .save_benchmark_report(roots[0], bench, &report)
        .await
        .unwrap();
    let other = BenchmarkReport::new(Grade::Medium, 2, Vec::new(), None, Some("judges".into()));
    tokio::time::sleep(Duration::from_millis(5)).await;
    store
        .save_benchmark_report(roots[1], JobId::new(), &other)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    store
        .save_benchmark_report(roots[0], bench, &report)
        .await
        .unwrap();
    let kept = store.benchmark_reports(None, 10).await.unwrap();
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[0].job, bench.to_string(), "the re-saved one is newest");
    let back: BenchmarkReport = serde_json::from_value(kept[0].report.clone()).unwrap();
    assert_eq!(back, report);
    let of_one = store.benchmark_reports(Some(roots[1]), 10).await.unwrap();
    assert_eq!(of_one.len(), 1);
    assert_eq!(of_one[0].report["judge_failure"], "judges");
}

#[tokio::test]
async fn the_explorer_queries_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = thinkers_store::open(dir.path().join("x.db").to_str().unwrap())
        .await
        .unwrap();
    check(&store).await;
}

#[tokio::test]
async fn the_explorer_queries_on_postgres() {
    let Some(url) = crate::pg::fresh_schema_url().await.unwrap() else {
        return;
    };
    let store = thinkers_store::open(&url).await.unwrap();
    check(&store).await;
}
