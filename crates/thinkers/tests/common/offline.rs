//! Shared by the test binaries that run against the simulated provider: a calm thinkers-sim
//! serving the bundled catalog (request bodies logged) and a runtime bound to it, recording into
//! memory, with short retry backoffs. Included with `#[path = "../common/offline.rs"]`.

use std::sync::Arc;
use std::time::Duration;

use thinkers::Runtime;
use thinkers::dispatch::DispatchConfig;
use thinkers::llm::ModelClient;
use thinkers::model::Catalog;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::record::MemoryRecorder;
use thinkers_sim::{Sim, SimConfig};

/// A running sim, a runtime bound to it and the runtime's recorder.
pub struct Setup {
    pub sim: Sim,
    pub rt: Runtime,
    pub rec: MemoryRecorder,
}

/// Start the sim (after `tune` adjusts its configuration) and a runtime whose model client gives
/// up on a request after `request_timeout`.
pub async fn start(request_timeout: Duration, tune: impl FnOnce(SimConfig) -> SimConfig) -> Setup {
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
        .request_timeout(request_timeout)
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
