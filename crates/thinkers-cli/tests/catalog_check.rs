//! `thinkers catalog --check` fails when an open entry is not callable, naming it, and succeeds
//! when every open entry answers. Against the simulated provider the command starts itself.
// A failing test reports by panicking; test binaries need no docs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::process::Command;

use thinkers::model::catalog::BUNDLED_TOML;

fn check(catalog: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(&path, catalog).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_thinkers"))
        .args(["catalog", "--check", "--catalog"])
        .arg(&path)
        .env_remove("THINKERS_CATALOG")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The row of the check table for `id`, as its cells.
fn row<'a>(stdout: &'a str, id: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .rev()
        .map(|l| l.split(['|', '│']).map(str::trim).collect::<Vec<_>>())
        .find(|cells| cells.len() > 2 && cells[1] == id)
        .unwrap_or_else(|| panic!("no check row for {id} in:\n{stdout}"))
}

#[test]
fn an_entry_the_provider_does_not_serve_fails_the_check() {
    // The sim serves the bundled models by name; this one it answers with a 404.
    let at = BUNDLED_TOML.find("model = \"sim-xl-a\"").unwrap();
    let catalog = format!(
        "{}model = \"sim-no-such-model\"{}",
        &BUNDLED_TOML[..at],
        &BUNDLED_TOML[at + "model = \"sim-xl-a\"".len()..]
    );
    let (ok, stdout, stderr) = check(&catalog);
    assert!(!ok, "the check passed:\n{stdout}\n{stderr}");
    assert_eq!(row(&stdout, "sim-xl-a")[2], "NO", "{stdout}");
    assert_eq!(row(&stdout, "sim-xl-b")[2], "yes", "{stdout}");
    assert!(
        stderr.contains("1 of 11 open entries are not callable: sim-xl-a"),
        "{stderr}"
    );
}

#[test]
fn every_open_entry_answering_passes_the_check() {
    let (ok, stdout, stderr) = check(BUNDLED_TOML);
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(row(&stdout, "sim-small-a")[2], "yes", "{stdout}");
}

#[test]
fn a_bedrock_converse_entry_over_the_sim_passes_the_check() {
    // A Bedrock provider beside the bundled ones: signed requests to the sim's Converse
    // endpoints, for a model the sim serves.
    let catalog = format!(
        "{BUNDLED_TOML}\n[providers.sim-bedrock]\ndialect = \"bedrock-converse\"\n\
         base_url = \"{{sim}}\"\nregion = \"us-east-1\"\naccess_key_env = \"THINKERS_SIM_KEY\"\n\
         secret_key_env = \"THINKERS_SIM_KEY\"\n\n[[entries]]\nid = \"sim-bedrock-small\"\n\
         provider = \"sim-bedrock\"\nmodel = \"sim-small-b\"\ngrade = \"small\"\n\
         context_window = 200000\noutput_ceiling = 8192\nprice_in = 1.0\nprice_out = 5.0\n\
         currency = \"USD\"\n"
    );
    let (ok, stdout, stderr) = check(&catalog);
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(row(&stdout, "sim-bedrock-small")[2], "yes", "{stdout}");
}
