//! The official OpenAI and Anthropic Python SDKs talk to thinkers-sim and parse its answers,
//! tool calls, streams and errors (`tests/python/sdk_check.py`).
//!
//! The interpreter comes from `THINKERS_TEST_PYTHON`, which `scripts/test.sh` sets to a venv with
//! the SDKs installed. Without it the test says so loudly and checks nothing; CI always sets it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use thinkers_sim::{Sim, SimConfig};

#[tokio::test]
async fn official_sdks_parse_the_sims_answers() {
    let Ok(python) = std::env::var("THINKERS_TEST_PYTHON") else {
        eprintln!(
            "SKIPPED: THINKERS_TEST_PYTHON is not set; run ./scripts/test.sh to check the SDKs"
        );
        return;
    };
    let catalog = include_str!("../../thinkers/catalogs/bundled.toml");
    let sim = Sim::start(SimConfig::from_catalog_toml(catalog).unwrap().calm())
        .await
        .unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/sdk_check.py");
    let out = tokio::process::Command::new(python)
        .arg(script)
        .arg(sim.base_url())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "SDK check failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("11 passed, 0 failed"), "{stdout}");
}

/// The official `openai` SDK's Responses and Azure OpenAI clients against the sim
/// (`tests/python/sdk_check_responses.py`): tools and `function_call_output`, reasoning items
/// sent back with their encrypted content, structured output through `text.format`, typed
/// streams, a 429 with its retry delay, and `AzureOpenAI` on deployment and Responses paths.
#[tokio::test]
async fn the_openai_sdk_drives_responses_and_azure() {
    use thinkers_sim::SimModel;

    let Ok(python) = std::env::var("THINKERS_TEST_PYTHON") else {
        eprintln!(
            "SKIPPED: THINKERS_TEST_PYTHON is not set; run ./scripts/test.sh to check the SDKs"
        );
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
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/sdk_check_responses.py"
    );
    let out = tokio::process::Command::new(python)
        .arg(script)
        .arg(sim.base_url())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "SDK check failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("8 passed, 0 failed"), "{stdout}");
    // What reached the wire: Azure's key header on its paths, the 429 the limit served.
    let requests = sim.requests();
    assert!(
        requests
            .iter()
            .any(|r| r.endpoint == "/openai/deployments/{deployment}/chat/completions")
    );
    assert!(sim.stats().model("sim-resp-limited").rate_limited >= 1);
}
