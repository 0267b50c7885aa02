//! Running an official provider SDK's check script (`tests/python/*.py`) against a sim.
//!
//! The interpreter comes from `THINKERS_TEST_PYTHON`, which `scripts/test.sh` sets to a venv with
//! the SDKs installed. Without it a test says so loudly and checks nothing; CI always sets it.

use thinkers_sim::Sim;

/// The interpreter, or `None` after saying loudly that the SDK checks are skipped.
pub fn interpreter() -> Option<String> {
    let python = std::env::var("THINKERS_TEST_PYTHON").ok();
    if python.is_none() {
        eprintln!(
            "SKIPPED: THINKERS_TEST_PYTHON is not set; run ./scripts/test.sh to check the SDKs"
        );
    }
    python
}

/// Run `tests/python/{script}` with `python` against `sim`; it must exit 0 and print
/// `{passed} passed, 0 failed`. Returns what it printed.
pub async fn check(python: &str, script: &str, sim: &Sim, passed: u32) -> String {
    let path = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = tokio::process::Command::new(python)
        .arg(&path)
        .arg(sim.base_url())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("{passed} passed, 0 failed")),
        "{stdout}"
    );
    stdout
}
