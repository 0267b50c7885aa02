//! `thinkers cost` and `thinkers sizing` with `--db postgres://…`: `thinkers run` records a real run
//! (the `chain` workflow against thinkers-sim) in a fresh PostgreSQL schema, and the numbers both
//! reports show are the ones recorded in `llm_runs`. Skipped (loudly) when PostgreSQL does not
//! answer, unless `THINKERS_REQUIRE_SERVICES=1`.

use anyhow::{Context as _, Result};
use serde_json::{Value, json};
use sqlx::Connection as _;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers_sim::{Sim, SimConfig};

use crate::support::cli::run_ok;
use crate::support::pg;

const STEPS: i64 = 3;

/// What `llm_runs` holds for the chain's calls: count, input, output and largest output tokens,
/// spend.
async fn recorded(db: &str) -> Result<(i64, i64, i64, i64, f64)> {
    let mut c = sqlx::PgConnection::connect(db).await?;
    let row = sqlx::query_as(
        "SELECT COUNT(*), SUM(input_tokens)::BIGINT, SUM(output_tokens)::BIGINT, \
         MAX(output_tokens), SUM(cost) FROM llm_runs WHERE class = 'chain_step'",
    )
    .fetch_one(&mut c)
    .await?;
    c.close().await.ok();
    Ok(row)
}

/// The one root job of the recorded run.
async fn root_job(db: &str) -> Result<String> {
    let mut c = sqlx::PgConnection::connect(db).await?;
    let root = sqlx::query_scalar("SELECT id FROM jobs WHERE parent IS NULL")
        .fetch_one(&mut c)
        .await?;
    c.close().await.ok();
    Ok(root)
}

fn json_of(out: &str) -> Result<Value> {
    serde_json::from_str(out).with_context(|| format!("not JSON: {out}"))
}

/// The table line whose first cell is `first`.
fn line<'a>(table: &'a str, first: &str) -> Result<&'a str> {
    table
        .lines()
        .find(|l| l.split('|').nth(1).is_some_and(|c| c.trim() == first))
        .with_context(|| format!("no row `{first}` in:\n{table}"))
}

/// The cells of a table line, trimmed.
fn cells(line: &str) -> Vec<&str> {
    line.split('|')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cost_and_sizing_show_a_run_recorded_in_postgres() -> Result<()> {
    let Some(db) = pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let sim = Sim::start(SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm()).await?;
    let input = json!({"topic": "spend", "steps": STEPS, "entry": "sim-small-a"});
    let output = run_ok(&[
        "run",
        "chain",
        "--input",
        &input.to_string(),
        "--db",
        &db,
        "--sim-url",
        &sim.base_url(),
    ])
    .await?;
    let done = json_of(&output)?;
    assert_eq!(
        done["answers"].as_array().map(Vec::len),
        Some(STEPS as usize),
        "{done}"
    );

    let (calls, input_tokens, output_tokens, max_output, spend) = recorded(&db).await?;
    assert_eq!(calls, STEPS, "one recorded call per step");
    assert!(input_tokens > 0 && output_tokens > 0);

    // By class, as JSON and as the table.
    let report = json_of(&run_ok(&["cost", "--db", &db, "--json"]).await?)?;
    let rows = report["rows"].as_array().context("rows")?;
    assert_eq!(rows.len(), 1, "{report}");
    let row = &rows[0];
    assert_eq!(row["group"], "chain_step");
    assert_eq!(row["calls"], calls);
    assert_eq!(row["input_tokens"], input_tokens);
    assert_eq!(row["output_tokens"], output_tokens);
    assert!(
        (row["cost"].as_f64().context("cost")? - spend).abs() < 1e-9,
        "{row}"
    );
    let table = run_ok(&["cost", "--db", &db]).await?;
    println!("$ thinkers cost --db postgres://…\n{table}");
    let shown = cells(line(&table, "chain_step")?);
    // calls, uncached in (no call here read or wrote the cache), cache read, cache write, out.
    assert_eq!(
        shown[2..7],
        [calls, input_tokens, 0, 0, output_tokens].map(|n| n.to_string())
    );
    assert!(!table.contains("no model calls"), "{table}");

    // By workflow, labelled with the root job's class (read from the jobs table).
    let root = root_job(&db).await?;
    let table = run_ok(&["cost", "--db", &db, "--by", "workflow"]).await?;
    let shown = cells(line(&table, &root)?);
    assert_eq!(shown[1], "chain", "{table}");
    assert_eq!(shown[3], calls.to_string(), "{table}");

    // The subtree of the root job: the workflow's jobs and calls.
    let under = run_ok(&["cost", "--db", &db, "--under", &root]).await?;
    assert!(
        under.starts_with(&format!("Spend of chain {root}")),
        "{under}"
    );
    let currency = row["currency"].as_str().context("currency")?;
    assert!(!currency.is_empty(), "{row}");
    let shown = cells(line(&under, currency)?);
    assert_eq!(shown[1], calls.to_string(), "{under}");

    // Sizing: one class, its calls and its largest answer.
    let sizing = json_of(&run_ok(&["sizing", "--db", &db, "--json"]).await?)?;
    let classes = sizing["classes"].as_array().context("classes")?;
    assert_eq!(classes.len(), 1, "{sizing}");
    assert_eq!(classes[0]["class"], "chain_step");
    assert_eq!(classes[0]["calls"], calls);
    assert_eq!(classes[0]["max_output"], max_output);
    let table = run_ok(&["sizing", "--db", &db]).await?;
    println!("$ thinkers sizing --db postgres://…\n{table}");
    assert!(
        table.starts_with(&format!(
            "Sizing from {calls} model calls over 1 job classes"
        )),
        "{table}"
    );
    let shown = cells(line(&table, "chain_step")?);
    assert_eq!(shown[1..3], [calls, max_output].map(|n| n.to_string()));

    sim.shutdown().await.ok();
    Ok(())
}
