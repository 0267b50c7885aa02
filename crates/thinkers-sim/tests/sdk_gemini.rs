//! Google's official Gen AI Python SDK (`google-genai`) talks to thinkers-sim's Gemini dialect and
//! parses its answers, function calls, thought signatures, streams and 429s
//! (`tests/python/gemini_check.py`).
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
        .build()
        .unwrap()
        .calm();
    let sim = Sim::start(config).await.unwrap();
    python::check(&python, "gemini_check.py", &sim, 8).await;
}
