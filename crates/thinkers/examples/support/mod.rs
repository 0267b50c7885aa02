//! What every example starts from: a runtime over the bundled catalog served by an in-process
//! thinkers-sim (calm: no random faults), or, when the command line says `--catalog FILE`, a
//! runtime over that catalog and the real providers it names.
//!
//! The test suite (`crates/thinkers/tests/examples.rs`) includes this file too and calls each
//! example's `run` against the sim.

// Each example uses only part of this module.
#![allow(dead_code)]

use std::sync::Arc;

use anyhow::{Context, Result};
use thinkers::Runtime;
use thinkers::model::Catalog;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::record::MemoryRecorder;
use thinkers_sim::{Sim, SimConfig};

/// A runtime, what it recorded, and the sim serving it (absent with `--catalog`).
pub(crate) struct Env {
    /// The runtime the example runs its jobs on.
    pub(crate) rt: Runtime,
    /// Every job and model call the runtime recorded.
    pub(crate) rec: MemoryRecorder,
    /// The in-process simulated provider, when the example runs offline.
    pub(crate) sim: Option<Sim>,
}

/// A calm sim serving the bundled catalog (after `tune` adjusts it), and a runtime bound to it.
pub(crate) async fn offline(tune: impl FnOnce(SimConfig) -> SimConfig) -> Result<Env> {
    offline_with(tune, |b| b).await
}

/// [`offline`], the runtime's builder adjusted by `build` first (a spending cap, a policy).
pub(crate) async fn offline_with(
    tune: impl FnOnce(SimConfig) -> SimConfig,
    build: impl FnOnce(thinkers::RuntimeBuilder) -> thinkers::RuntimeBuilder,
) -> Result<Env> {
    let config = SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm();
    let config = SimConfig {
        log_bodies: true,
        ..tune(config)
    };
    let sim = Sim::start(config).await?;
    let catalog = Catalog::bundled().with_sim_url(&sim.base_url());
    let rec = MemoryRecorder::new();
    let rt = build(Runtime::builder(catalog).recorder(Arc::new(rec.clone())))
        .build()
        .await?;
    Ok(Env {
        rt,
        rec,
        sim: Some(sim),
    })
}

/// `--catalog FILE` on the command line: a runtime over that catalog (its providers' API keys
/// come from the variables it names). Otherwise [`offline`].
pub(crate) async fn from_args(tune: impl FnOnce(SimConfig) -> SimConfig) -> Result<Env> {
    let args: Vec<String> = std::env::args().collect();
    let Some(at) = args.iter().position(|a| a == "--catalog") else {
        return offline(tune).await;
    };
    let path = args
        .get(at + 1)
        .context("--catalog needs a file: --catalog my.toml")?;
    let catalog = Catalog::load(path)?;
    let rec = MemoryRecorder::new();
    let rt = Runtime::builder(catalog)
        .recorder(Arc::new(rec.clone()))
        .build()
        .await?;
    println!("using the catalog {path}");
    Ok(Env { rt, rec, sim: None })
}

/// Every sim model makes exactly one tool round (one call) before it answers, so a thinker's
/// run is short and easy to read.
pub(crate) fn one_tool_round(mut config: SimConfig) -> SimConfig {
    for m in &mut config.models {
        if let Some(p) = &mut m.profile {
            p.tool_rounds = 1;
            p.parallel_tool_calls = 1;
        }
    }
    config
}
