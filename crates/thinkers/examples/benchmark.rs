//! A benchmark: the same small thinker raced across every open entry of its grade, each run
//! judged blind against a reference run, and the report printed as a table.
//!
//! Run it with `cargo run -p thinkers --example benchmark`.

use anyhow::{Context, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::Runtime;
use thinkers::benchmark::{Benchmark, BenchmarkReport};
use thinkers::model::{Grade, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};

#[path = "support/mod.rs"]
mod support;

/// The raced thinker's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Estimate {
    /// How the estimate was reached.
    pub reasoning: String,
    /// The estimate, with its unit.
    pub answer: String,
}

/// The subject: a fresh thinker per run (the benchmark pins each one to an entry).
fn estimator() -> Thinker<Estimate> {
    Thinker::<Estimate>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Estimate the quantity asked for and say how you got there.",
    )
    .class("estimator")
}

/// Race the estimator across the small grade, once per entry.
pub async fn run(rt: &Runtime) -> Result<BenchmarkReport> {
    let bench = Benchmark::new(
        estimator,
        ThinkerInput::query("How many words does a typical paperback novel have?"),
        1,
    );
    let slot = bench.report();
    let reference = rt.run(bench).await?;
    println!("reference answer: {}", reference.answer);
    let report = slot.get().context("the benchmark published no report")?;
    println!("{}", report.table());
    Ok(report)
}

/// The sim as bundled.
pub fn tune(config: thinkers_sim::SimConfig) -> thinkers_sim::SimConfig {
    config
}

#[tokio::main]
async fn main() -> Result<()> {
    let env = support::from_args(tune).await?;
    run(&env.rt).await?;
    // Cancels what still runs and writes every record before the process exits.
    env.rt.shutdown().await?;
    Ok(())
}
