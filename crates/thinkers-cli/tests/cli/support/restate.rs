//! A real Restate server on loopback for the engine tests: the binary from the npm package
//! `@restatedev/restate-server` (`scripts/install-restate-server.sh`, exported by
//! `scripts/test.sh` as `THINKERS_RESTATE_SERVER`), on free ports with a temporary base
//! directory; and the `thinkers worker` service processes it invokes.

use std::net::TcpListener as StdListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use tokio::process::{Child, Command};

use super::cli::thinkers;

pub(crate) struct RestateServer {
    pub(crate) ingress: String,
    pub(crate) admin: String,
    _child: Child,
    _dir: tempfile::TempDir,
}

fn free_port() -> Result<u16> {
    Ok(StdListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The server binary, or `None` (loudly) when it is not installed, unless
/// `THINKERS_REQUIRE_SERVICES=1`, which makes that a failure.
pub(crate) fn server_binary() -> Result<Option<String>> {
    match std::env::var("THINKERS_RESTATE_SERVER")
        .ok()
        .filter(|p| std::path::Path::new(p).is_file())
    {
        Some(p) => Ok(Some(p)),
        None if std::env::var("THINKERS_REQUIRE_SERVICES").is_ok_and(|v| v == "1") => bail!(
            "THINKERS_RESTATE_SERVER does not name the restate-server binary \
             (scripts/install-restate-server.sh installs it)"
        ),
        None => {
            eprintln!(
                "\n*** SKIPPED: THINKERS_RESTATE_SERVER is not set \
                 (scripts/install-restate-server.sh) ***\n"
            );
            Ok(None)
        }
    }
}

impl RestateServer {
    /// Start a server; `None` when the binary is missing and services are not required.
    pub(crate) async fn start() -> Result<Option<Self>> {
        Self::start_with("3s").await
    }

    /// [`RestateServer::start`] with the invoker's inactivity timeout (how long an invocation
    /// may go without a journal step before the server asks it to suspend).
    ///
    /// A server that exits or does not answer within a minute (a port taken between choosing
    /// it and binding it, a slow first start on a loaded machine) is stopped and started again
    /// on fresh ports, up to three times; the error names what the server printed.
    pub(crate) async fn start_with(inactivity: &str) -> Result<Option<Self>> {
        let Some(binary) = server_binary()? else {
            return Ok(None);
        };
        let mut failures = Vec::new();
        for attempt in 1..=3 {
            match Self::try_start(&binary, inactivity).await {
                Ok(server) => return Ok(Some(server)),
                Err(e) => {
                    eprintln!("restate-server start {attempt} of 3 failed: {e:#}");
                    failures.push(format!("start {attempt}: {e:#}"));
                }
            }
        }
        bail!("the Restate server did not start:\n{}", failures.join("\n"))
    }

    async fn try_start(binary: &str, inactivity: &str) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let (fabric, admin, ingress) = (free_port()?, free_port()?, free_port()?);
        let config = format!(
            r#"base-dir = "{base}"
node-name = "thinkers-test"
bind-address = "127.0.0.1:{fabric}"
advertised-address = "http://127.0.0.1:{fabric}"
default-num-partitions = 2
disable-telemetry = true
log-filter = "warn"
rocksdb-total-memory-size = "256 MiB"

[default-retry-policy]
initial-interval = "100ms"
max-interval = "1s"
max-attempts = 600

[worker.invoker]
inactivity-timeout = "{inactivity}"
# Few invocations per HTTP/2 connection, so the server opens several and the kernel spreads
# them over the service processes sharing the address (SO_REUSEPORT balances connections).
http2-streams-per-connection-limit = 2

[admin]
bind-address = "127.0.0.1:{admin}"

[ingress]
bind-address = "127.0.0.1:{ingress}"
"#,
            base = dir.path().join("base").display()
        );
        let file = dir.path().join("restate.toml");
        std::fs::write(&file, config)?;
        let log = dir.path().join("restate.log");
        let out = std::fs::File::create(&log)?;
        let mut child = Command::new(binary)
            .arg("--config-file")
            .arg(&file)
            .args(["--no-logo", "--listen-mode", "tcp"])
            .stdout(out.try_clone()?)
            .stderr(out)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {binary}"))?;
        let printed = |log: &std::path::Path| {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(20).collect();
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        };
        let http = reqwest::Client::new();
        let health = format!("http://127.0.0.1:{admin}/health");
        let ready = format!("http://127.0.0.1:{ingress}/restate/health");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = child.try_wait()? {
                bail!(
                    "restate-server exited ({status}); it printed:\n{}",
                    printed(&log)
                );
            }
            let up =
                |r: reqwest::Result<reqwest::Response>| r.is_ok_and(|r| r.status().is_success());
            if up(http.get(&health).send().await) && up(http.get(&ready).send().await) {
                break;
            }
            if Instant::now() > deadline {
                child.kill().await.ok();
                bail!(
                    "restate-server did not answer within 60 s on admin port {admin}, ingress \
                     port {ingress}; it printed:\n{}",
                    printed(&log)
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(Self {
            ingress: format!("http://127.0.0.1:{ingress}"),
            admin: format!("http://127.0.0.1:{admin}"),
            _child: child,
            _dir: dir,
        })
    }

    /// Register the deployment at `http://{addr}`, retrying while the service processes start.
    pub(crate) async fn register(&self, addr: &str) -> Result<()> {
        let uri = format!("http://{addr}");
        let mut last = None;
        for _ in 0..100 {
            match thinkers_workflows::restate::register_deployment(&self.admin, &uri).await {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        bail!("registering {uri}: {last:?}")
    }
}

/// A free loopback address for the service processes to share.
pub(crate) fn service_addr() -> Result<String> {
    Ok(format!("127.0.0.1:{}", free_port()?))
}

/// A `thinkers worker` process serving on `addr`, writing a journal entry
/// after 1 s without one (the servers of [`RestateServer::start`] ask an invocation silent for
/// 3 s to suspend) unless `extra` sets `--heartbeat-secs`. Returns once the process is
/// listening, so every process started before a registration shares the connections the server
/// opens next (a process that binds late would get none of them); its later stderr is forwarded.
pub(crate) async fn spawn_service(
    db: &str,
    addr: &str,
    sim: &str,
    name: &str,
    extra: &[&str],
) -> Result<Child> {
    use tokio::io::{AsyncBufReadExt as _, BufReader};
    let beat: &[&str] = if extra.contains(&"--heartbeat-secs") {
        &[]
    } else {
        &["--heartbeat-secs", "1"]
    };
    let mut child = thinkers()
        .args(["worker", "--listen", addr])
        .args(["--db", db, "--sim-url", sim, "--name", name])
        .args(beat)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let stderr = child.stderr.take().context("the worker's stderr")?;
    let mut lines = BufReader::new(stderr).lines();
    let mut said = Vec::new();
    let serving = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await? {
            eprintln!("[{name}] {line}");
            let done = line.contains("serving the Restate workflow service");
            said.push(line);
            if done {
                return Ok(true);
            }
        }
        Ok::<_, std::io::Error>(false)
    })
    .await;
    match serving {
        Ok(Ok(true)) => {}
        Ok(Ok(false)) => bail!("worker {name} exited before serving: {}", said.join("\n")),
        Ok(Err(e)) => bail!("reading worker {name}'s stderr: {e}"),
        Err(_) => bail!("worker {name} not serving after 60 s: {}", said.join("\n")),
    }
    let name = name.to_owned();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            eprintln!("[{name}] {line}");
        }
    });
    Ok(child)
}
