//! Thinkers against thinkers-sim: what an idle thinker weighs, and how many heap allocations a
//! model call makes through the runtime and through the bare reqwest loop.
//!
//! Prints:
//! * **Heap allocations per model call**, over rounds of the same 600 thinkers as
//!   `benches/thinker.rs` and of the bare loop replaying their bodies (spawned onto a worker).
//!   Counted process-wide, so they include the client's own background work; unlike CPU time,
//!   they barely move between runs.
//! * **Memory per idle thinker.** 10,000 thinkers submitted at once, each parked in a real model
//!   call the sim holds open for minutes; the bytes the process holds for them (live heap from a
//!   counting allocator, `stats_alloc`; resident memory from /proc), divided by 10,000. Objective
//!   and query are a few bytes, so conversation content is negligible (and subtracted). Target
//!   ≤ 64 KiB.
//!
//! Every allocation here is counted (two shared atomic updates each), which is why the CPU
//! comparison is a bench of its own (`benches/thinker.rs`). The sim runs in a child process. Run
//! with `cargo bench -p thinkers --bench thinker_memory`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::alloc::System;
use std::time::{Duration, Instant};

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use thinkers::JobHandle;
use thinkers::model::Grade;
use thinkers::thinker::ThinkerInput;

#[path = "common/mod.rs"]
mod common;
#[path = "common/thinkers.rs"]
mod thinkers_bench;

use thinkers_bench::{
    IDLE, Parked, Warm, bare_loop, logged_bodies, reset, rss_bytes, run_thinkers, runtime,
    sim_requests, thinker, warm_up,
};

/// Every allocation counted, so live heap bytes can be read (`stats_alloc`, no unsafe here).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Live heap bytes now.
fn live() -> isize {
    let s = GLOBAL.stats();
    s.bytes_allocated as isize - s.bytes_deallocated as isize + s.bytes_reallocated
}

/// Rounds of allocation counting per side.
const ALLOC_ROUNDS: usize = 3;

fn main() {
    if common::serve_sim_if_child(thinkers_bench::sim_config) {
        return;
    }
    let (mut child, base) = common::spawn_sim();
    common::client_runtime().block_on(async {
        allocations(&base).await;
        idle_memory(&base).await;
    });
    let _ = child.kill();
    let _ = child.wait();
}

/// Cancel every thinker and wait until each has ended.
async fn cancel_all<T: 'static>(handles: Vec<JobHandle<T>>) {
    for h in &handles {
        h.cancel();
    }
    for h in handles {
        let _ = h.await;
    }
}

async fn allocations(base: &str) {
    let Warm { plain, bodies, .. } = warm_up(base).await;
    let calls = bodies.len();
    let (mut bare, mut ours) = (0usize, 0usize);
    for _ in 0..ALLOC_ROUNDS {
        reset(base).await;
        let a0 = GLOBAL.stats().allocations;
        bare_loop(base, bodies.clone()).await;
        let a1 = GLOBAL.stats().allocations;
        run_thinkers(&plain).await;
        let a2 = GLOBAL.stats().allocations;
        bare += a1 - a0;
        ours += a2 - a1;
    }
    let per_call = |n: usize| n as f64 / (ALLOC_ROUNDS * calls) as f64;
    println!(
        "heap allocations per model call ({calls} calls per round, {ALLOC_ROUNDS} rounds): bare \
         reqwest loop {:.0}, through the runtime {:.0}",
        per_call(bare),
        per_call(ours)
    );
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
    cancel_all(handles).await;
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
    cancel_all(parked).await;

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
    println!("\ntarget: ≤ 64 KiB per idle thinker");
}
