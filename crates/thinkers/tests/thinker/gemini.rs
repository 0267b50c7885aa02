//! A single-objective thinker with tools over real HTTP against thinkers-sim in the Gemini
//! dialect: tool rounds as `functionCall` / `functionResponse` parts, thinking on, the thought
//! signatures the sim issued sent back unchanged on every later turn (the sim refuses a turn
//! whose calls lost theirs), and the typed answer through `responseJsonSchema`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use thinkers::Runtime;
use thinkers::dispatch::DispatchConfig;
use thinkers::llm::ModelClient;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::model::{Catalog, Depth, Grade, ModelDependent, OutputSize};
use thinkers::record::{JobStatus, MemoryRecorder};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers_sim::{Sim, SimConfig};

use crate::e2e::Brief;
use crate::support::Lookup;

const ENTRY: &str = "sim-gemini-medium";

/// The bundled catalog with one more thinking entry on its Gemini provider (`sim-gemini`),
/// served by the sim.
fn catalog_toml() -> String {
    format!(
        r#"{BUNDLED_TOML}
[[entries]]
id = "{ENTRY}"
provider = "sim-gemini"
model = "{ENTRY}"
grade = "medium"
context_window = 1000000
output_ceiling = 32000
tpm = 2000000
rpm = 10000
concurrency = 64
price_in = 0.30
price_out = 2.50
currency = "USD"
thinking = true
native_tools = true
open = true
reasoning_tokens = {{ immediate = 0, quick = 1024, standard = 4096, thorough = 16000 }}
compliance = {{ region = "eu", retention = "30d" }}

[entries.sim]
latency_ms = [0, 0]
tool_rounds = 2
parallel_tool_calls = 2
quality = 1.0
"#
    )
}

#[tokio::test]
async fn a_thinker_with_a_tool_completes_over_gemini_carrying_thought_signatures() {
    let text = catalog_toml();
    let config = SimConfig {
        log_bodies: true,
        ..SimConfig::from_catalog_toml(&text).unwrap().calm()
    };
    let sim = Sim::start(config).await.unwrap();
    let catalog = Catalog::from_toml_str(&text, "gemini-test.toml")
        .unwrap()
        .with_sim_url(&sim.base_url());
    let rec = MemoryRecorder::new();
    let rt = Runtime::builder(catalog)
        .recorder(Arc::new(rec.clone()))
        .client(
            ModelClient::builder()
                .request_timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
        )
        .config(DispatchConfig {
            transient_backoff: Duration::from_millis(10),
            throttle_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await
        .unwrap();

    let mut t = Thinker::<Brief>::declared(
        ThinkerDeclaration::new(Grade::Medium, OutputSize::Compact),
        "Answer the question from the glossary.",
    )
    .tool(Lookup::default())
    .class("gemini_thinker");
    t.pin_model(ENTRY.to_owned());
    // Quick: below the delegation threshold, so the palette is exactly the tool; the entry
    // reasons with 1,024 tokens at this depth.
    let answer = rt
        .run(t.ask(ThinkerInput::query("What is a seat?").with_depth(Depth::Quick)))
        .await
        .unwrap();
    assert!(!answer.summary.is_empty());
    assert!(
        !answer.reasoning.is_empty(),
        "filled from the thought summary"
    );

    let jobs = rec.jobs();
    let root = jobs
        .iter()
        .find(|j| j.start.class == "gemini_thinker")
        .unwrap();
    assert_eq!(root.status(), JobStatus::Succeeded);
    let lookups = jobs.iter().filter(|j| j.start.class == "lookup").count();
    assert!(lookups >= 2, "two tool rounds ran the tool: {lookups}");

    let requests = sim.requests();
    assert_eq!(
        requests.len(),
        3,
        "two tool rounds, then the answer; none refused"
    );
    assert_eq!(sim.stats().model(ENTRY).requests, 3);
    for r in &requests {
        assert_eq!(r.endpoint, "/v1beta/models/{model}:generateContent");
        assert!(
            r.headers.iter().any(|(k, _)| k == "x-goog-api-key"),
            "{:?}",
            r.headers
        );
        assert!(r.body.get("model").is_none());
        assert_eq!(
            r.body["generationConfig"]["thinkingConfig"]["thinkingBudget"],
            1024
        );
    }
    // Every model turn goes back on every later request exactly as it went the first time, its
    // signatures included, byte for byte.
    let model_turns = |body: &Value| -> Vec<Value> {
        body["contents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["role"] == "model")
            .cloned()
            .collect()
    };
    let second = model_turns(&requests[1].body);
    let third = model_turns(&requests[2].body);
    assert_eq!(second.len(), 1);
    assert_eq!(third.len(), 2);
    assert_eq!(third[0], second[0]);
    let signatures: Vec<&str> = third
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap())
        .filter_map(|p| p["thoughtSignature"].as_str())
        .collect();
    assert_eq!(signatures.len(), 2, "one per tool turn: {third:?}");
    for sig in &signatures {
        let literal = serde_json::to_string(sig).unwrap();
        assert!(requests[2].raw_body.contains(&literal));
    }
    assert!(
        requests[1]
            .raw_body
            .contains(&serde_json::to_string(signatures[0]).unwrap())
    );
    // Each signature sits on the first call of its turn, after the thought summary.
    for turn in &third {
        let parts = turn["parts"].as_array().unwrap();
        assert_eq!(parts[0]["thought"], true, "{turn}");
        let first_call = parts
            .iter()
            .find(|p| p.get("functionCall").is_some())
            .unwrap();
        assert!(first_call["thoughtSignature"].is_string(), "{turn}");
    }
    // The answer was asked for through the JSON schema.
    let last = &requests[2].body["generationConfig"];
    assert_eq!(last["responseMimeType"], "application/json");
    assert!(last["responseJsonSchema"].is_object());
}
