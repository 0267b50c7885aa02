//! A simulated provider and a runtime bound to it.

use std::sync::Arc;
use std::time::Duration;

use thinkers::Runtime;
use thinkers::dispatch::DispatchConfig;
use thinkers::llm::ModelClient;
use thinkers::model::Catalog;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::record::MemoryRecorder;
use thinkers_sim::{Sim, SimConfig};

pub struct Setup {
    pub sim: Sim,
    pub rt: Runtime,
    pub rec: MemoryRecorder,
}

/// A calm sim (no random faults, no latency) serving the bundled catalog, and a runtime bound to
/// it with a short client timeout.
pub async fn setup() -> Setup {
    setup_with(|c| c).await
}

pub async fn setup_with(tune: impl FnOnce(SimConfig) -> SimConfig) -> Setup {
    let config = SimConfig::from_catalog_toml(BUNDLED_TOML).unwrap().calm();
    let config = SimConfig {
        log_bodies: true,
        hang_ms: 10_000,
        ..tune(config)
    };
    let sim = Sim::start(config).await.unwrap();
    let catalog = Catalog::bundled().with_sim_url(&sim.base_url());
    let rec = MemoryRecorder::new();
    let client = ModelClient::builder()
        .request_timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let rt = Runtime::builder(catalog)
        .recorder(Arc::new(rec.clone()))
        .client(client)
        .config(DispatchConfig {
            transient_backoff: Duration::from_millis(10),
            throttle_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await
        .unwrap();
    Setup { sim, rt, rec }
}
