//! `thinkers catalog --check` fails when an open entry is not callable, naming it, and succeeds
//! when every open entry answers. Against the simulated provider the command starts itself.

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
    // The sim serves the catalog's models, at its own paths: a provider whose base URL points
    // elsewhere on it is answered 404.
    let catalog = format!(
        "{BUNDLED_TOML}\n[providers.sim-nowhere]\ndialect = \"openai\"\n\
         base_url = \"{{sim}}/nowhere/v1\"\napi_key_env = \"THINKERS_SIM_KEY\"\n\n\
         [[entries]]\nid = \"sim-lost\"\nprovider = \"sim-nowhere\"\nmodel = \"sim-small-a\"\n\
         grade = \"small\"\ncontext_window = 128000\noutput_ceiling = 8192\nprice_in = 1.0\n\
         price_out = 5.0\ncurrency = \"USD\"\n"
    );
    let (ok, stdout, stderr) = check(&catalog);
    assert!(!ok, "the check passed:\n{stdout}\n{stderr}");
    assert_eq!(row(&stdout, "sim-lost")[2], "NO", "{stdout}");
    assert_eq!(row(&stdout, "sim-xl-b")[2], "yes", "{stdout}");
    assert!(
        stderr.contains("1 of 15 open entries are not callable: sim-lost"),
        "{stderr}"
    );
}

/// A catalog of the sim's own making: models the bundled catalog does not name are served too
/// (the in-process sim serves the catalog it was given), in every family the runtime speaks.
#[test]
fn a_catalog_mixing_every_family_over_the_sim_passes_the_check() {
    let catalog = include_str!("fixtures/mixed-families.toml");
    let (ok, stdout, stderr) = check(catalog);
    assert!(ok, "{stdout}\n{stderr}");
    for id in [
        "mix-openai",
        "mix-anthropic",
        "mix-responses",
        "mix-azure-chat",
        "mix-azure-responses",
        "mix-gemini",
        "mix-bedrock",
    ] {
        assert_eq!(row(&stdout, id)[2], "yes", "{id}: {stdout}");
    }
}

#[test]
fn every_open_entry_answering_passes_the_check() {
    let (ok, stdout, stderr) = check(BUNDLED_TOML);
    assert!(ok, "{stdout}\n{stderr}");
    // One entry of each family the bundled catalog has.
    for id in [
        "sim-small-a",
        "sim-small-b",
        "sim-large-responses",
        "sim-xl-gemini",
        "sim-large-bedrock",
    ] {
        assert_eq!(row(&stdout, id)[2], "yes", "{id}: {stdout}");
    }
}

#[test]
fn a_bedrock_converse_entry_over_the_sim_passes_the_check() {
    // A second Bedrock provider beside the bundled ones (the bundled `sim-bedrock` signs for
    // eu-central-1): signed requests to the sim's Converse endpoints, for a model the sim serves.
    let catalog = format!(
        "{BUNDLED_TOML}\n[providers.sim-bedrock-us]\ndialect = \"bedrock-converse\"\n\
         base_url = \"{{sim}}\"\nregion = \"us-east-1\"\naccess_key_env = \"THINKERS_SIM_KEY\"\n\
         secret_key_env = \"THINKERS_SIM_KEY\"\n\n[[entries]]\nid = \"sim-bedrock-small\"\n\
         provider = \"sim-bedrock-us\"\nmodel = \"sim-small-b\"\ngrade = \"small\"\n\
         context_window = 200000\noutput_ceiling = 8192\nprice_in = 1.0\nprice_out = 5.0\n\
         currency = \"USD\"\n"
    );
    let (ok, stdout, stderr) = check(&catalog);
    assert!(ok, "{stdout}\n{stderr}");
    assert_eq!(row(&stdout, "sim-bedrock-small")[2], "yes", "{stdout}");
    assert_eq!(row(&stdout, "sim-large-bedrock")[2], "yes", "{stdout}");
}

/// A loopback listener that accepts connections and never answers (nor closes them).
fn silent_listener() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            match conn {
                Ok(c) => held.push(c),
                Err(_) => return,
            }
        }
    });
    addr
}

#[test]
fn a_server_that_never_answers_costs_one_bounded_wait() {
    let addr = silent_listener();
    let catalog = format!(
        "[providers.silent]\ndialect = \"openai\"\nbase_url = \"http://{addr}/v1\"\n\
         api_key_env = \"THINKERS_SIM_KEY\"\n\n[[entries]]\nid = \"silent-e\"\n\
         provider = \"silent\"\nmodel = \"m\"\ngrade = \"small\"\ncontext_window = 8000\n\
         output_ceiling = 1000\nprice_in = 1.0\nprice_out = 2.0\ncurrency = \"USD\"\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("catalog.toml");
    std::fs::write(&path, catalog).unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_thinkers"))
        .args([
            "catalog",
            "--check",
            "--timeout",
            "2s",
            "--idle-timeout",
            "1s",
            "--catalog",
        ])
        .arg(&path)
        .env_remove("THINKERS_CATALOG")
        .env("THINKERS_SIM_KEY", "sk-not-needed")
        .output()
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        took < std::time::Duration::from_secs(8),
        "one bounded wait of 2 s, not one per retry: took {took:?}\n{stdout}\n{stderr}"
    );
    assert_eq!(row(&stdout, "silent-e")[2], "NO", "{stdout}");
    // The table may wrap a long detail: read its cells back as one text.
    let flat: String = stdout
        .split(['|', '│', '\n'])
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    for part in [
        "silent-e",
        &format!("{addr}/v1/chat/completions"),
        "no answer within 2s",
    ] {
        assert!(flat.contains(part), "`{part}` is not named:\n{stdout}");
    }
    assert!(
        stderr.contains("1 of 1 open entries are not callable: silent-e"),
        "{stderr}"
    );
}

#[test]
fn a_bad_timeout_is_refused_naming_the_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_thinkers"))
        .args(["catalog", "--check", "--timeout", "ten"])
        .env_remove("THINKERS_CATALOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("--timeout") && stderr.contains("ten"),
        "{stderr}"
    );
}
