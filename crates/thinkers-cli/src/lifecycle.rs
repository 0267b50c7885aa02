//! How the command ends: on every path, the runtimes it built are shut down (running work
//! cancelled and recorded, every row written) before the process exits.
//!
//! Each command registers the runtimes it builds ([`register`]). `main` runs the command against
//! SIGINT and SIGTERM: when the command returns (with success or an error) or a signal arrives,
//! every registered runtime is shut down; after a signal the command gets [`GRACE`] to finish
//! what it does on a stop (the chat host marks the turns it cut short), and the process exits
//! with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM). A second signal exits at
//! once.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use thinkers::Runtime;
use tokio_util::sync::CancellationToken;

/// How long a command may take to finish after a signal, once its runtimes are shut down.
pub(crate) const GRACE: Duration = Duration::from_secs(15);

fn runtimes() -> &'static Mutex<Vec<Runtime>> {
    static RUNTIMES: OnceLock<Mutex<Vec<Runtime>>> = OnceLock::new();
    RUNTIMES.get_or_init(|| Mutex::new(Vec::new()))
}

fn stop_token() -> &'static CancellationToken {
    static STOP: OnceLock<CancellationToken> = OnceLock::new();
    STOP.get_or_init(CancellationToken::new)
}

/// Shut `rt` down before the process exits, whichever way it exits.
pub(crate) fn register(rt: &Runtime) {
    runtimes()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(rt.clone());
}

/// Resolves when a stop signal arrived (commands that serve until stopped wait on it).
pub(crate) async fn stop_requested() {
    stop_token().cancelled().await;
}

/// A stop signal: its name and the exit code it asks for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signal {
    pub(crate) name: &'static str,
    pub(crate) code: u8,
}

/// The next SIGINT or SIGTERM. Never resolves where the handlers cannot be installed (which
/// is logged).
pub(crate) async fn next_signal() -> Signal {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => tokio::select! {
                _ = int.recv() => Signal { name: "SIGINT", code: 130 },
                _ = term.recv() => Signal { name: "SIGTERM", code: 143 },
            },
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(error = %e, "cannot watch for stop signals");
                std::future::pending().await
            }
        }
    }
    #[cfg(not(unix))]
    {
        match tokio::signal::ctrl_c().await {
            Ok(()) => Signal {
                name: "ctrl-c",
                code: 130,
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch for ctrl-c");
                std::future::pending().await
            }
        }
    }
}

/// Mark the stop as requested (so [`stop_requested`] resolves).
pub(crate) fn request_stop() {
    stop_token().cancel();
}

/// Shut every registered runtime down with `reason`; the first failure is returned after all
/// were tried.
pub(crate) async fn shutdown_all(reason: &str) -> anyhow::Result<()> {
    let all: Vec<Runtime> = runtimes()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain(..)
        .collect();
    let mut first = None;
    for rt in all {
        if let Err(e) = rt.shutdown_because(reason).await {
            eprintln!("error: recording could not be completed: {e}");
            first.get_or_insert(e);
        }
    }
    match first {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
