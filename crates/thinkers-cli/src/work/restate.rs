//! `thinkers worker`: serve the Restate workflow service from this process.

use std::net::SocketAddr;

use anyhow::Context as _;
use thinkers::Runtime;
use thinkers_store::PgStore;
use thinkers_workflows::restate::{RestateEngine, reuse_port_listener};
use tokio_util::sync::CancellationToken;

/// Serve until a stop signal; running invocations end with the process (Restate replays them
/// on another one).
pub(crate) async fn serve(
    engine: &RestateEngine,
    runtime: Runtime,
    store: &PgStore,
    listen: SocketAddr,
    name: Option<String>,
) -> anyhow::Result<()> {
    let listener =
        reuse_port_listener(listen).with_context(|| format!("listening on {listen} (--listen)"))?;
    let name = name.unwrap_or_else(|| format!("restate-{}-{}", listen.port(), std::process::id()));
    eprintln!("worker {name} serving the Restate workflow service on http://{listen}");
    let shutdown = CancellationToken::new();
    let on_signal = shutdown.clone();
    tokio::spawn(async move {
        crate::lifecycle::stop_requested().await;
        eprintln!("worker: stopping the Restate workflow service");
        on_signal.cancel();
    });
    engine
        .serve(
            runtime,
            super::workflows::registry(),
            store,
            name,
            listener,
            shutdown,
        )
        .await;
    Ok(())
}
