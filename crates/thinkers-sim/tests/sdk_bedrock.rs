//! The official AWS SDK for Python (boto3's `bedrock-runtime` client) talks to thinkers-sim's
//! Converse endpoints: signed requests, tools and tool results, structured output, reasoning
//! signatures, `converse-stream`'s event-stream frames and exceptions
//! (`tests/python/bedrock_check.py`).
//!
//! The interpreter comes from `THINKERS_TEST_PYTHON`, which `scripts/test.sh` sets to a venv with
//! the SDKs installed. Without it the test says so loudly and checks nothing; CI always sets it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use thinkers_sim::{Sim, SimConfig};

#[tokio::test]
async fn boto3_parses_the_sims_converse_answers() {
    let Ok(python) = std::env::var("THINKERS_TEST_PYTHON") else {
        eprintln!(
            "SKIPPED: THINKERS_TEST_PYTHON is not set; run ./scripts/test.sh to check the SDKs"
        );
        return;
    };
    let catalog = include_str!("../../thinkers/catalogs/examples/bedrock.toml");
    let sim = Sim::start(SimConfig::from_catalog_toml(catalog).unwrap().calm())
        .await
        .unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/bedrock_check.py");
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
        "boto3 check failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("10 passed, 0 failed"), "{stdout}");
}
