//! The runs explorer of `thinkers serve` in headless Chromium, on the database `thinkers demo`
//! wrote: the workflow list shows every demo workflow, the benchmark's tree expands to its judge
//! calls, a model call shows its tokens and cost, the benchmark chart, the cost charts and the
//! admission view of every entry called render; then a workflow run by another process on the
//! same database grows in the open tree while it runs. The host requires a token, which the browser presents once as `?token=`.
//!
//! Screenshots of the list, a tree, the benchmark chart, the cost and the limits are written to
//! `$CARGO_TARGET_DIR/screenshots/explorer-*.png` (printed by the test).

use std::collections::HashSet;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use thinkers::job::doer;
use thinkers_store::RuntimeBuilderExt as _;
use thinkers_store::SqliteStore;

use crate::support::browser::{browser, screenshot_path};
use crate::support::host::{http, serve};

const TOKEN: &str = "explorer-test-token-3f9a";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explorer_shows_the_demo_database_in_headless_chromium() {
    let Some(browser) = browser("the runs explorer test").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("demo.db");
    let out = Command::new(env!("CARGO_BIN_EXE_thinkers"))
        .env_remove("THINKERS_DB")
        .env_remove("THINKERS_SIM_URL")
        .args(["demo", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the demo failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // What the demo recorded, read straight from the store.
    let store = SqliteStore::open(db.to_str().unwrap()).await.unwrap();
    let recorded = store.list_workflows(1000).await.unwrap();
    assert!(recorded.len() > 3, "the demo recorded {recorded:?}");
    let opened = thinkers_store::Store::Sqlite(store.clone());
    let benches = opened.benchmark_reports(None, 10).await.unwrap();
    assert_eq!(benches.len(), 1, "the demo's benchmark report is stored");
    let bench = &benches[0];
    let bench_jobs = store
        .workflow_jobs(thinkers::job::JobId::parse(&bench.workflow).unwrap())
        .await
        .unwrap();
    let judges = bench_jobs
        .iter()
        .filter(|j| j.class.contains("judge"))
        .count();
    assert!(judges > 0, "no judge job in {bench_jobs:?}");

    let host = serve(db.to_str().unwrap(), &["--token", TOKEN]);
    let base = format!("http://{}", host.addr);
    // Without the token nothing is served.
    let (status, _) = http(&host.addr, "GET", "/api/runs/workflows", "");
    assert!(status.contains("401"), "{status}");

    // The list: every demo workflow, newest first.
    browser.goto(&format!("{base}/runs?token={TOKEN}")).await;
    let url = browser.eval("return location.href").await;
    assert_eq!(url, json!(format!("{base}/runs")), "the token left the URL");
    let ids = browser
        .wait_for(
            "return [...document.querySelectorAll('tr.wf-row')].map(r => r.dataset.id)",
            |v| v.as_array().is_some_and(|a| a.len() == recorded.len()),
        )
        .await;
    let shown: HashSet<&str> = ids
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for w in &recorded {
        assert!(
            shown.contains(w.workflow.to_string().as_str()),
            "{w:?} missing"
        );
    }
    let first = ids[0].as_str().unwrap();
    assert_eq!(first, recorded[0].workflow.to_string(), "newest first");
    let list_png = screenshot_path("explorer-list.png");
    browser.screenshot(&list_png).await;

    // The benchmark's tree, expanded down to its judges and their model calls.
    browser
        .click(&format!("tr.wf-row[data-id='{}']", bench.workflow))
        .await;
    browser
        .wait_for(
            "return document.querySelectorAll('#tree li.job').length",
            |v| v.as_u64() == Some(bench_jobs.len() as u64),
        )
        .await;
    browser.click("#expand-all").await;
    let judge_calls = browser
        .wait_for(
            "return [...document.querySelectorAll('#tree li.job')]\
             .filter(j => j.dataset.class.includes('judge') && j.offsetParent !== null)\
             .map(j => j.querySelectorAll(':scope > ul > li.call').length)",
            |v| v.as_array().is_some_and(|a| !a.is_empty()),
        )
        .await;
    let judge_calls: Vec<u64> = judge_calls
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(judge_calls.len(), judges, "every judge is shown");
    assert!(judge_calls.iter().all(|n| *n >= 1), "{judge_calls:?}");
    // A judge's model call: its tokens and cost.
    browser
        .click("#tree li.job[data-class*='judge'] > ul > li.call")
        .await;
    let detail = browser
        .wait_for(
            "const d = document.getElementById('call-detail'); if (d.hidden) return null; \
             const f = (k) => d.querySelector(`dd[data-field='${k}']`).textContent; \
             return {in: f('tokens in'), out: f('tokens out'), cost: f('cost'), \
                     stop: f('stop reason'), text: d.textContent}",
            |v| !v.is_null(),
        )
        .await;
    let tokens_in: u64 = detail["in"].as_str().unwrap().parse().unwrap();
    let tokens_out: u64 = detail["out"].as_str().unwrap().parse().unwrap();
    assert!(tokens_in > 0 && tokens_out > 0, "{detail}");
    let cost = detail["cost"].as_str().unwrap();
    let (amount, currency) = cost.split_once(' ').unwrap();
    assert!(amount.parse::<f64>().unwrap() > 0.0, "{cost}");
    assert!(!currency.is_empty(), "{cost}");
    assert!(
        !detail["text"].as_str().unwrap().contains("Bearer"),
        "no credential is shown"
    );
    let tree_png = screenshot_path("explorer-tree.png");
    browser.screenshot(&tree_png).await;

    // The benchmark: its table and the chart of judge score against cost.
    browser.click(".tab[data-tab='benchmarks']").await;
    let scored = bench.report["means"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| !m["judge_score"].is_null())
        .count();
    assert!(scored > 0, "{}", bench.report);
    let chart = browser
        .wait_for(
            "const s = document.querySelector('svg.bench-chart'); if (!s) return null; \
             return {points: document.querySelectorAll('svg.bench-chart circle.point').length, \
                     rows: document.querySelectorAll('.bench > table tbody tr').length, \
                     width: s.getBoundingClientRect().width}",
            |v| !v.is_null(),
        )
        .await;
    assert_eq!(
        chart["points"],
        json!(scored),
        "one point per judged model: {chart}"
    );
    let models = bench.report["means"].as_array().unwrap().len();
    assert_eq!(
        chart["rows"],
        json!(models),
        "one table row per model: {chart}"
    );
    assert!(chart["width"].as_f64().unwrap() > 100.0, "{chart}");
    let chart_png = screenshot_path("explorer-benchmark.png");
    browser.screenshot(&chart_png).await;

    // Cost over time per entry and class, and sizing per class.
    browser.click(".tab[data-tab='cost']").await;
    let cost = browser
        .wait_for(
            "const e = document.querySelectorAll('#cost-chart-entry polyline.series').length; \
             const c = document.querySelectorAll('#cost-chart-class polyline.series').length; \
             const s = document.querySelectorAll('#sizing tbody tr').length; \
             return e && c && s ? [e, c, s] : null",
            |v| !v.is_null(),
        )
        .await;
    assert!(cost[2].as_u64().unwrap() >= 1, "{cost}");
    let cost_png = screenshot_path("explorer-cost.png");
    browser.screenshot(&cost_png).await;

    // Admission per entry: each entry the demo called, its limits as learned with their
    // sources, and its use per minute against them.
    browser.click(".tab[data-tab='limits']").await;
    let limits = browser
        .wait_for(
            "const e = [...document.querySelectorAll('.limit-entry')]; \
             const axes = document.querySelectorAll('.limit-axes tbody tr').length; \
             const use = document.querySelectorAll('svg.util-chart rect.use').length; \
             const lim = document.querySelectorAll('svg.util-chart polyline.limit').length; \
             return e.length && axes && use && lim ? [e.map(x => x.dataset.entry), axes] : null",
            |v| !v.is_null(),
        )
        .await;
    let called: HashSet<String> = store
        .llm_runs(&thinkers_store::LlmRunFilter::new())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.entry)
        .collect();
    for entry in limits[0].as_array().unwrap() {
        assert!(called.contains(entry.as_str().unwrap()), "{limits}");
    }
    assert_eq!(
        limits[0].as_array().unwrap().len(),
        called.len(),
        "{limits}"
    );
    let limits_png = screenshot_path("explorer-limits.png");
    browser.screenshot(&limits_png).await;

    // Live: a workflow another process runs on the same database grows in the open tree.
    // It makes no model call; the catalog only has to be bound.
    let catalog = thinkers::model::Catalog::bundled().with_sim_url("http://127.0.0.1:9");
    let rt = thinkers::Runtime::builder(catalog)
        .database(db.to_str().unwrap())
        .build()
        .await
        .unwrap();
    const STEPS: usize = 6;
    let live = doer("live-steps", |cx| async move {
        for _ in 0..STEPS {
            cx.submit(doer("live-step", |_| async {
                tokio::time::sleep(Duration::from_millis(700)).await;
                Ok(())
            }))
            .await?;
        }
        Ok(())
    });
    let handle = rt.dispatcher().submit(live);
    let live_id = handle.id().to_string();
    let running = tokio::spawn(handle);
    browser.click(".tab[data-tab='workflows']").await;
    // The list shows it once its root is recorded (a reload reads it).
    browser
        .wait_for(
            &format!(
                "if (!document.querySelector(\"tr.wf-row[data-id='{live_id}']\")) \
                 {{ document.getElementById('filter-status').dispatchEvent(new Event('change')); \
                 return false; }} return true"
            ),
            |v| v == &json!(true),
        )
        .await;
    browser
        .click(&format!("tr.wf-row[data-id='{live_id}']"))
        .await;
    let sizes = browser
        .wait_for("return window.treeSizes", |v| {
            v.as_array()
                .and_then(|a| a.last())
                .is_some_and(|n| n.as_u64() == Some(STEPS as u64 + 1))
        })
        .await;
    let sizes: Vec<u64> = sizes
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    // Drawn while it ran with fewer jobs, then again as it grew.
    assert!(sizes.len() >= 3, "{sizes:?}");
    assert!(sizes[0] < STEPS as u64 + 1, "{sizes:?}");
    assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "{sizes:?}");
    running.await.unwrap().unwrap();
    // Once the root has ended the stream ends and the tree says it finished.
    browser
        .wait_for(
            "return document.querySelector('#tree li.job .status').textContent",
            |v| v == &json!("succeeded"),
        )
        .await;
    let _: Value = browser
        .wait_for("return document.getElementById('live') === null", |v| {
            v == &json!(true)
        })
        .await;
    for p in [&list_png, &tree_png, &chart_png, &cost_png, &limits_png] {
        let size = std::fs::metadata(p).unwrap().len();
        assert!(size > 5000, "{} is {size} bytes", p.display());
        println!("screenshot saved to {}", p.display());
    }
    browser.quit().await;
    rt.shutdown().await.unwrap();
}
