//! Admission through every limit shape providers use, against what the provider really allows.
//!
//! The job (the issue's): a `Thinker::<String>` at quick depth with a system
//! prompt and one read-only tool `lookup`; thinkers-sim makes it call the tool twice (two rounds
//! of one call) and then answer in text: three model calls per run. `IN_FLIGHT` runs are kept in
//! flight for `THINKERS_BENCH_SECS` seconds per cell (default 30).
//!
//! The cells: limit shape (a token bucket holding the minute's figure, a fixed minute, a sliding
//! 10 s and a sliding 1 s window; the sim's, each pro rata) × limit kind (`tpm = 150000`,
//! `rpm = 600`, and, in Anthropic's dialect, `itpm = 120000` or `otpm = 20000`) × catalog
//! (right; 10× too high; absent; 10× too low, a ceiling the user chose, which must hold) ×
//! processes (1, and 3 runtimes sharing one budget through Redis).
//!
//! Printed per cell: utilisation of the true limit (the sim's settled tokens, or admitted
//! requests, per minute over the figure; for a catalog 10× too low, over the catalog's figure),
//! 429s served and their share of requests, failed runs, runs per minute, and the second of the
//! last 429 (how long a wrong catalog took to converge). Select cells with `THINKERS_MATRIX`
//! (every `/`-separated word must be a part of the cell's name, e.g. `tpm/right`), the dialect with
//! `THINKERS_MATRIX_DIALECT` (`openai`, the default, `anthropic` or `gemini`: no headers), the
//! sim's answer time with `THINKERS_MATRIX_LATENCY_MS` (`low,high`; default `5,30`), the
//! Redis URL with `THINKERS_TEST_REDIS_URL`; `THINKERS_MATRIX_TRACE=1` prints, each second of a
//! one-process cell, the 429s so far, the tokens the sim settled that second and each paced
//! axis's rate and its source. Run with
//! `cargo bench -p thinkers-redis --bench admission_matrix`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../../thinkers/benches/common/mod.rs"]
mod common;
#[path = "../../thinkers/benches/common/thinkers.rs"]
mod thinkers_bench;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use thinkers::Runtime;
use thinkers::dispatch::{BudgetStore, MemoryBudgets};
use thinkers::model::Depth;
use thinkers::thinker::ThinkerInput;
use thinkers_redis::RedisBudgets;
use thinkers_sim::LimitShape;

const TPM: u64 = 150_000;
const RPM: u64 = 600;
/// Input and output tokens per minute, for the providers that limit them apart (Anthropic,
/// Bedrock): each binds this job at about the rate `TPM` does.
const ITPM: u64 = 120_000;
const OTPM: u64 = 20_000;
const IN_FLIGHT: usize = 50;
const OUTPUT: u32 = 512;

const SHAPES: [(&str, LimitShape, u64); 4] = [
    ("bucket", LimitShape::TokenBucket, 60),
    ("fixed60", LimitShape::Fixed, 60),
    ("sliding10", LimitShape::Sliding, 10),
    ("sliding1", LimitShape::Sliding, 1),
];
const KINDS: [&str; 4] = ["tpm", "rpm", "itpm", "otpm"];
/// The catalog's figure as a multiple of the true one (`None`: absent).
const CATALOGS: [(&str, Option<f64>); 4] = [
    ("right", Some(1.0)),
    ("high10x", Some(10.0)),
    ("absent", None),
    ("low10x", Some(0.1)),
];

fn model(shape: &str, kind: &str) -> String {
    format!("m-{shape}-{kind}")
}

/// The sim's answer time in ms, `[low, high]`: 5 to 30 unless `THINKERS_MATRIX_LATENCY_MS`
/// says `low,high` (a hosted model takes 0.5 s to tens of seconds).
fn latency_ms() -> [u64; 2] {
    let Ok(v) = std::env::var("THINKERS_MATRIX_LATENCY_MS") else {
        return [5, 30];
    };
    let parsed = v.split_once(',').and_then(|(a, b)| {
        let (a, b): (u64, u64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        (a <= b).then_some([a, b])
    });
    parsed.unwrap_or_else(|| {
        panic!("THINKERS_MATRIX_LATENCY_MS=`{v}`: expected `low,high` in ms, low at most high")
    })
}

fn sim_config() -> thinkers_sim::SimConfig {
    let profile = thinkers_sim::Profile {
        latency_ms: latency_ms(),
        tool_rounds: 2,
        parallel_tool_calls: 1,
        ..thinkers_sim::Profile::default()
    };
    let mut b = thinkers_sim::SimConfig::builder();
    for (name, shape, window) in SHAPES {
        for kind in KINDS {
            let m = thinkers_sim::SimModel::new(model(name, kind))
                .limit_shape(shape)
                .limit_window(Duration::from_secs(window))
                .profile(profile.clone());
            b = b.model(match kind {
                "tpm" => m.tpm(TPM),
                "itpm" => m.itpm(ITPM),
                "otpm" => m.otpm(OTPM),
                _ => m.rpm(RPM),
            });
        }
    }
    b.build().unwrap()
}

struct Cell {
    shape: &'static str,
    kind: &'static str,
    catalog: (&'static str, Option<f64>),
    processes: usize,
}

impl Cell {
    fn name(&self) -> String {
        format!(
            "{}/{}/{}/{}p",
            self.shape, self.kind, self.catalog.0, self.processes
        )
    }

    fn truth(&self) -> u64 {
        match self.kind {
            "tpm" => TPM,
            "itpm" => ITPM,
            "otpm" => OTPM,
            _ => RPM,
        }
    }

    /// The dialect the cell speaks: separate input and output limits are Anthropic's (its
    /// headers state them apart), every other kind the one asked for.
    fn dialect<'a>(&self, asked: &'a str) -> &'a str {
        if matches!(self.kind, "itpm" | "otpm") {
            "anthropic"
        } else {
            asked
        }
    }

    /// The figure the cell must not exceed: the truth, or the user's lower ceiling.
    fn bound(&self) -> f64 {
        let t = self.truth() as f64;
        match self.catalog.1 {
            Some(f) if f < 1.0 => t * f,
            _ => t,
        }
    }

    fn limit_line(&self) -> String {
        match self.catalog.1 {
            None => String::new(),
            Some(f) => format!("{} = {}", self.kind, (self.truth() as f64 * f) as u64),
        }
    }
}

struct Outcome {
    utilisation: f64,
    rate_limited: u64,
    requests: u64,
    failed: u64,
    runs_per_minute: f64,
    last_429: Option<f64>,
}

fn tracing() -> bool {
    std::env::var("THINKERS_MATRIX_TRACE").is_ok_and(|v| v == "1")
}

async fn runtimes(
    base: &str,
    dialect: &str,
    cell: &Cell,
    traced: &Arc<MemoryBudgets>,
) -> Vec<Runtime> {
    let id = model(cell.shape, cell.kind);
    let mut out = Vec::new();
    let prefix = format!(
        "thinkers-bench-matrix:{}:{}",
        std::process::id(),
        cell.name()
    );
    for _ in 0..cell.processes {
        let mut b = Runtime::builder(thinkers_bench::dialect_entry_catalog(
            base,
            dialect,
            &id,
            &cell.limit_line(),
        ));
        if cell.processes > 1 {
            let url = std::env::var("THINKERS_TEST_REDIS_URL")
                .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
            let budgets = RedisBudgets::connect_with(&url, &prefix, Duration::from_secs(5))
                .await
                .expect("Redis answers (set THINKERS_TEST_REDIS_URL)");
            b = b.budgets(Arc::new(budgets));
        } else if tracing() {
            b = b.budgets(traced.clone());
        }
        out.push(b.build().await.unwrap());
    }
    out
}

async fn run_cell(base: &str, dialect: &str, cell: &Cell, secs: u64) -> Outcome {
    let dialect = cell.dialect(dialect);
    common::control()
        .post(format!("{base}/sim/reset"))
        .send()
        .await
        .unwrap();
    let id = model(cell.shape, cell.kind);
    let traced = Arc::new(MemoryBudgets::new());
    let rts = runtimes(base, dialect, cell, &traced).await;
    let (completed, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let mut workers = Vec::new();
    for w in 0..IN_FLIGHT {
        let d = rts[w % rts.len()].dispatcher().clone();
        let (completed, failed, id) = (completed.clone(), failed.clone(), id.clone());
        workers.push(tokio::spawn(async move {
            let mut i = 0;
            while Instant::now() < deadline {
                i += 1;
                let input =
                    ThinkerInput::query(format!("What is term {w}-{i}?")).with_depth(Depth::Quick);
                let t = thinkers_bench::glossary_thinker_of::<String>(&id, OUTPUT);
                match d.submit(t.ask(input)).await {
                    Ok(_) => completed.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        eprintln!("run failed: {e}");
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        }));
    }
    // The second of the last 429, from the sim's counts once a second.
    let mut last_429 = None;
    let mut seen = 0;
    let mut settled = 0;
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::sleep(left.min(Duration::from_secs(1))).await;
        let s = common::sim_stats(base, &id).await;
        if tracing() && cell.processes == 1 {
            let budget = thinkers::job::Seat::budget_for(&id);
            let rates: Vec<String> = traced
                .rates(&budget)
                .iter()
                .map(|r| format!("{:?} {:.0}/min ({:?})", r.axis, r.per_minute, r.source))
                .collect();
            let tokens = s.settled_tokens();
            println!(
                "  {:>5.1} s: {} x 429, {} tokens settled, {}",
                start.elapsed().as_secs_f64(),
                s.rate_limited,
                tokens - settled,
                rates.join(", ")
            );
            settled = tokens;
        }
        if s.rate_limited > seen {
            seen = s.rate_limited;
            last_429 = Some(start.elapsed().as_secs_f64());
        }
    }
    let at_deadline = common::sim_stats(base, &id).await;
    let done_at_deadline = completed.load(Ordering::Relaxed);
    // Runs still going are stopped (a cell at a tenth of the rate would take minutes to finish
    // them): only what happened up to the deadline counts.
    for w in &workers {
        w.abort();
    }
    for rt in rts {
        rt.shutdown().await.ok();
    }
    if at_deadline.rate_limited > seen {
        last_429 = Some(secs as f64);
    }
    let elapsed = Duration::from_secs(secs);
    let used = match cell.kind {
        "tpm" => at_deadline.settled_tokens_per_minute(elapsed),
        "itpm" => at_deadline.settled_input_tokens_per_minute(elapsed),
        "otpm" => at_deadline.settled_output_tokens_per_minute(elapsed),
        _ => at_deadline.admitted_per_minute(elapsed),
    };
    Outcome {
        utilisation: used / cell.bound(),
        rate_limited: at_deadline.rate_limited,
        requests: at_deadline.requests,
        failed: failed.load(Ordering::Relaxed),
        runs_per_minute: done_at_deadline as f64 * 60.0 / elapsed.as_secs_f64(),
        last_429,
    }
}

fn selected(name: &str) -> bool {
    match std::env::var("THINKERS_MATRIX") {
        Ok(f) if !f.is_empty() => f.split('/').all(|w| name.split('/').any(|part| part == w)),
        _ => true,
    }
}

fn main() {
    if common::serve_sim_if_child(sim_config) {
        return;
    }
    let secs = common::env_u64("THINKERS_BENCH_SECS", 30);
    let dialect = std::env::var("THINKERS_MATRIX_DIALECT").unwrap_or_else(|_| "openai".into());
    let (mut child, base) = common::spawn_sim();
    let mut cells = Vec::new();
    for processes in [1, 3] {
        for (shape, _, _) in SHAPES {
            for kind in KINDS {
                for catalog in CATALOGS {
                    let cell = Cell {
                        shape,
                        kind,
                        catalog,
                        processes,
                    };
                    if selected(&cell.name()) {
                        cells.push(cell);
                    }
                }
            }
        }
    }
    common::client_runtime().block_on(async {
        println!(
            "dialect {dialect} (itpm/otpm: anthropic); {IN_FLIGHT} runs in flight, {secs} s per \
             cell; true limits tpm = {TPM}, rpm = {RPM}, itpm = {ITPM} or otpm = {OTPM}; a \
             10x-too-low catalog is measured against its own figure"
        );
        println!(
            "{:<30} {:>7} {:>6} {:>7} {:>6} {:>9} {:>9}",
            "cell", "used", "429s", "429 %", "failed", "runs/min", "last 429"
        );
        for cell in &cells {
            let o = run_cell(&base, &dialect, cell, secs).await;
            println!(
                "{:<30} {:>6.1}% {:>6} {:>6.1}% {:>6} {:>9.1} {:>9}",
                cell.name(),
                o.utilisation * 100.0,
                o.rate_limited,
                o.rate_limited as f64 * 100.0 / o.requests.max(1) as f64,
                o.failed,
                o.runs_per_minute,
                o.last_429
                    .map_or_else(|| "-".to_owned(), |s| format!("{s:.0} s")),
            );
        }
    });
    let _ = child.kill();
    let _ = child.wait();
}
