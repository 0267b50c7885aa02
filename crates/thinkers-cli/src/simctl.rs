//! Starting the simulated provider for commands that run offline, and `thinkers sim`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use thinkers::model::Catalog;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers_sim::{Sim, SimConfig};

/// Load a catalog file, or the bundled one.
pub(crate) fn load_catalog(path: Option<&Path>) -> anyhow::Result<Catalog> {
    match path {
        Some(p) => Catalog::load(p).map_err(|e| anyhow::anyhow!("{e}")),
        None => Ok(Catalog::bundled()),
    }
}

/// If the catalog points at the simulated provider, start one in-process serving the catalog's
/// entries and bind the catalog to it.
pub(crate) async fn bind(catalog: Catalog) -> anyhow::Result<(Catalog, Option<Sim>)> {
    bind_with(catalog, |c| c).await
}

/// Bind a catalog that points at the simulated provider to the one at `sim_url` when given,
/// else to one started in-process ([`bind`]).
pub(crate) async fn bind_or_use(
    catalog: Catalog,
    sim_url: Option<&str>,
) -> anyhow::Result<(Catalog, Option<Sim>)> {
    match sim_url {
        Some(url) if catalog.needs_sim() => {
            Ok((catalog.with_sim_url(url.trim_end_matches('/')), None))
        }
        _ => bind(catalog).await,
    }
}

/// As [`bind`], with the sim's configuration adjusted by `tune` first.
pub(crate) async fn bind_with(
    catalog: Catalog,
    tune: impl FnOnce(SimConfig) -> SimConfig,
) -> anyhow::Result<(Catalog, Option<Sim>)> {
    if !catalog.needs_sim() {
        return Ok((catalog, None));
    }
    // The sim serves the catalog's own entries when the catalog came from a file (their
    // models, with any `[entries.sim]` profiles), the bundled ones otherwise.
    let source = Path::new(catalog.source_name());
    let from_file = source.is_file().then_some(source);
    let sim = Sim::start(tune(sim_config(from_file)?))
        .await
        .context("starting the simulated provider")?;
    let url = sim.base_url();
    Ok((catalog.with_sim_url(&url), Some(sim)))
}

fn sim_config(catalog: Option<&Path>) -> anyhow::Result<SimConfig> {
    Ok(match catalog {
        Some(p) => {
            SimConfig::from_catalog_file(p).with_context(|| format!("reading {}", p.display()))?
        }
        None => SimConfig::from_catalog_toml(BUNDLED_TOML)?,
    })
}

/// Options of `thinkers sim`.
#[derive(Debug, clap::Args)]
pub(crate) struct SimArgs {
    /// The port to listen on (127.0.0.1).
    #[arg(long, default_value_t = 8089)]
    port: u16,
    /// A catalog whose entries (and their `[entries.sim]` profiles) the sim serves; the bundled
    /// catalog when omitted.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// The seed of every deterministic choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// No random faults and no latency: faults only when injected.
    #[arg(long)]
    calm: bool,
}

pub(crate) async fn serve(args: SimArgs) -> anyhow::Result<()> {
    let mut config = sim_config(args.catalog.as_deref())?;
    config.seed = args.seed;
    if args.calm {
        config = config.calm();
    }
    let addr = SocketAddr::from(([127, 0, 0, 1], args.port));
    thinkers_sim::serve(config, addr).await?;
    Ok(())
}
