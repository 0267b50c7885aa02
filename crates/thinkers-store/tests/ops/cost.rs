//! Cost roll-ups through real jobs: nested doers run under the dispatcher with the SQLite
//! recorder, each recording the model calls it "made"; spend sums per workflow and per subtree,
//! and currencies stay apart.

use std::sync::Arc;

use anyhow::Result;
use thinkers::Dispatcher;
use thinkers::job::{JobContext, JobId, doer};
use thinkers::ops::cost::{self, GroupBy};
use thinkers::record::{LlmRun, Recorder as _, now_ms};
use thinkers_store::LlmRunFilter;

use crate::support::TempStore;

/// Record one model call made by the job running in `cx`.
fn spend(cx: &JobContext, entry: &str, cost: f64, currency: &str) {
    cx.recorder().llm_run(LlmRun {
        job: cx.id(),
        workflow: cx.workflow(),
        class: cx.class().to_owned(),
        entry: entry.to_owned(),
        model: entry.to_owned(),
        input_tokens: 1_000,
        output_tokens: 100,
        reasoning_tokens: 10,
        cached_tokens: 200,
        cache_write_tokens: 50,
        output_budget: 4_096,
        latency_ms: 250,
        stop_reason: "end_turn".to_owned(),
        cost: Some(cost),
        currency: currency.to_owned(),
        at_ms: now_ms(),
        escalated: false,
    });
}

/// The ids of the jobs one research workflow ran.
struct Ids {
    root: JobId,
    sub: JobId,
    tool: JobId,
}

/// research (1.00 USD)
/// ├─ plan (0.25 USD)
/// └─ sub_thinker (2.00 EUR)
///    ├─ lookup (0.50 USD)
///    └─ lookup (0.50 USD, 0.75 EUR)
async fn research(dispatcher: &Dispatcher) -> Result<Ids> {
    let ids = dispatcher
        .run(doer("research", |cx| async move {
            spend(&cx, "sim-medium-a", 1.0, "USD");
            cx.submit(doer("plan", |cx| async move {
                spend(&cx, "sim-small-a", 0.25, "USD");
                Ok(())
            }))
            .await?;
            let (sub, tool) = cx
                .submit(doer("sub_thinker", |cx| async move {
                    spend(&cx, "sim-large-a", 2.0, "EUR");
                    let step = cx.fan_out();
                    assert_eq!(step.ordinal(), 1);
                    let first = step.submit(doer("lookup", |cx| async move {
                        spend(&cx, "sim-small-a", 0.5, "USD");
                        Ok(cx.id())
                    }));
                    let second = step.submit(doer("lookup", |cx| async move {
                        spend(&cx, "sim-small-a", 0.5, "USD");
                        spend(&cx, "sim-large-a", 0.75, "EUR");
                        Ok(cx.id())
                    }));
                    first.await?;
                    let tool = second.await?;
                    Ok((cx.id(), tool))
                }))
                .await?;
            Ok(Ids {
                root: cx.id(),
                sub,
                tool,
            })
        }))
        .await?;
    Ok(ids)
}

#[tokio::test]
async fn spend_rolls_up_per_workflow_and_per_ancestor() -> Result<()> {
    let db = TempStore::new().await?;
    let dispatcher = Dispatcher::builder()
        .recorder(Arc::new(db.recorder.clone()))
        .build();
    let first = research(&dispatcher).await?;
    let second = research(&dispatcher).await?;
    db.recorder.flush().await?;

    let runs = db.store.llm_runs(&LlmRunFilter::new()).await?;
    assert_eq!(runs.len(), 12);
    let by_workflow = cost::report(&runs, GroupBy::Workflow);
    for w in [first.root, second.root] {
        let usd = by_workflow.row(&w.to_string(), "USD").unwrap();
        let eur = by_workflow.row(&w.to_string(), "EUR").unwrap();
        // 1.00 + 0.25 + 0.50 + 0.50 in USD, 2.00 + 0.75 in EUR: never one sum of both.
        assert!((usd.cost.unwrap() - 2.25).abs() < 1e-9, "{usd:?}");
        assert!((eur.cost.unwrap() - 2.75).abs() < 1e-9, "{eur:?}");
        assert_eq!((usd.calls, eur.calls), (4, 2));
        assert_eq!(usd.input_tokens, 4_000);
        // Of which read from and written to the prompt caches, each its own figure.
        assert_eq!((usd.cache_read_tokens, usd.cache_write_tokens), (800, 200));
        assert_eq!(usd.uncached_input_tokens(), 3_000);
        assert_eq!(by_workflow.group(&w.to_string()).len(), 2);
    }
    assert!((by_workflow.total("USD").unwrap().cost.unwrap() - 4.5).abs() < 1e-9);
    assert!((by_workflow.total("EUR").unwrap().cost.unwrap() - 5.5).abs() < 1e-9);

    // The sub-thinker's subtree: its own call and both tool calls, nothing of its parent.
    let jobs = db.store.workflow_jobs(first.root).await?;
    assert_eq!(jobs.len(), 5);
    let workflow_runs = db
        .store
        .llm_runs(&LlmRunFilter::new().workflow(first.root))
        .await?;
    let sub = cost::rollup_by_ancestor(&jobs, &workflow_runs, first.sub);
    assert_eq!(sub.jobs.len(), 3);
    assert_eq!(sub.jobs[0], first.sub);
    assert!((sub.in_currency("USD").unwrap().cost.unwrap() - 1.0).abs() < 1e-9);
    assert!((sub.in_currency("EUR").unwrap().cost.unwrap() - 2.75).abs() < 1e-9);
    let eur = sub.in_currency("EUR").unwrap();
    assert_eq!((eur.cache_read_tokens, eur.cache_write_tokens), (400, 100));
    // A leaf is its own subtree.
    let leaf = cost::rollup_by_ancestor(&jobs, &workflow_runs, first.tool);
    assert_eq!(leaf.jobs, [first.tool]);
    assert_eq!(leaf.in_currency("USD").unwrap().calls, 1);
    // The root's subtree is the workflow's roll-up.
    let whole = cost::rollup_by_ancestor(&jobs, &workflow_runs, first.root);
    assert_eq!(
        whole.in_currency("EUR").unwrap().cost,
        by_workflow
            .row(&first.root.to_string(), "EUR")
            .unwrap()
            .cost
    );

    // By class, the two lookups of both workflows share a row per currency.
    let by_class = cost::report(&runs, GroupBy::Class);
    assert_eq!(by_class.row("lookup", "USD").unwrap().calls, 4);
    assert_eq!(by_class.row("lookup", "EUR").unwrap().calls, 2);

    // Workflow rows can be labelled with their root class.
    let labels = db
        .store
        .job_classes(&[first.root, second.root, first.sub])
        .await?;
    assert_eq!(
        labels.get(&first.root).map(String::as_str),
        Some("research")
    );
    assert_eq!(labels.len(), 3);
    let window = db.store.llm_run_window(None).await?.unwrap();
    assert!(window.0 <= window.1);
    assert_eq!(db.store.llm_run_window(Some(window.1 + 1)).await?, None);
    Ok(())
}
