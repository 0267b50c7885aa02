//! The explorer's approvals over HTTP: a durable run waiting on a call is listed (in the
//! approvals and in its workflow), denied through `POST /api/runs/approvals/{id}`, and the next
//! run goes on with the denial; a bad decision names its field.

use serde_json::{Value, json};
use thinkers::durable::ApprovalPolicy;
use thinkers::model::{Catalog, Grade, ModelDependent as _, OutputSize};
use thinkers::thinker::{
    LoopThinkerBuilder, SingleObjectiveThinker, ThinkerBuilder, ThinkerDeclaration, ThinkerInput,
    ThinkerJob,
};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall, SimConfig};

use crate::support::{Lookup, host_with};

fn ask() -> ThinkerJob<String> {
    let thinker = SingleObjectiveThinker::<String>::new(
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
