//! The official AWS SDK for Python (boto3's `bedrock-runtime` client) talks to thinkers-sim's
//! Converse endpoints: signed requests, tools and tool results, structured output, reasoning
//! signatures, `converse-stream`'s event-stream frames and exceptions
//! (`tests/python/bedrock_check.py`).
//!
//! Skipped loudly without `THINKERS_TEST_PYTHON` (see `support/python.rs`); CI always sets it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[allow(unreachable_pub)]
#[path = "support/python.rs"]
mod python;

use thinkers_sim::{Sim, SimConfig};

#[tokio::test]
async fn boto3_parses_the_sims_converse_answers() {
    let Some(python) = python::interpreter() else {
        return;
    };
    let catalog = include_str!("../../thinkers/catalogs/examples/bedrock.toml");
    let sim = Sim::start(SimConfig::from_catalog_toml(catalog).unwrap().calm())
        .await
        .unwrap();
    python::check(&python, "bedrock_check.py", &sim, 11).await;
}
