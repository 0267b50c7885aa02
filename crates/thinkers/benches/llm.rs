//! Model calls through the dispatcher against thinkers-sim.
//!
//! Prints, for 2,000 concurrent `LlmCall`s:
//! * with a TPM limit that makes admission the bottleneck: the share of the limit used in the
//!   first (backlogged) minute, as the sim counted it (target ≥ 90 %), and the 429s the sim served
//!   (target 0);
//! * the client CPU µs per call, compared in the same run with a bare reqwest loop sending the
//!   same bodies to the same sim (target ≤ 2×).
//!
//! The sim runs in a child process (this binary re-executed), so the CPU measured is the client's
//! alone. Run with `cargo bench -p thinkers --bench llm`; it takes a little over a minute because
//! the limited phase spans two rate windows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use thinkers::Runtime;
use thinkers::conversation::Message;
use thinkers::llm::wire::encode;
use thinkers::llm::{ChatRequest, LlmCall};
use thinkers::model::{Catalog, Grade, OutputSize};

const CALLS: usize = 2_000;
const TPM: u64 = 60_000;
/// In-flight requests of both paths: the entry's concurrency limit for the dispatcher, the
/// `buffer_unordered` width for the bare loop.
const CONCURRENCY: usize = 256;
#[path = "common/mod.rs"]
mod common;

fn main() {
    if common::serve_sim_if_child(|| {
        thinkers_sim::SimConfig::builder()
            .model(thinkers_sim::SimModel::new("bench-limited").tpm(TPM))
            .model(thinkers_sim::SimModel::new("bench-free"))
            .log_bodies(true)
            .build()
            .unwrap()
    }) {
        return;
    }
    let (mut child, base) = common::spawn_sim();
    common::client_runtime().block_on(bench(&base));
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
id = "bench-limited"
provider = "sim"
model = "bench-limited"
grade = "small"
context_window = 128000
output_ceiling = 4096
tpm = {TPM}
price_in = 0.15
price_out = 0.6
currency = "USD"

[[entries]]
id = "bench-free"
provider = "sim"
model = "bench-free"
grade = "medium"
context_window = 128000
output_ceiling = 4096
concurrency = {CONCURRENCY}
price_in = 0.15
price_out = 0.6
currency = "USD"
"#
    );
    Catalog::from_toml_str(&toml, "bench.toml").unwrap()
}

fn request(i: usize) -> ChatRequest {
    ChatRequest::new(
        "You are a terse assistant. Answer in one short sentence.",
        vec![Message::user_text(format!(
            "Question {i}: what is admission control?"
        ))],
    )
}

async fn stats(base: &str) -> serde_json::Value {
    common::control()
        .get(format!("{base}/sim/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn logged(base: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = common::control()
        .get(format!("{base}/sim/requests"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v.as_array().cloned().unwrap_or_default()
}

async fn run_calls(rt: &Runtime, entry: &str, grade: Grade) -> (f64, Duration) {
    let cpu = ProcessTime::now();
    let wall = Instant::now();
    let handles: Vec<_> = (0..CALLS)
        .map(|i| {
            rt.dispatcher()
                .submit(LlmCall::new(grade, OutputSize::Verdict, request(i)).pinned(entry))
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    (
        cpu.elapsed().as_secs_f64() * 1e6 / CALLS as f64,
        wall.elapsed(),
    )
}

async fn bare_loop(base: &str, bodies: Vec<bytes::Bytes>) -> f64 {
    common::bare_loop(base, bodies, CONCURRENCY).await
}

async fn bench(base: &str) {
    let rt = Runtime::builder(catalog(base)).build().await.unwrap();
    let models = rt.models().clone();
    // The same bodies the runtime sends, encoded once for the bare loop.
    let entry = models
        .router()
        .catalog()
        .entry("bench-free")
        .unwrap()
        .clone();
    let target = models.target(&entry).unwrap();
    let bodies: Vec<bytes::Bytes> = (0..CALLS)
        .map(|i| {
            let mut r = request(i);
            r.max_output_tokens = entry.output_tokens(OutputSize::Verdict);
            encode(&target, &r).unwrap().body
        })
        .collect();

    // Warm up both paths (connections, tokenizer tables).
    let _ = bare_loop(base, bodies[..200].to_vec()).await;
    let _ = run_calls(&rt, "bench-free", Grade::Medium).await;

    let bare = bare_loop(base, bodies.clone()).await;
    let (ours, ours_wall) = run_calls(&rt, "bench-free", Grade::Medium).await;
    println!("client CPU per call, {CALLS} calls, {CONCURRENCY} in flight, no rate limit:");
    println!("  bare reqwest loop (same bodies)   {bare:>8.1} µs");
    println!(
        "  LlmCall through the dispatcher    {ours:>8.1} µs  ({:.2}× the bare loop; wall {:.2} s)",
        ours / bare,
        ours_wall.as_secs_f64()
    );

    // Admission as the bottleneck.
    let before = stats(base).await;
    let t0 = chrono::Utc::now();
    let (limited_cpu, wall) = run_calls(&rt, "bench-limited", Grade::Small).await;
    let after = stats(base).await;
    let served_429 = after["models"]["bench-limited"]["rate_limited"]
        .as_u64()
        .unwrap_or(0)
        - before["models"]["bench-limited"]["rate_limited"]
            .as_u64()
            .unwrap_or(0);
    // Tokens the sim charged (input + output, its own count) for requests that arrived in the
    // first minute, during which the queue was never empty.
    let logs = logged(base).await;
    let mut first_minute = 0u64;
    let mut calls_first_minute = 0;
    for r in logs.iter().filter(|r| r["model"] == "bench-limited") {
        let at = chrono::DateTime::parse_from_rfc3339(r["timestamp"].as_str().unwrap_or_default());
        if let Ok(at) = at
            && at.signed_duration_since(t0) < chrono::TimeDelta::seconds(60)
        {
            calls_first_minute += 1;
            first_minute += r["input_tokens"].as_u64().unwrap_or(0);
        }
    }
    let out_tokens = (after["models"]["bench-limited"]["output_tokens"]
        .as_u64()
        .unwrap_or(0)
        - before["models"]["bench-limited"]["output_tokens"]
            .as_u64()
            .unwrap_or(0)) as f64
        / CALLS as f64;
    let used = first_minute as f64 + out_tokens * f64::from(calls_first_minute);
    println!("\nadmission as the bottleneck: {CALLS} calls, TPM limit {TPM}");
    println!("  calls served in the first minute  {calls_first_minute}");
    println!(
        "  share of the limit used (1st min) {:>7.1} %",
        100.0 * used / TPM as f64
    );
    println!("  429s the sim served               {served_429}");
    println!(
        "  client CPU per call               {limited_cpu:>7.1} µs; wall {:.1} s",
        wall.as_secs_f64()
    );
    println!("\ntargets: share ≥ 90 %, 0 × 429, CPU ≤ 1.5× the bare loop");
}
