//! Google's official Gen AI Python SDK (`google-genai`) talks to thinkers-sim's Gemini dialect and
//! parses its answers, function calls, thought signatures, streams and 429s
//! (`tests/python/gemini_check.py`).
//!
//! The interpreter comes from `THINKERS_TEST_PYTHON`, which `scripts/test.sh` sets to a venv with
//! the SDKs installed. Without it the test says so loudly and checks nothing; CI always sets it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use thinkers_sim::{Sim, SimConfig, SimModel};

#[tokio::test]
async fn the_official_gemini_sdk_parses_the_sims_answers() {
    let Ok(python) = std::env::var("THINKERS_TEST_PYTHON") else {
        eprintln!(
            "SKIPPED: THINKERS_TEST_PYTHON is not set; run ./scripts/test.sh to check the SDKs"
        );
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
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/gemini_check.py");
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
        "Gemini SDK check failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("7 passed, 0 failed"), "{stdout}");
}
