//! The record stays true on every path a process can end by: a workflow that fails mid-way,
//! Ctrl-C (SIGINT), SIGTERM, and SIGKILL followed by a second process opening the same
//! database. Each test runs the real `thinkers` binary against a thinkers-sim over HTTP and
//! compares the sim's own count of answered requests with the rows in the database, on SQLite
//! and on PostgreSQL (a fresh schema; skipped loudly when PostgreSQL does not answer, unless
//! `THINKERS_REQUIRE_SERVICES=1`).

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use thinkers_sim::{FaultKind, FaultRule, Sim, SimConfig};
use tokio::process::{Child, Command};

use crate::support::pg;

/// Two entries: one answering after 50 ms, one after 1.5 s, neither with random faults.
const CATALOG: &str = r#"
[providers.sim]
dialect = "openai"
base_url = "{sim}/v1"
api_key_env = "THINKERS_SIM_KEY"

[[entries]]
id = "sim-fast"
provider = "sim"
model = "sim-fast"
grade = "small"
context_window = 128000
output_ceiling = 4096
tpm = 2000000
rpm = 10000
concurrency = 64
price_in = 0.15
price_out = 0.60
currency = "USD"
native_tools = true

[entries.sim]
latency_ms = [50, 50]

[[entries]]
id = "sim-slow"
provider = "sim"
model = "sim-slow"
grade = "small"
context_window = 128000
output_ceiling = 4096
tpm = 2000000
rpm = 10000
concurrency = 64
price_in = 0.15
price_out = 0.60
currency = "USD"
native_tools = true

[entries.sim]
latency_ms = [1500, 1500]
"#;

/// A sim serving [`CATALOG`], the catalog file, and a database of one backend.
struct Setup {
    sim: Sim,
    catalog: String,
    db: Db,
    _dir: tempfile::TempDir,
}

enum Db {
    Sqlite(String),
    Postgres(String),
}

impl Db {
    fn target(&self) -> &str {
        match self {
            Self::Sqlite(t) | Self::Postgres(t) => t,
        }
    }
}

impl Setup {
    async fn new(postgres: bool) -> Result<Option<Self>> {
        let dir = tempfile::tempdir()?;
        let db = if postgres {
            match pg::fresh_schema_url().await? {
                Some(url) => Db::Postgres(url),
                None => return Ok(None),
            }
        } else {
            Db::Sqlite(dir.path().join("runs.db").to_string_lossy().into_owned())
        };
        let catalog = dir.path().join("catalog.toml");
        std::fs::write(&catalog, CATALOG)?;
        let sim = Sim::start(SimConfig::from_catalog_toml(CATALOG)?).await?;
        Ok(Some(Self {
            sim,
            catalog: catalog.to_string_lossy().into_owned(),
            db,
            _dir: dir,
        }))
    }

    /// `thinkers ARGS --db DB`.
    fn thinkers(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_thinkers"));
        c.env_remove("THINKERS_DB")
            .env_remove("THINKERS_SIM_URL")
            .env("RUST_LOG", "warn")
            .args(args)
            .args(["--db", self.db.target()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    /// `thinkers run NAME --input INPUT` against the sim.
    fn run(&self, name: &str, input: &str) -> Command {
        let mut c = self.thinkers(&["run", name, "--input", input]);
        c.args([
            "--catalog",
            &self.catalog,
            "--sim-url",
            &self.sim.base_url(),
        ]);
        c
    }

    fn answered(&self) -> u64 {
        self.sim.stats().totals.answered
    }

    /// (status, error) of every job, and the number of model-call rows.
    async fn record(&self) -> Result<(Vec<(String, Option<String>)>, i64)> {
        match &self.db {
            Db::Sqlite(path) => {
                use sqlx::Connection as _;
                let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{path}")).await?;
                let jobs = sqlx::query_as("SELECT status, error FROM jobs")
                    .fetch_all(&mut c)
                    .await?;
                let runs = sqlx::query_scalar("SELECT COUNT(*) FROM llm_runs")
                    .fetch_one(&mut c)
                    .await?;
                c.close().await?;
                Ok((jobs, runs))
            }
            Db::Postgres(url) => {
                use sqlx::Connection as _;
                let mut c = sqlx::PgConnection::connect(url).await?;
                let jobs = sqlx::query_as("SELECT status, error FROM jobs")
                    .fetch_all(&mut c)
                    .await?;
                let runs = sqlx::query_scalar("SELECT COUNT(*) FROM llm_runs")
                    .fetch_one(&mut c)
                    .await?;
                c.close().await?;
                Ok((jobs, runs))
            }
        }
    }

    /// No job is `running`; returns the statuses counted.
    async fn nothing_running(&self) -> Result<(Vec<(String, Option<String>)>, i64)> {
        let (jobs, runs) = self.record().await?;
        let running = jobs.iter().filter(|(s, _)| s == "running").count();
        ensure!(running == 0, "{running} job(s) still `running`: {jobs:?}");
        Ok((jobs, runs))
    }
}

async fn wait_for(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while !check() {
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

fn signal(child: &Child, name: &str) -> Result<()> {
    let pid = child.id().context("the child has a pid")?;
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()?;
    ensure!(status.success(), "kill -{name} {pid} failed");
    Ok(())
}

/// Run `fanout` with one fast call that the sim refuses with a 400 and three slow ones: the
/// workflow fails while the slow calls are in flight.
async fn failing_midway(postgres: bool) -> Result<()> {
    let Some(s) = Setup::new(postgres).await? else {
        return Ok(());
    };
    s.sim.inject(FaultRule {
        model: Some("sim-fast".to_owned()),
        params: thinkers_sim::FaultParams {
            status: Some(400),
            ..Default::default()
        },
        ..FaultRule::new(FaultKind::EchoKey)
    });
    // One fast call answered first, so the record has a paid call to keep.
    let ok = s
        .run(
            "fanout",
            r#"{"topic": "warm-up", "calls": 1, "entries": ["sim-slow"]}"#,
        )
        .output()
        .await?;
    ensure!(
        ok.status.success(),
        "warm-up: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let out = s
        .run(
            "fanout",
            r#"{"topic": "leases", "calls": 4,
                "entries": ["sim-fast", "sim-slow", "sim-slow", "sim-slow"]}"#,
        )
        .output()
        .await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(!out.status.success(), "the workflow should fail: {stderr}");
    ensure!(stderr.contains("400"), "the failure is named: {stderr}");
    // Past the slow calls' latency: the sim would have answered them by now if they had run on.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let (jobs, runs) = s.nothing_running().await?;
    let cancelled: Vec<_> = jobs.iter().filter(|(st, _)| st == "cancelled").collect();
    ensure!(cancelled.len() == 3, "three calls cancelled: {jobs:?}");
    for (_, why) in &cancelled {
        let why = why.as_deref().unwrap_or_default();
        ensure!(
            why.contains("cancelled because `fanout`") && why.contains("failed"),
            "{why}"
        );
    }
    ensure!(
        u64::try_from(runs)? == s.answered(),
        "recorded calls {runs} = answered {}",
        s.answered()
    );
    Ok(())
}

/// Run a 20-step `chain` on the slow entry and stop it with `sig` while a call is in flight.
async fn stopped_by(postgres: bool, sig: &str, code: i32) -> Result<()> {
    let Some(s) = Setup::new(postgres).await? else {
        return Ok(());
    };
    let mut child = s
        .run(
            "chain",
            r#"{"topic": "signals", "steps": 20, "entry": "sim-slow"}"#,
        )
        .spawn()?;
    wait_for("two answered calls", Duration::from_secs(30), || {
        s.answered() >= 2
    })
    .await?;
    // The third call is in flight now (1.5 s at the sim): stop the process in its middle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    signal(&child, sig)?;
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use tokio::io::AsyncReadExt as _;
        e.read_to_string(&mut err).await?;
    }
    ensure!(
        status.code() == Some(code),
        "exit code {status:?}, want {code}: {err}"
    );
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let (jobs, runs) = s.nothing_running().await?;
    let cancelled: Vec<_> = jobs.iter().filter(|(st, _)| st == "cancelled").collect();
    ensure!(
        cancelled.len() >= 2,
        "the chain and its call in flight: {jobs:?}"
    );
    for (_, why) in &cancelled {
        let why = why.as_deref().unwrap_or_default();
        ensure!(why.contains(sig), "the reason names {sig}: {why}");
    }
    ensure!(
        u64::try_from(runs)? == s.answered(),
        "recorded calls {runs} = answered {}",
        s.answered()
    );
    Ok(())
}

/// Kill a 20-step `chain` with SIGKILL mid-call, then open the database from a second process.
async fn killed(postgres: bool) -> Result<()> {
    let Some(s) = Setup::new(postgres).await? else {
        return Ok(());
    };
    let mut child = s
        .run(
            "chain",
            r#"{"topic": "power loss", "steps": 20, "entry": "sim-slow"}"#,
        )
        .spawn()?;
    wait_for("three answered calls", Duration::from_secs(30), || {
        s.answered() >= 3
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    child.start_kill()?; // SIGKILL
    child.wait().await?;
    let answered = s.answered();
    // Before anyone looks again, the dead process's rows still say `running`.
    let (before, runs) = s.record().await?;
    ensure!(
        before.iter().any(|(st, _)| st == "running"),
        "a killed process leaves running rows: {before:?}"
    );
    // Every call whose answer the chain used was committed before the answer was handed on.
    ensure!(
        u64::try_from(runs)? == answered,
        "recorded calls {runs} = answered {answered} (group commit)"
    );
    // A second process opening the database closes what the dead one left.
    let mut trace = s.thinkers(&["trace", "--list"]);
    let trace = trace.output().await?;
    ensure!(
        trace.status.success(),
        "{}",
        String::from_utf8_lossy(&trace.stderr)
    );
    let (jobs, _) = s.nothing_running().await?;
    let interrupted: Vec<_> = jobs.iter().filter(|(st, _)| st == "interrupted").collect();
    ensure!(
        interrupted.len() >= 2,
        "the chain and its call in flight: {jobs:?}"
    );
    for (_, why) in &interrupted {
        let why = why.as_deref().unwrap_or_default();
        ensure!(why.contains("no longer exists"), "{why}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_failing_midway_leaves_nothing_running_sqlite() -> Result<()> {
    failing_midway(false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_failing_midway_leaves_nothing_running_postgres() -> Result<()> {
    failing_midway(true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_cancels_records_and_exits_130_sqlite() -> Result<()> {
    stopped_by(false, "INT", 130).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_cancels_records_and_exits_130_postgres() -> Result<()> {
    stopped_by(true, "INT", 130).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_cancels_records_and_exits_143_sqlite() -> Result<()> {
    stopped_by(false, "TERM", 143).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_cancels_records_and_exits_143_postgres() -> Result<()> {
    stopped_by(true, "TERM", 143).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_then_a_second_process_marks_the_work_interrupted_sqlite() -> Result<()> {
    killed(false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_then_a_second_process_marks_the_work_interrupted_postgres() -> Result<()> {
    killed(true).await
}

/// `--max-cost` caps a run's spend: a call whose worst case would pass it is never sent, the
/// process fails naming the cap, and the record says why the run stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_cost_refuses_the_call_that_could_pass_it_sqlite() -> Result<()> {
    let Some(s) = Setup::new(false).await? else {
        return Ok(());
    };
    let out = s
        .run(
            "chain",
            r#"{"topic": "caps", "steps": 3, "entry": "sim-fast"}"#,
        )
        .args(["--max-cost", "0.000001 usd"])
        .output()
        .await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(!out.status.success(), "the run should stop: {stderr}");
    ensure!(
        stderr.contains("spending cap run") && stderr.contains("0.000001 USD"),
        "the cap is named: {stderr}"
    );
    ensure!(s.answered() == 0, "nothing was sent: {}", s.answered());
    let (jobs, runs) = s.nothing_running().await?;
    ensure!(runs == 0, "no model call recorded: {runs}");
    ensure!(
        jobs.iter().any(|(st, why)| st == "failed"
            && why.as_deref().is_some_and(|w| w.contains("spending cap"))),
        "the record says why: {jobs:?}"
    );
    // A bad amount is refused before anything runs, naming it.
    let out = s
        .run(
            "chain",
            r#"{"topic": "caps", "steps": 1, "entry": "sim-fast"}"#,
        )
        .args(["--max-cost-per-day", "ten"])
        .output()
        .await?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && stderr.contains("--max-cost-per-day") && stderr.contains("ten"),
        "{stderr}"
    );
    Ok(())
}
