//! The official OpenAI and Anthropic Python SDKs talk to thinkers-sim and parse its answers,
//! tool calls, streams and errors (`tests/python/sdk_check.py`).
//!
//! Skipped loudly without `THINKERS_TEST_PYTHON` (see `support/python.rs`); CI always sets it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[allow(unreachable_pub)]
#[path = "support/python.rs"]
mod python;

use thinkers_sim::{Sim, SimConfig};

#[tokio::test]
async fn official_sdks_parse_the_sims_answers() {
    let Some(python) = python::interpreter() else {
        return;
    };
    let catalog = include_str!("../../thinkers/catalogs/bundled.toml");
    let sim = Sim::start(SimConfig::from_catalog_toml(catalog).unwrap().calm())
        .await
        .unwrap();
    python::check(&python, "sdk_check.py", &sim, 13).await;
}

/// The official `openai` SDK's Responses and Azure OpenAI clients against the sim
/// (`tests/python/sdk_check_responses.py`): tools and `function_call_output`, reasoning items
/// sent back with their encrypted content, structured output through `text.format`, typed
/// streams, a 429 with its retry delay, and `AzureOpenAI` on deployment and Responses paths.
#[tokio::test]
async fn the_openai_sdk_drives_responses_and_azure() {
    use thinkers_sim::SimModel;

    let Some(python) = python::interpreter() else {
        return;
    };
    let config = SimConfig::builder()
        .model(SimModel::new("sim-resp").thinking(true))
        .model(SimModel::new("sim-resp-plain"))
        .model(SimModel::new("sim-resp-limited").rpm(1))
        .log_bodies(true)
        .seed(5)
        .build()
        .unwrap();
    let sim = Sim::start(config).await.unwrap();
    python::check(&python, "sdk_check_responses.py", &sim, 9).await;
    // What reached the wire: Azure's key header on its paths, the 429 the limit served.
    let requests = sim.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.endpoint == "/openai/deployments/{deployment}/chat/completions")
    );
    assert!(sim.stats().model("sim-resp-limited").rate_limited >= 1);
}
