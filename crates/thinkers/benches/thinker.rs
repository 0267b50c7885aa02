//! Thinkers against thinkers-sim: what the runtime costs per model turn. (What an idle thinker
//! weighs, and the heap allocations per call, are `benches/thinker_memory.rs`: counting every
//! allocation costs two shared atomic updates each, which would add to both sides' CPU alike.)
//!
//! **Overhead per turn.** 600 single-objective thinkers, each running two tool rounds and a
//! final answer (1,800 model calls, plus three for each `sub_thinker` call the sim's model picks
//! among the offered tools), against a sim with zero latency; the client CPU µs per model call,
//! compared in the same run with a bare reqwest loop replaying the exact bodies the thinkers sent
//! (taken from the sim's request log) at the same concurrency. Target ≤ 1.5×. The thinkers' CPU
//! includes everything the runtime does around a call: admission, the loop's phases, rendering
//! and token counting, decoding, the tool jobs. It is measured twice in each round: on a runtime
//! built as by default without a database (rows are not kept), and on one that keeps every job
//! and model-call row in memory (`MemoryRecorder`). The bare loop keeps its client (and so its
//! connections) across rounds, as the runtime keeps its pool. It runs two ways each round: driven
//! from the bench's `block_on` (the main thread; every exchange crosses to the workers that run
//! the connections) and spawned onto a worker, as the runtime's jobs are; the second is cheaper
//! and steadier, so the ratio against it is the stricter one.
//!
//! The sim runs in a child process (this binary re-executed), so the CPU measured is the
//! client's alone. Run with `cargo bench -p thinkers --bench thinker`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "common/mod.rs"]
mod common;
#[path = "common/thinkers.rs"]
mod thinkers_bench;

use common::Placement;
use thinkers_bench::{
    CONCURRENCY, ROUNDS, RUNS, TOOL_ROUNDS, Warm, bare_loop, median, reset, run_thinkers, warm_up,
};

fn main() {
    if common::serve_sim_if_child(thinkers_bench::sim_config) {
        return;
    }
    let (mut child, base) = common::spawn_sim();
    common::client_runtime().block_on(overhead(&base));
    let _ = child.kill();
    let _ = child.wait();
}

async fn overhead(base: &str) {
    let Warm {
        plain,
        recorded,
        bodies,
        ..
    } = warm_up(base).await;
    let calls = bodies.len();
    let _ = common::bare_hyper_loop(base, bodies.clone(), CONCURRENCY).await;
    // THINKERS_BENCH_PROFILE=runtime|bare|bare-spawned|bare-hyper runs one side only, for a
    // profiler.
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
                "bare-hyper" => common::bare_hyper_loop(base, bodies.clone(), CONCURRENCY).await,
                _ => run_thinkers(&plain).await.0 / calls as f64,
            };
            println!("  {side}: {cpu:.1} µs CPU per call");
        }
        return;
    }
    let (mut bare, mut spawned, mut ours, mut kept, mut walls, mut hyper) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    for _ in 0..ROUNDS {
        reset(base).await;
        bare.push(bare_loop(base, bodies.clone(), Placement::BlockOn).await);
        let (cpu, wall) = run_thinkers(&plain).await;
        ours.push(cpu / calls as f64);
        walls.push(wall.as_secs_f64());
        spawned.push(bare_loop(base, bodies.clone(), Placement::Spawned).await);
        let (cpu, _) = run_thinkers(&recorded).await;
        kept.push(cpu / calls as f64);
        hyper.push(common::bare_hyper_loop(base, bodies.clone(), CONCURRENCY).await);
    }
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
    let (bare, spawned, ours, kept, wall, hyper) = (
        median(bare),
        median(spawned),
        median(ours),
        median(kept),
        median(walls),
        median(hyper),
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
        "  for scale: the spawned loop through hyper-util's client itself, without reqwest's \
         layers {hyper:.1} µs CPU per call"
    );
    println!("\ntarget: CPU ≤ 1.5× the bare loop (memory: `cargo bench --bench thinker_memory`)");
}
