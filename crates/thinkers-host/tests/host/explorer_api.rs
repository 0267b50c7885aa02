//! The explorer's approvals over HTTP: a durable run waiting on a call is listed (in the
//! approvals and in its workflow), denied through `POST /api/runs/approvals/{id}`, and the next
//! run goes on with the denial; a bad decision names its field. Spend counts cache reads and
//! writes apart.

use serde_json::{Value, json};
use thinkers::durable::ApprovalPolicy;
use thinkers::job::JobId;
use thinkers::model::{Catalog, Grade, ModelDependent as _, OutputSize};
use thinkers::record::{JobEnd, JobStart, JobStatus, LlmRun, Recorder as _, now_ms};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput, ThinkerJob};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall, SimConfig};
use thinkers_store::SqliteRecorder;
use thinkers_store::{RuntimeBuilderExt as _, RuntimeExt as _};

use crate::support::{Lookup, host_with};

fn ask() -> ThinkerJob<String> {
    let thinker = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You answer glossary questions.",
    )
    .tool(Lookup)
    .class("glossary");
    let mut job = thinker.ask(ThinkerInput::query("Look up the word seat."));
    job.pin_model("sim-small-a".to_owned());
    job
}

#[tokio::test]
async fn a_waiting_call_is_listed_and_denied_in_the_explorer() {
    let script = Script::new(vec![
        ScriptRule::when_contains("not today", ScriptAnswer::Text("DENIED".into())),
        ScriptRule::when_contains(
            "Look up the word seat",
            ScriptAnswer::ToolCalls(vec![ScriptToolCall {
                name: "lookup".into(),
                arguments: json!({"term": "seat"}),
            }]),
        ),
    ]);
    let config = SimConfig::from_catalog_toml(thinkers::model::catalog::BUNDLED_TOML)
        .unwrap()
        .calm();
    let sim = thinkers_sim::Sim::start(SimConfig {
        script: Some(script),
        ..config
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rt = thinkers::Runtime::builder(Catalog::bundled().with_sim_url(&sim.base_url()))
        .database(dir.path().join("x.db").to_str().unwrap())
        .approval_policy(ApprovalPolicy::new().tool("lookup"))
        .build()
        .await
        .unwrap();
    let first = rt.run_durable("glossary-1", ask()).await;
    let Err(thinkers::Error::AwaitingApproval { pending }) = first else {
        panic!("the lookup should wait: {first:?}");
    };
    rt.flush().await.unwrap();
    let h = host_with(rt, false).await;
    let http = reqwest::Client::new();

    let listed: Value = http
        .get(format!("{}/api/runs/approvals", h.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let approvals = listed["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1, "{listed}");
    assert_eq!(approvals[0]["id"], json!(pending[0].id));
    assert_eq!(approvals[0]["status"], "pending");
    assert_eq!(approvals[0]["tool"], "lookup");
    // Its workflow shows it too.
    let wf = approvals[0]["workflow"].as_str().unwrap();
    let snap: Value = http
        .get(format!("{}/api/runs/workflows/{wf}", h.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(snap["approvals"][0]["id"], json!(pending[0].id), "{snap}");
    assert!(!snap["calls"].as_array().unwrap().is_empty(), "{snap}");

    // The list: this workflow, filtered by status and class; a bad status names its field.
    let list = |q: &str| {
        let http = http.clone();
        let url = format!("{}/api/runs/workflows?{q}", h.url);
        async move { http.get(url).send().await.unwrap() }
    };
    let all: Value = list("").await.json().await.unwrap();
    assert_eq!(all["total"], 1, "{all}");
    assert_eq!(all["workflows"][0]["workflow"], wf);
    assert_eq!(all["workflows"][0]["usage"]["calls"], 1, "{all}");
    assert_eq!(
        all["classes"],
        json!([all["workflows"][0]["root_class"]]),
        "{all}"
    );
    let class = all["workflows"][0]["root_class"]
        .as_str()
        .unwrap()
        .to_owned();
    let same: Value = list(&format!("class={class}&status=failed"))
        .await
        .json()
        .await
        .unwrap();
    let status = all["workflows"][0]["status"].as_str().unwrap();
    assert_eq!(same["total"], u64::from(status == "failed"), "{same}");
    let none: Value = list("class=nothing-like-it").await.json().await.unwrap();
    assert_eq!(none["total"], 0);
    assert_eq!(none["workflows"], json!([]));
    let unknown = http
        .get(format!(
            "{}/api/runs/workflows/{}",
            h.url,
            thinkers::job::JobId::new()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    assert_eq!(unknown.json::<Value>().await.unwrap()["field"], "workflow");
    let bad = list("status=sleeping").await;
    assert_eq!(bad.status(), 422);
    assert_eq!(bad.json::<Value>().await.unwrap()["field"], "status");

    let url = format!("{}/api/runs/approvals/{}", h.url, pending[0].id);
    let bad = http
        .post(&url)
        .json(&json!({"decision": "maybe"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    assert_eq!(bad.json::<Value>().await.unwrap()["field"], "decision");
    let denied: Value = http
        .post(&url)
        .json(&json!({"decision": "deny", "reason": "not today"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(denied["status"], "denied", "{denied}");
    let answer = h.rt.run_durable("glossary-1", ask()).await.unwrap();
    assert_eq!(answer, "DENIED");
    let unknown = http
        .post(format!("{}/api/runs/approvals/nope", h.url))
        .json(&json!({"decision": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 422);
    h.running.shutdown().await.unwrap();
}

/// One recorded model call of `root` (1,000 input tokens: 600 read from the prompt cache, 150
/// written to it).
fn cached_call(root: JobId, entry: &str, cost: Option<f64>, currency: &str) -> LlmRun {
    LlmRun {
        job: root,
        workflow: root,
        class: "cached".to_owned(),
        entry: entry.to_owned(),
        model: entry.to_owned(),
        input_tokens: 1_000,
        output_tokens: 80,
        cached_tokens: 600,
        cache_write_tokens: 150,
        latency_ms: 200,
        stop_reason: "end_turn".to_owned(),
        cost,
        currency: currency.to_owned(),
        at_ms: now_ms(),
        ..LlmRun::default()
    }
}

/// A recorder on `rt`'s store, and a finished root job of `class` recorded in it (its model
/// calls are recorded by the caller as they would be: no model is called).
fn recorded_root(rt: &thinkers::Runtime, class: &str) -> (SqliteRecorder, JobId) {
    let recorder = SqliteRecorder::new(rt.store().unwrap()).unwrap();
    let (root, at) = (JobId::new(), now_ms());
    recorder.job_started(JobStart {
        id: root,
        parent: None,
        workflow: root,
        class: class.to_owned(),
        ordinal: None,
        started_at_ms: at,
    });
    recorder.job_finished(JobEnd {
        id: root,
        status: JobStatus::Succeeded,
        error_kind: None,
        error: None,
        ended_at_ms: at + 1_000,
        attempts: 1,
    });
    (recorder, root)
}

/// `GET url`, read as JSON.
async fn get_json(url: String) -> Value {
    reqwest::get(url)
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_explorer_counts_cache_reads_and_writes_apart() {
    let dir = tempfile::tempdir().unwrap();
    // No model is called: the rows are recorded as they would be.
    let rt = thinkers::Runtime::builder(Catalog::bundled().with_sim_url("http://127.0.0.1:9"))
        .database(dir.path().join("x.db").to_str().unwrap())
        .build()
        .await
        .unwrap();
    let (recorder, root) = recorded_root(&rt, "cached");
    for _ in 0..2 {
        recorder.llm_run(cached_call(root, "priced", Some(0.01), "USD"));
    }
    recorder.llm_run(cached_call(root, "unpriced", None, ""));
    recorder.flush().await.unwrap();
    let h = host_with(rt, false).await;
    let get = |path: &str| get_json(format!("{}{path}", h.url));

    // The workflow list: all input, and the cache reads and writes of it, the unpriced call's
    // included; its cost stays unknown beside the known amount.
    let list = get("/api/runs/workflows").await;
    let usage = &list["workflows"][0]["usage"];
    assert_eq!(usage["input_tokens"], 3_000, "{list}");
    assert_eq!(usage["cache_read_tokens"], 1_800, "{list}");
    assert_eq!(usage["cache_write_tokens"], 450, "{list}");
    assert_eq!(usage["unpriced_calls"], 1, "{list}");

    // The cost report's rows carry the same names.
    let cost = get("/api/runs/cost").await;
    let row = |entry: &str| {
        cost["by_entry"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["group"] == entry)
            .cloned()
            .unwrap()
    };
    let priced = row("priced");
    assert_eq!(
        (
            &priced["cache_read_tokens"],
            &priced["cache_write_tokens"],
            &priced["input_tokens"]
        ),
        (&json!(1_200), &json!(300), &json!(2_000)),
        "{cost}"
    );
    let unpriced = row("unpriced");
    assert!(unpriced["cost"].is_null(), "{cost}");
    assert_eq!(unpriced["cache_write_tokens"], 150, "{cost}");
    assert_eq!(
        cost["by_class"]["totals"][0]["cache_read_tokens"], 600,
        "{cost}"
    );
}

#[tokio::test]
async fn the_explorer_shows_where_each_spending_cap_stands() {
    use thinkers::dispatch::SpendCap;
    let dir = tempfile::tempdir().unwrap();
    let rt = thinkers::Runtime::builder(Catalog::bundled().with_sim_url("http://127.0.0.1:9"))
        .database(dir.path().join("x.db").to_str().unwrap())
        .spend_cap(SpendCap::per_run(0.05, "USD"))
        .spend_cap(SpendCap::per_day(1.0, "USD"))
        .build()
        .await
        .unwrap();
    let (recorder, root) = recorded_root(&rt, "capped");
    for _ in 0..2 {
        // Two calls, each its own job's only call: nothing was paid again.
        let mut call = cached_call(root, "priced", Some(0.01), "USD");
        call.job = JobId::new();
        recorder.llm_run(call);
    }
    recorder.flush().await.unwrap();
    let h = host_with(rt, false).await;
    let get = |path: String| get_json(format!("{}{path}", h.url));
    let cost = get("/api/runs/cost".into()).await;
    let caps = cost["caps"].as_array().unwrap();
    assert_eq!(caps.len(), 2, "{cost}");
    assert_eq!(caps[0]["cap"], "run", "{cost}");
    assert!(
        (caps[0]["left"].as_f64().unwrap() - 0.03).abs() < 1e-9,
        "{cost}"
    );
    assert_eq!(caps[0]["costliest_run"], json!(root.to_string()));
    assert!(
        caps[1]["cap"].as_str().unwrap().starts_with("day "),
        "{cost}"
    );
    assert!(
        (caps[1]["spent"].as_f64().unwrap() - 0.02).abs() < 1e-9,
        "{cost}"
    );
    assert_eq!(cost["by_entry"]["retries"], json!([]), "{cost}");
    // One run's view: its run cap only.
    let run = get(format!("/api/runs/workflows/{root}")).await;
    let caps = run["caps"].as_array().unwrap();
    assert_eq!(caps.len(), 1, "{run}");
    assert!(
        (caps[0]["left"].as_f64().unwrap() - 0.03).abs() < 1e-9,
        "{run}"
    );
    h.running.shutdown().await.unwrap();
}
