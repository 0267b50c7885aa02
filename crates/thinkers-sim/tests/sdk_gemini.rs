//! Google's official Gen AI Python SDK (`google-genai`) talks to thinkers-sim's Gemini dialect and
//! parses its answers, function calls, thought signatures, streams and 429s
//! (`tests/python/gemini_check.py`), under `/v1beta` (named) and `/v1` (the SDK's default
//! version).
//!
//! Skipped loudly without `THINKERS_TEST_PYTHON` (see `support/python.rs`); CI always sets it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[allow(unreachable_pub)]
#[path = "support/python.rs"]
mod python;

use thinkers_sim::{Sim, SimConfig, SimModel};

#[tokio::test]
async fn the_official_gemini_sdk_parses_the_sims_answers() {
    let Some(python) = python::interpreter() else {
        return;
    };
    let config = SimConfig::builder()
        .model(SimModel::new("gemini-plain"))
        .model(SimModel::new("gemini-sim").thinking(true))
        .model(SimModel::new("gemini-limited").rpm(1))
        .seed(7)
        .log_bodies(true)
        .build()
        .unwrap()
        .calm();
    let sim = Sim::start(config).await.unwrap();
    python::check(&python, "gemini_check.py", &sim, 9).await;
    // The SDK reached both versions' paths, streams included.
    let endpoints: Vec<String> = sim.requests().into_iter().map(|r| r.endpoint).collect();
    for endpoint in [
        "/v1beta/models/{model}:generateContent",
        "/v1beta/models/{model}:streamGenerateContent",
        "/v1/models/{model}:generateContent",
        "/v1/models/{model}:streamGenerateContent",
    ] {
        assert!(
            endpoints.iter().any(|e| e == endpoint),
            "{endpoint} not called: {endpoints:?}"
        );
    }
}
