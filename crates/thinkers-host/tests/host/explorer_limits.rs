//! The explorer's admission view over real HTTP: a sim model allowing one request a second
//! (60 rpm over a 1 s window, stated in its rate headers) under a catalog entry claiming far
//! more; calls sent at once meet the sim's 429s, and `GET /api/runs/limits` shows each throttle
//! with its wait, the request axis's rate as the headers (or a throttle) set it, and the
//! utilisation of the recorded calls against it.

use std::time::Duration;

use futures::future::join_all;
use serde_json::Value;
use thinkers::conversation::Message;
use thinkers::dispatch::DispatchConfig;
use thinkers::llm::{ChatRequest, LlmCall};
use thinkers::model::{Catalog, Grade, OutputSize, SIM_DEFAULT_KEY};
use thinkers_sim::{Sim, SimConfig};
use thinkers_store::RuntimeBuilderExt as _;

use crate::support::host_with;

/// What the runtime believes: 6,000 requests a minute.
const CATALOG: &str = r#"
[providers.sim]
dialect = "openai"
base_url = "{sim}/v1"
api_key_env = "THINKERS_SIM_KEY"

[[entries]]
id = "sim-limited"
provider = "sim"
model = "m-limited"
grade = "small"
context_window = 64000
output_ceiling = 4000
rpm = 6000
price_in = 1.0
price_out = 4.0
currency = "USD"
"#;

/// What the sim enforces: 60 a minute, one in any second, each answer 200 ms late so the
/// calls sent together are in flight before the first answer's headers come back.
const SIM: &str = r#"
[[entries]]
model = "m-limited"
rpm = 60

[entries.sim]
limit_window_ms = 1000
latency_ms = [200, 200]
"#;

fn call(i: usize) -> LlmCall {
    let req = ChatRequest::new(
        "Be brief.",
        vec![Message::user_text(format!("Say something ({i})."))],
    );
    LlmCall::new(Grade::Small, OutputSize::Compact, req)
        .pinned("sim-limited".to_owned())
        .class("limited_call")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttles_and_learned_limits_are_shown_per_entry() {
    let sim = Sim::start(SimConfig::from_catalog_toml(SIM).unwrap().calm())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::from_toml_str(CATALOG, "limited.toml")
        .unwrap()
        .with_sim_url(&sim.base_url());
    let rt = thinkers::Runtime::builder(catalog)
        .database(dir.path().join("x.db").to_str().unwrap())
        .config(DispatchConfig {
            throttle_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await
        .unwrap();
    let handles: Vec<_> = (0..4).map(|i| rt.dispatcher().submit(call(i))).collect();
    for out in join_all(handles).await {
        out.unwrap();
    }
    let stats = sim.stats().model("m-limited");
    assert!(stats.rate_limited > 0, "the sim throttled: {stats:?}");
    rt.flush().await.unwrap();
    let h = host_with(rt, false).await;

    let resp = reqwest::get(format!("{}/api/runs/limits", h.url))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let view: Value = resp.json().await.unwrap();
    assert!(!view.to_string().contains(SIM_DEFAULT_KEY), "{view}");
    let entries = view["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{view}");
    let e = &entries[0];
    assert_eq!(e["entry"], "sim-limited", "{view}");
    assert_eq!(e["budget"], "model:sim-limited", "{view}");

    // Each 429: its status, the wait the sim asked (retry-after-ms) and the wait applied.
    let throttles = e["throttles"].as_array().unwrap();
    assert!(!throttles.is_empty(), "{view}");
    assert_eq!(
        u64::try_from(throttles.len()).unwrap(),
        stats.rate_limited,
        "{view}"
    );
    for t in throttles {
        assert_eq!(t["status"], 429, "{t}");
        let asked = t["asked_ms"].as_u64().unwrap();
        assert!(asked > 0 && asked <= 1_000, "{t}");
        assert_eq!(t["waited_ms"].as_u64(), Some(asked), "{t}");
        let detail = t["detail"].as_str().unwrap();
        assert!(detail.contains("HTTP 429"), "{t}");
        assert!(
            !detail.contains('\n') && detail.chars().count() <= 300,
            "{t}"
        );
    }
    assert_eq!(
        e["retries"]["throttled_attempts"].as_u64(),
        Some(u64::try_from(throttles.len()).unwrap())
    );
    let waited: u64 = throttles
        .iter()
        .map(|t| t["waited_ms"].as_u64().unwrap())
        .sum();
    assert_eq!(e["retries"]["throttle_wait_ms"].as_u64(), Some(waited));
    assert_eq!(e["retries"]["paid_retries"]["calls"], 0, "{view}");

    // The request axis: first the catalog's 6,000, then the 60 the headers state, or about it
    // learned from a throttle (whichever of the first answer and the first 429 came back first
    // set it).
    let rates = e["rates"].as_array().unwrap();
    assert_eq!(rates[0]["axis"], "rpm", "{view}");
    assert_eq!(rates[0]["source"], "catalog", "{view}");
    assert_eq!(rates[0]["per_minute"], 6000.0, "{view}");
    let learned = |r: &Value| r["source"] == "header" || r["source"] == "throttle";
    assert!(rates[1..].iter().any(learned), "{view}");
    let rpm = e["axes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["axis"] == "rpm")
        .unwrap();
    assert!(learned(rpm), "{rpm}");
    let per_minute = rpm["per_minute"].as_f64().unwrap();
    assert!(per_minute > 0.0 && per_minute <= 61.0, "{rpm}");
    assert_eq!(rpm["catalog_per_minute"], 6000.0, "{rpm}");

    // Utilisation: the four calls and the throttles, against the limit in force.
    let buckets = e["utilisation"].as_array().unwrap();
    assert!(!buckets.is_empty(), "{view}");
    let calls: u64 = buckets.iter().map(|b| b["calls"].as_u64().unwrap()).sum();
    assert_eq!(calls, 4, "{view}");
    let last = buckets.last().unwrap();
    assert!(last["requests_per_minute"].as_f64().unwrap() > 0.0 || buckets.len() > 1);
    assert!(
        last["limits"]["rpm"].as_f64().unwrap() <= 60.0 + 1e-6,
        "{last}"
    );

    // A window after everything shows the standing limit and nothing else.
    let later: Value = reqwest::get(format!(
        "{}/api/runs/limits?since_ms={}",
        h.url,
        thinkers::record::now_ms() + 1
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let e = &later["entries"][0];
    assert_eq!(e["throttle_count"], 0, "{later}");
    assert_eq!(e["utilisation"], serde_json::json!([]), "{later}");
    assert_eq!(e["axes"][0]["axis"], "rpm", "{later}");
    h.running.shutdown().await.unwrap();
}
