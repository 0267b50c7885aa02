//! Thinkers against thinkers-sim: what the runtime costs per model turn, and what an idle thinker
//! weighs.
//!
//! Prints:
//! * **Overhead per turn.** 600 single-objective thinkers, each running two tool rounds and a
//!   final answer (1,800 model calls, plus three for each `sub_thinker` call the sim's model
//!   picks among the offered tools), against a sim with zero latency; the client CPU µs per model
//!   call, compared in the same run with a bare reqwest loop replaying the exact bodies the
//!   thinkers sent (taken from the sim's request log) at the same concurrency. Target ≤ 1.5×.
//!   The thinkers' CPU includes everything the runtime does around a call: admission, the loop's
//!   phases, rendering and token counting, decoding, the tool jobs. It is measured twice in each
//!   round: on a runtime built as by default without a database (rows are not kept), and on one
//!   that keeps every job and model-call row in memory (`MemoryRecorder`). The bare loop keeps its
//!   client (and so its connections) across rounds, as the runtime keeps its pool. It runs two
//!   ways each round: driven from the bench's `block_on` (the main thread; every exchange crosses
//!   to the workers that run the connections) and spawned onto a worker, as the runtime's jobs
//!   are; the second is cheaper and steadier, so the ratio against it is the stricter one.
//! * **Memory per idle thinker.** 10,000 thinkers submitted at once, each parked in a real model
//!   call the sim holds open for minutes; the bytes the process holds for them (a counting
//!   allocator, `stats_alloc`: live heap; and resident memory from /proc), divided by 10,000. Objective and query
//!   are a few bytes, so conversation content is negligible (and subtracted). Target ≤ 64 KiB.
//!
//! The sim runs in a child process (this binary re-executed), so the CPU and memory measured are
//! the client's alone. Run with `cargo bench -p thinkers --bench thinker`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::alloc::System;
use std::borrow::Cow;
use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use thinkers::Runtime;
use thinkers::job::JobContext;
use thinkers::llm::ChatResponse;
use thinkers::model::{Catalog, Grade, ModelDependent, OutputSize};
use thinkers::record::MemoryRecorder;
use thinkers::thinker::{
    SingleObjectiveThinker, ThinkerDeclaration, ThinkerInput, TurnRequest, TurnSource,
};
use thinkers::tool::{Tool, ToolContext};

/// Every allocation counted, so live heap bytes can be read (`stats_alloc`, no unsafe here).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Live heap bytes now.
fn live() -> isize {
    let s = GLOBAL.stats();
    s.bytes_allocated as isize - s.bytes_deallocated as isize + s.bytes_reallocated
}

const RUNS: usize = 600;
const TOOL_ROUNDS: u32 = 2;
const CONCURRENCY: usize = 64;
const IDLE: usize = 10_000;
#[path = "common/mod.rs"]
mod common;
use common::Placement;

fn main() {
    if common::serve_sim_if_child(|| {
        let fast = thinkers_sim::Profile {
            tool_rounds: TOOL_ROUNDS,
            ..thinkers_sim::Profile::default()
        };
        let slow = thinkers_sim::Profile {
            latency_ms: [600_000, 600_000],
            tool_rounds: 0,
            ..thinkers_sim::Profile::default()
        };
        thinkers_sim::SimConfig::builder()
            .model(thinkers_sim::SimModel::new("bench-fast").profile(fast))
            .model(thinkers_sim::SimModel::new("bench-slow").profile(slow))
            .log_bodies(true)
            .hang_ms(900_000)
            .build()
            .unwrap()
    }) {
        return;
    }
    let (mut child, base) = common::spawn_sim();
    // THINKERS_BENCH_ONLY=overhead|memory runs one part (for profiling one of them); see also
    // THINKERS_BENCH_PROFILE in `overhead`.
    let only = std::env::var("THINKERS_BENCH_ONLY").unwrap_or_default();
    common::client_runtime().block_on(async {
        if only != "memory" {
            overhead(&base).await;
        }
        if only != "overhead" {
            idle_memory(&base).await;
        }
    });
    let _ = child.kill();
    let _ = child.wait();
}

fn catalog(base: &str) -> Catalog {
    let toml = format!(
        r#"
[providers.sim]
dialect = "openai"
base_url = "{base}/v1"
api_key_env = "THINKERS_SIM_KEY"

[[entries]]
id = "bench-fast"
provider = "sim"
model = "bench-fast"
grade = "small"
context_window = 128000
output_ceiling = 4096
concurrency = {CONCURRENCY}
price_in = 0.15
price_out = 0.6
currency = "USD"

[[entries]]
id = "bench-slow"
provider = "sim"
model = "bench-slow"
grade = "medium"
context_window = 128000
output_ceiling = 4096
concurrency = 20000
price_in = 0.15
price_out = 0.6
currency = "USD"
"#
    );
    Catalog::from_toml_str(&toml, "bench.toml").unwrap()
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
struct LookupInput {
    /// The term to look up.
    term: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Definition {
    term: String,
    meaning: String,
}

/// A cheap read-only tool, so a tool round costs the runtime's work and little else.
struct Lookup;

impl Tool for Lookup {
    const NAME: &'static str = "lookup";
    type Input = LookupInput;
    type Output = Definition;
    fn description(&self) -> Cow<'static, str> {
        "Look a term up in the glossary.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(&self, input: &LookupInput, _: &ToolContext<'_>) -> thinkers::Result<Definition> {
        Ok(Definition {
            term: input.term.clone(),
            meaning: format!("the meaning of {}", input.term),
        })
    }
}

/// A turn source whose turns never come back: a thinker parked awaiting its model, without the
/// model call.
struct Parked;

impl TurnSource for Parked {
    fn take_turn<'a>(
        &'a self,
        _turn: TurnRequest,
        _cx: &'a JobContext,
    ) -> BoxFuture<'a, thinkers::Result<ChatResponse>> {
        Box::pin(std::future::pending())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Brief {
    /// A justification a reader can check: the approach and its steps.
    reasoning: String,
    /// The answer in a sentence.
    summary: String,
}

fn thinker(entry: &str, grade: Grade) -> SingleObjectiveThinker<Brief> {
    let mut t = SingleObjectiveThinker::<Brief>::new(
        ThinkerDeclaration::new(grade, OutputSize::Compact),
        "Answer from the glossary.",
    )
    .tool(Lookup)
    .class("bench_thinker");
    t.pin_model(entry.to_owned());
    t
}

/// A runtime over the sim: with every job and model-call row kept in memory (`recorded`), or as
/// built by default without a database (rows are not kept).
async fn runtime(base: &str, recorded: bool) -> (Runtime, MemoryRecorder) {
    let rec = MemoryRecorder::new();
    let mut builder = Runtime::builder(catalog(base));
    if recorded {
        builder = builder.recorder(std::sync::Arc::new(rec.clone()));
    }
    (builder.build().await.unwrap(), rec)
}

async fn logged_bodies(base: &str, model: &str) -> Vec<bytes::Bytes> {
    let v: serde_json::Value = reqwest::get(format!("{base}/sim/requests"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v.as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["model"] == model)
        .map(|r| bytes::Bytes::from(r["raw_body"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

async fn reset(base: &str) {
    reqwest::Client::new()
        .post(format!("{base}/sim/reset"))
        .send()
        .await
        .unwrap();
}

/// Run `RUNS` thinkers, at most `CONCURRENCY` model calls in flight; CPU µs in all and wall time.
async fn run_thinkers(rt: &Runtime) -> (f64, Duration) {
    let cpu = ProcessTime::now();
    let wall = Instant::now();
    let handles: Vec<_> = (0..RUNS)
        .map(|i| {
            let t = thinker("bench-fast", Grade::Small);
            rt.dispatcher()
                .submit(t.ask(ThinkerInput::query(format!("What is term {i}?"))))
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    (cpu.elapsed().as_secs_f64() * 1e6, wall.elapsed())
}

async fn bare_loop(base: &str, bodies: Vec<bytes::Bytes>, placement: Placement) -> f64 {
    common::bare_loop(base, bodies, CONCURRENCY, placement).await
}

/// Rounds of each path, alternated so load from other processes hits both alike; medians are
/// reported.
const ROUNDS: usize = 15;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

async fn overhead(base: &str) {
    let (plain, _) = runtime(base, false).await;
    let (recorded, _rec) = runtime(base, true).await;
    // Warm up (connections, tokenizer tables, schema caches), and capture the bodies.
    let _ = run_thinkers(&plain).await;
    let _ = run_thinkers(&recorded).await;
    reset(base).await;
    let _ = run_thinkers(&plain).await;
    // The thinkers' own turns, plus the turns of any sub-thinker the sim's model picked (every
    // thinker is offered `sub_thinker` at standard depth). Answers depend only on content, so
    // every round makes these same calls.
    let bodies = logged_bodies(base, "bench-fast").await;
    let calls = bodies.len();
    assert!(
        calls >= RUNS * (TOOL_ROUNDS as usize + 1),
        "every model call was logged"
    );
    let _ = bare_loop(base, bodies.clone(), Placement::BlockOn).await;
    let _ = bare_loop(base, bodies.clone(), Placement::Spawned).await;
    // THINKERS_BENCH_PROFILE=runtime|bare|bare-spawned runs one side only, for a profiler.
    if let Ok(side) = std::env::var("THINKERS_BENCH_PROFILE") {
        // THINKERS_BENCH_ROUNDS sets how many (more rounds make the warm-up's share negligible).
        let rounds = std::env::var("THINKERS_BENCH_ROUNDS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(ROUNDS);
        println!("  {calls} calls per round");
        for _ in 0..rounds {
            reset(base).await;
            let cpu = match side.as_str() {
                "bare" => bare_loop(base, bodies.clone(), Placement::BlockOn).await,
                "bare-spawned" => bare_loop(base, bodies.clone(), Placement::Spawned).await,
                _ => run_thinkers(&plain).await.0 / calls as f64,
            };
            println!("  {side}: {cpu:.1} µs CPU per call");
        }
        return;
    }
    let (mut bare, mut spawned, mut ours, mut kept, mut walls) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut bare_allocs, mut our_allocs) = (0usize, 0usize);
    for _ in 0..ROUNDS {
        reset(base).await;
        let a0 = GLOBAL.stats().allocations;
        bare.push(bare_loop(base, bodies.clone(), Placement::BlockOn).await);
        let a1 = GLOBAL.stats().allocations;
        let (cpu, wall) = run_thinkers(&plain).await;
        let a2 = GLOBAL.stats().allocations;
        bare_allocs += a1 - a0;
        our_allocs += a2 - a1;
        ours.push(cpu / calls as f64);
        walls.push(wall.as_secs_f64());
        spawned.push(bare_loop(base, bodies.clone(), Placement::Spawned).await);
        let (cpu, _) = run_thinkers(&recorded).await;
        kept.push(cpu / calls as f64);
    }
    // Allocations are counted process-wide, so these include the client's own background work;
    // they are stable across runs, unlike CPU time on a shared machine.
    let per_call = |n: usize| n as f64 / (ROUNDS * calls) as f64;
    // Each round's runs are next to each other in time, so their ratio shares the machine's
    // conditions; the median of those paired ratios is steadier than a ratio of medians.
    let paired =
        |xs: &[f64], base: &[f64]| median(xs.iter().zip(base).map(|(x, b)| x / b).collect());
    let ratios = format!(
        "{:.2}× built as by default, {:.2}× with rows kept in memory (block_on loop); \
         {:.2}× and {:.2}× (spawned loop)",
        paired(&ours, &bare),
        paired(&kept, &bare),
        paired(&ours, &spawned),
        paired(&kept, &spawned),
    );
    let (bare, spawned, ours, kept, wall) = (
        median(bare),
        median(spawned),
        median(ours),
        median(kept),
        median(walls),
    );
    println!(
        "overhead per model turn: {RUNS} thinkers × {} turns and their sub-thinkers' turns \
         ({calls} calls), {CONCURRENCY} in flight, zero latency; medians of {ROUNDS} alternated \
         rounds",
        TOOL_ROUNDS + 1
    );
    println!("  bare reqwest loop (same bodies), driven from block_on {bare:>6.1} µs CPU per call");
    println!(
        "  the same loop spawned onto a worker                 {spawned:>6.1} µs CPU per call"
    );
    println!(
        "  thinker turns through the runtime {ours:>8.1} µs CPU per call  ({:.2}× the block_on \
         loop, {:.2}× the spawned one; wall {wall:.2} s per round; built as by default, rows not \
         kept)",
        ours / bare,
        ours / spawned,
    );
    println!(
        "  the same, every row kept in memory {kept:>7.1} µs CPU per call  ({:.2}× and {:.2}×; \
         MemoryRecorder)",
        kept / bare,
        kept / spawned,
    );
    println!("  median of the per-round ratios: {ratios}");
    println!(
        "  heap allocations per call: bare {:.0}, through the runtime {:.0}",
        per_call(bare_allocs),
        per_call(our_allocs)
    );
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Requests that reached the sim for `model`: its request log is written on arrival, before the
/// latency (its stats count a request only once it is answered).
async fn sim_requests(base: &str, model: &str) -> u64 {
    let v: serde_json::Value = reqwest::get(format!("{base}/sim/requests"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v.as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["model"] == model)
        .count() as u64
}

async fn idle_memory(base: &str) {
    let (rt, _rec) = runtime(base, true).await;
    // One thinker first, so one-time tables (tokenizer, schemas, TLS-free client pools) are
    // allocated before the baseline.
    let warm = rt
        .dispatcher()
        .submit(thinker("bench-slow", Grade::Medium).ask(ThinkerInput::query("warm")));
    while sim_requests(base, "bench-slow").await < 1 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    warm.cancel();
    let _ = warm.await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let heap0 = live();
    let rss0 = rss_bytes();
    let content_bytes = "Answer from the glossary.".len() + "Define term 00000.".len();
    let handles: Vec<_> = (0..IDLE)
        .map(|i| {
            rt.dispatcher().submit(
                thinker("bench-slow", Grade::Medium)
                    .ask(ThinkerInput::query(format!("Define term {i:05}."))),
            )
        })
        .collect();
    let t0 = Instant::now();
    loop {
        let n = sim_requests(base, "bench-slow").await;
        if n > IDLE as u64 || t0.elapsed() > Duration::from_secs(120) {
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let parked = sim_requests(base, "bench-slow").await - 1;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let heap = (live() - heap0) as f64 / IDLE as f64 - content_bytes as f64;
    let rss = (rss_bytes().saturating_sub(rss0)) as f64 / IDLE as f64;
    println!(
        "\nmemory per idle thinker: {IDLE} thinkers awaiting the model \
         ({parked} requests held open by the sim)"
    );
    println!(
        "  live heap per thinker             {:>8.1} KiB",
        heap / 1024.0
    );
    println!(
        "  resident memory per thinker       {:>8.1} KiB",
        rss / 1024.0
    );
    for h in &handles {
        h.cancel();
    }
    for h in handles {
        let _ = h.await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let left = (live() - heap0) as f64 / IDLE as f64;
    println!(
        "  live heap per thinker after cancelling all {:>6.1} KiB",
        left / 1024.0
    );
    // The thinker alone: the same thinkers parked at the turn seam (no model call in flight).
    let heap0 = live();
    let parked: Vec<_> = (0..IDLE)
        .map(|i| {
            rt.dispatcher().submit(
                thinker("bench-slow", Grade::Medium)
                    .turns(Parked)
                    .ask(ThinkerInput::query(format!("Define term {i:05}."))),
            )
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let alone = (live() - heap0) as f64 / IDLE as f64 - content_bytes as f64;
    println!(
        "  of which the thinker alone (parked at the turn seam, no call) {:>6.1} KiB",
        alone / 1024.0
    );
    for h in &parked {
        h.cancel();
    }
    for h in parked {
        let _ = h.await;
    }

    // The same requests, sent by a bare reqwest client and held open alike: what HTTP in flight
    // costs by itself.
    let bodies = logged_bodies(base, "bench-slow").await;
    let bodies: Vec<_> = bodies.into_iter().skip(1).take(IDLE).collect();
    let client = reqwest::Client::new();
    let url = format!("{base}/v1/chat/completions");
    let heap0 = live();
    let tasks: Vec<_> = bodies
        .into_iter()
        .map(|body| {
            let client = client.clone();
            let url = url.clone();
            tokio::spawn(async move {
                let _ = client
                    .post(&url)
                    .header("authorization", "Bearer bench")
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await;
            })
        })
        .collect();
    let before = sim_requests(base, "bench-slow").await;
    let t0 = Instant::now();
    while sim_requests(base, "bench-slow").await < before + IDLE as u64 * 99 / 100
        && t0.elapsed() < Duration::from_secs(120)
    {
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let bare = (live() - heap0) as f64 / IDLE as f64;
    println!(
        "  for scale: a bare reqwest request held open the same way {:>6.1} KiB",
        bare / 1024.0
    );
    for t in &tasks {
        t.abort();
    }
    println!("\ntargets: CPU ≤ 1.5× the bare loop; ≤ 64 KiB per idle thinker");
}
