//! Admission against a provider that enforces a per-minute figure over a 10-second window.
//!
//! thinkers-sim serves one model limited to 150,000 tokens per minute, enforced as 25,000 tokens
//! in any sliding 10 s (`SimModel::limit_window`), with honest 429s and rate-limit headers that
//! state the per-minute figure and what fits now. The catalog gives only the per-minute figure (`tpm = 150000`,
//! no `burst_seconds`). 50 runs are kept in flight for `THINKERS_BENCH_SECS` seconds (default
//! 60); each run is a `Thinker` at quick depth (so its palette is the one tool,
//! without `sub_thinker`) with a system prompt and one read-only tool,
//! against a sim that makes it call the tool twice (two rounds of one call) and then answer:
//! three model calls per run. The thinker's output budget is `THINKERS_BENCH_OUTPUT` tokens
//! (default 512; the sim charges the asked output at admission, as providers do, so a larger
//! budget leaves less of each window usable).
//!
//! Printed per scenario: completed and failed runs, the provider's 429s (the sim's own count),
//! tokens per minute used (the sim's count of answered requests' tokens) and the share of the
//! provider's real limit. Scenarios: the catalog's figure right (target: ≥ 95 % of the limit,
//! 0 provider 429s, 0 failed runs), then 2× too high (`tpm = 300000`; target: 0 failed runs,
//! 429s bounded). Run with `cargo bench -p thinkers --bench admission_window`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "common/mod.rs"]
mod common;
#[path = "common/thinkers.rs"]
mod thinkers_bench;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use thinkers::Runtime;
use thinkers::model::{Catalog, Depth};
use thinkers::thinker::{Thinker, ThinkerInput};
use thinkers_bench::Brief;

const MODEL: &str = "windowed";
/// The provider's real limit.
const TPM: u64 = 150_000;
const IN_FLIGHT: usize = 50;

fn sim_config() -> thinkers_sim::SimConfig {
    let profile = thinkers_sim::Profile {
        latency_ms: [5, 30],
        tool_rounds: 2,
        parallel_tool_calls: 1,
        ..thinkers_sim::Profile::default()
    };
    thinkers_sim::SimConfig::builder()
        .model(
            thinkers_sim::SimModel::new(MODEL)
                .tpm(TPM)
                .limit_window(Duration::from_secs(10))
                .profile(profile),
        )
        .build()
        .unwrap()
}

fn catalog(base: &str, tpm: u64) -> Catalog {
    thinkers_bench::one_entry_catalog(base, MODEL, &format!("tpm = {tpm}"))
}

fn thinker(output: u32) -> Thinker<Brief> {
    thinkers_bench::glossary_thinker(MODEL, output)
}

struct Outcome {
    completed: u64,
    failed: u64,
    rate_limited: u64,
    tokens_per_minute: f64,
}

async fn scenario(base: &str, catalog_tpm: u64, secs: u64, output: u32) -> Outcome {
    common::control()
        .post(format!("{base}/sim/reset"))
        .send()
        .await
        .unwrap();
    let rt = Runtime::builder(catalog(base, catalog_tpm))
        .build()
        .await
        .unwrap();
    let (completed, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let workers: Vec<_> = (0..IN_FLIGHT)
        .map(|w| {
            let d = rt.dispatcher().clone();
            let (completed, failed) = (completed.clone(), failed.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while Instant::now() < deadline {
                    i += 1;
                    // At quick depth no `sub_thinker` is offered: the palette is the one tool.
                    let input = ThinkerInput::query(format!("What is term {w}-{i}?"))
                        .with_depth(Depth::Quick);
                    match d.submit(thinker(output).ask(input)).await {
                        Ok(_) => completed.fetch_add(1, Ordering::Relaxed),
                        Err(e) => {
                            eprintln!("run failed: {e}");
                            failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            })
        })
        .collect();
    tokio::time::sleep_until(deadline.into()).await;
    // Tokens are counted up to the deadline; runs still going finish and are counted.
    let at_deadline = common::sim_stats(base, MODEL).await;
    for w in workers {
        w.await.unwrap();
    }
    let after = common::sim_stats(base, MODEL).await;
    let elapsed = start.elapsed().min(Duration::from_secs(secs));
    Outcome {
        completed: completed.load(Ordering::Relaxed),
        failed: failed.load(Ordering::Relaxed),
        rate_limited: after.rate_limited,
        tokens_per_minute: (at_deadline.input_tokens + at_deadline.output_tokens) as f64 * 60.0
            / elapsed.as_secs_f64(),
    }
}

fn print(name: &str, o: &Outcome) {
    println!(
        "{name:<28} completed {:>5}  failed {:>3}  provider 429s {:>4}  tokens/min {:>9.0} \
         ({:.1} % of {TPM})",
        o.completed,
        o.failed,
        o.rate_limited,
        o.tokens_per_minute,
        o.tokens_per_minute * 100.0 / TPM as f64
    );
}

fn main() {
    if common::serve_sim_if_child(sim_config) {
        return;
    }
    let secs = common::env_u64("THINKERS_BENCH_SECS", 60);
    let output = u32::try_from(common::env_u64("THINKERS_BENCH_OUTPUT", 512)).unwrap_or(512);
    let (mut child, base) = common::spawn_sim();
    common::client_runtime().block_on(async {
        println!(
            "provider: {TPM} tokens/min enforced as {} per sliding 10 s; {IN_FLIGHT} runs in \
             flight for {secs} s; output budget {output} tokens",
            TPM / 6
        );
        let right = scenario(&base, TPM, secs, output).await;
        print("catalog tpm = 150000", &right);
        let high = scenario(&base, 2 * TPM, secs, output).await;
        print("catalog tpm = 300000 (2x)", &high);
        let pct = right.tokens_per_minute * 100.0 / TPM as f64;
        let met = pct >= 95.0 && right.rate_limited == 0 && right.failed == 0 && high.failed == 0;
        println!(
            "target (>= 95 %, 0 429s, 0 failed; 2x: 0 failed): {}",
            if met { "met" } else { "MISSED" }
        );
    });
    let _ = child.kill();
    let _ = child.wait();
}
