//! A simulated provider and a runtime bound to it (see `tests/common/offline.rs`).

use std::time::Duration;

#[path = "../common/offline.rs"]
mod offline;

pub use offline::Setup;

/// A calm sim (no random faults, no latency) serving the bundled catalog, and a runtime bound to
/// it with a short client timeout, so a hanging request is given up quickly.
pub async fn setup() -> Setup {
    offline::start(Duration::from_secs(2), |c| c).await
}
