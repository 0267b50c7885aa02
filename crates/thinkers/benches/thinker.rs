//! Thinkers against thinkers-sim: what the runtime costs per model call. (What an idle thinker
//! weighs, and the heap allocations per call, are `benches/thinker_memory.rs`.)
//!
//! 600 single-objective thinkers, each running two tool rounds and a final answer (1,800 model
//! calls, plus three for each `sub_thinker` call the sim's model picks), against a sim with zero
//! latency. The client CPU µs per model call is compared, in the same run, with a bare reqwest
//! loop replaying the exact bodies the thinkers sent (taken from the sim's request log) at the
//! same concurrency, driven as a `#[tokio::main]` program drives its main future. The thinkers'
//! CPU includes everything the runtime does around a call: admission, the loop's phases,
//! rendering and token counting, decoding, the tool jobs, and (in the second measure) keeping
//! every job and model-call row in memory. Target: at most 2× the bare loop.
//!
//! The sim runs in a child process (this binary re-executed), so the CPU measured is the
//! client's alone. Run with `cargo bench -p thinkers --bench thinker`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "common/mod.rs"]
mod common;
#[path = "common/thinkers.rs"]
mod thinkers_bench;

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
    let (mut bare, mut ours, mut kept, mut walls) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        reset(base).await;
        bare.push(bare_loop(base, bodies.clone()).await);
        let (cpu, wall) = run_thinkers(&plain).await;
        ours.push(cpu / calls as f64);
        walls.push(wall.as_secs_f64());
        let (cpu, _) = run_thinkers(&recorded).await;
        kept.push(cpu / calls as f64);
    }
    // Each round's runs are next to each other in time, so their ratio shares the machine's
    // conditions; the median of those paired ratios is steadier than a ratio of medians.
    let paired =
        |xs: &[f64], base: &[f64]| median(xs.iter().zip(base).map(|(x, b)| x / b).collect());
    let (ratio, ratio_kept) = (paired(&ours, &bare), paired(&kept, &bare));
    let (bare, ours, kept, wall) = (median(bare), median(ours), median(kept), median(walls));
    println!(
        "CPU per model call: {RUNS} thinkers × {} turns and their sub-thinkers' turns ({calls} \
         calls), {CONCURRENCY} in flight, zero latency; medians of {ROUNDS} alternated rounds",
        TOOL_ROUNDS + 1
    );
    println!("  bare reqwest loop, same bodies (tokio::main) {bare:>7.1} µs");
    println!(
        "  thinkers, rows not kept                     {ours:>7.1} µs  (wall {wall:.2} s per round)"
    );
    println!("  thinkers, every row kept in memory          {kept:>7.1} µs");
    println!(
        "  ratio to the bare loop (median of per-round ratios): {ratio:.2}×, {ratio_kept:.2}× with rows kept"
    );
    println!(
        "target: at most 2× the bare loop: {}",
        if ratio <= 2.0 && ratio_kept <= 2.0 {
            "met"
        } else {
            "MISSED"
        }
    );
}
