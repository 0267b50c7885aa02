//! What the `errands` workflow tests share (`restate/`): the model's script, the sim serving it,
//! the ledger the `do_errand` tool writes, and the check that no model call was paid twice.

use std::collections::HashSet;
use std::path::Path;

use anyhow::Result;
use serde_json::json;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers_sim::{MatchOn, Script, ScriptAnswer, ScriptRule, ScriptToolCall, Sim, SimConfig};

/// The model's side of an errands run: one `do_errand` call per errand, in order, then a report;
/// a denial is reported as such.
pub(crate) fn errands_script() -> Script {
    let call = |errand: &str| {
        ScriptAnswer::ToolCalls(vec![ScriptToolCall {
            name: "do_errand".to_owned(),
            arguments: json!({ "errand": errand }),
        }])
    };
    let report = |summary: &str| {
        ScriptAnswer::Json(json!({
            "reasoning": "went through the errands in order",
            "answer": { "summary": summary }
        }))
    };
    let on_result =
        |needle: &str, answer| ScriptRule::when_contains(needle, answer).on(MatchOn::ToolResult);
    Script::new(vec![
        on_result(
            "denied",
            report("REPORT: an errand was denied, so it was not done"),
        ),
        on_result("errand-three", report("REPORT: all three errands are done")),
        on_result("errand-two", call("errand-three")),
        on_result("errand-one", call("errand-two")),
        ScriptRule::when_contains("Errands:", call("errand-one")).on(MatchOn::User),
    ])
}

pub(crate) async fn sim() -> Result<Sim> {
    let mut config = SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm();
    config.script = Some(errands_script());
    config.log_bodies = true;
    Ok(Sim::start(config).await?)
}

pub(crate) fn ledger_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The sim saw no request body twice: no model call was paid twice.
pub(crate) fn paid_once(sim: &Sim) -> usize {
    let bodies: Vec<String> = sim.requests().into_iter().map(|r| r.raw_body).collect();
    let distinct: HashSet<&String> = bodies.iter().collect();
    assert_eq!(distinct.len(), bodies.len(), "a body was sent twice");
    bodies.len()
}
