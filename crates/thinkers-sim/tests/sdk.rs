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
