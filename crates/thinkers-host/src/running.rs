//! [`RunningHost`]: a host serving on a socket.

use std::net::SocketAddr;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use thinkers::{Error, Result};

/// A host serving on a socket.
#[derive(Debug)]
pub struct RunningHost {
    addr: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    turns: TaskTracker,
}

impl RunningHost {
    pub(super) fn new(
        addr: SocketAddr,
        stop: CancellationToken,
        task: tokio::task::JoinHandle<std::io::Result<()>>,
        turns: TaskTracker,
    ) -> Self {
        Self {
            addr,
            stop,
            task,
            turns,
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stop accepting connections (event streams end), then wait for the turns that are
    /// running to finish and save, so a host started next on the same database sees them.
    pub async fn shutdown(self) -> Result<()> {
        self.stop.cancel();
        let served = self.task.await;
        self.turns.close();
        self.turns.wait().await;
        match served {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::system("chat host", format!("server failed: {e}"))),
            Err(e) => Err(Error::system(
                "chat host",
                format!("server task failed: {e}"),
            )),
        }
    }

    /// Wait until the server stops (it stops on its own only on failure).
    pub async fn wait(self) -> Result<()> {
        match self.task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Error::system("chat host", format!("server failed: {e}"))),
            Err(e) => Err(Error::system(
                "chat host",
                format!("server task failed: {e}"),
            )),
        }
    }
}
