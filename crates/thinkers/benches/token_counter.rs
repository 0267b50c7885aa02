//! What counting tokens costs a small program, and how far its reservations fall from the usage
//! the provider reports.
//!
//! 1. **A one-agent program.** The bench re-executes itself as a program that builds a runtime
//!    over thinkers-sim (in another process) and runs one thinker: a system prompt, one tool, two
//!    tool rounds and a typed answer, three model calls. It prints the process's CPU time for
//!    that first run and its peak resident memory (`VmHWM`). It runs once per tokenizer setting,
//!    alternated over `THINKERS_BENCH_ROUNDS` rounds (default 3), medians printed: `estimate`
//!    (the default) against `o200k_base` (tiktoken's exact count, what every entry used before).
//! 2. **Reservation error against the sim's reports.** A program making 20 runs (60 calls) per
//!    setting: from the 11th call on, the input tokens reserved (replayed from the bodies the sim
//!    logged, see `replay_reservations`) against the input tokens the sim reported.
//! 3. **Reservation error against an exact tokenizer.** Offline: a conversation grows over 60
//!    turns of mixed content (prose, JSON tool results, code, non-Latin text); each turn's
//!    request body is reserved by a calibrated counter, then "reported" as tiktoken's `o200k_base`
//!    count of the whole body (what an OpenAI model would be billed, within a few tokens of
//!    framing), which the counter learns from. Printed: how many reservations fell short of the
//!    report, and the mean and worst over-reservation, for both settings.
//!
//! Run with `cargo bench -p thinkers --bench token_counter`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "common/mod.rs"]
mod common;
#[path = "common/thinkers.rs"]
mod thinkers_bench;

use std::process::Command;

use cpu_time::ProcessTime;
use thinkers::Runtime;
use thinkers::conversation::Message;
use thinkers::llm::{ChatRequest, Dialect, TokenCounter, Tokenizer, WireTarget};
use thinkers::model::{Catalog, Depth};
use thinkers::thinker::ThinkerInput;

const MODEL: &str = "counted";
const AGENT_ENV: &str = "THINKERS_BENCH_AGENT";
/// Thinker runs of the program whose reservations are compared once calibrated.
const STEADY_RUNS: usize = 20;

fn sim_config() -> thinkers_sim::SimConfig {
    let profile = thinkers_sim::Profile {
        tool_rounds: 2,
        parallel_tool_calls: 1,
        ..thinkers_sim::Profile::default()
    };
    thinkers_sim::SimConfig::builder()
        .model(thinkers_sim::SimModel::new(MODEL).profile(profile))
        .log_bodies(true)
        .build()
        .unwrap()
}

fn catalog(base: &str, tokenizer: &str) -> Catalog {
    thinkers_bench::one_entry_catalog(base, MODEL, &format!("tokenizer = \"{tokenizer}\""))
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The one-agent program: `runs` thinker runs, one after the other; prints the CPU time of the
/// first and the peak resident memory, `cpu_ms peak_kib`.
fn agent(base: &str, tokenizer: &str, runs: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let runtime = Runtime::builder(catalog(base, tokenizer))
            .build()
            .await
            .unwrap();
        let mut cpu_ms = 0.0;
        for i in 0..runs {
            let input = ThinkerInput::query(format!("What is term {i}?")).with_depth(Depth::Quick);
            let cpu = ProcessTime::now();
            runtime
                .dispatcher()
                .submit(thinkers_bench::glossary_thinker(MODEL, 512).ask(input))
                .await
                .unwrap();
            if i == 0 {
                cpu_ms = cpu.elapsed().as_secs_f64() * 1e3;
            }
        }
        runtime.shutdown().await.unwrap();
        println!("{cpu_ms:.2} {}", peak_rss_kib());
    });
}

struct AgentRun {
    cpu_ms: f64,
    peak_kib: u64,
    /// Per call: the input tokens reserved and the input tokens the sim reported.
    calls: Vec<(u64, u64)>,
}

fn run_agent(base: &str, tokenizer: &str, runs: usize) -> AgentRun {
    let out = Command::new(std::env::current_exe().unwrap())
        .env(AGENT_ENV, format!("{base} {tokenizer} {runs}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut head = text.split_whitespace();
    let cpu_ms = head.next().unwrap().parse().unwrap();
    let peak_kib = head.next().unwrap().parse().unwrap();
    let calls = replay_reservations(base, tokenizer);
    AgentRun {
        cpu_ms,
        peak_kib,
        calls,
    }
}

/// The program's calls as the sim logged them (body and its own input count), then cleared: a
/// fresh counter set up as the runtime sets it up replays the program's reservations exactly
/// (one thinker's calls are sequential: each is reserved before, and calibrated after, the
/// report of the one before).
fn replay_reservations(base: &str, tokenizer: &str) -> Vec<(u64, u64)> {
    let logged: Vec<thinkers_sim::LoggedRequest> = common::client_runtime().block_on(async {
        // A client of this runtime's own: its connections live on the runtime that made them.
        let client = reqwest::Client::new();
        let logged = client
            .get(format!("{base}/sim/requests"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        client
            .post(format!("{base}/sim/reset"))
            .send()
            .await
            .unwrap();
        logged
    });
    let counter = TokenCounter::new();
    let tokenizer = Tokenizer::from_name(tokenizer).unwrap();
    counter.register(MODEL, Dialect::OpenAi, tokenizer);
    logged
        .iter()
        .map(|r| {
            let counted = counter.count_for(MODEL, r.raw_body.as_bytes());
            let reserved = counter.estimate(MODEL, counted);
            counter.calibrate(MODEL, counted, r.input_tokens);
            (reserved, r.input_tokens)
        })
        .collect()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Turn contents of several kinds, so the bytes-per-token ratio moves from turn to turn.
fn turn_text(i: usize) -> (String, String) {
    let user = match i % 4 {
        0 => format!("Please summarise what the glossary says about term {i} and its history."),
        1 => format!("Was ist Begriff {i}? Bitte erkläre es kurz und verständlich auf Deutsch."),
        2 => format!("用語{i}の意味を簡潔に説明してください。歴史的な背景も含めてください。"),
        _ => format!("fn lookup_{i}(term: &str) -> Option<&str> {{ GLOSSARY.get(term).copied() }}"),
    };
    let tool = format!(
        r#"{{"term":"term-{i}","meaning":"the meaning of term {i}, as the glossary gives it","sources":[{{"id":{i},"url":"https://example.org/glossary/{i}"}}],"score":0.{i:03}}}"#
    );
    (user, tool)
}

struct Errors {
    short: usize,
    calls: usize,
    mean_over: f64,
    worst_over: f64,
    worst_short: f64,
}

fn offline_errors(tokenizer: Tokenizer) -> Errors {
    let counter = TokenCounter::new();
    counter.register("e", Dialect::OpenAi, tokenizer);
    let exact = TokenCounter::new();
    exact.register("x", Dialect::OpenAi, Tokenizer::O200kBase);
    let target = WireTarget::new(Dialect::OpenAi, "http://127.0.0.1:9/v1", "gpt");
    let mut messages = Vec::new();
    let mut calls = Vec::new();
    for i in 0..60 {
        let (user, tool) = turn_text(i);
        messages.push(Message::user_text(user));
        messages.push(Message::assistant_text(tool));
        let req = ChatRequest::new("You answer from the glossary, briefly.", messages.clone());
        let enc = thinkers::llm::wire::encode(&target, &req).unwrap();
        let counted = counter.count_for("e", &enc.body);
        let reserved = counter.estimate("e", counted);
        let reported = exact.count_for("x", &enc.body);
        calls.push((reserved, reported));
        counter.calibrate("e", counted, reported);
    }
    errors(&calls)
}

/// How reservations compare with reports: `(reserved, reported)` per call.
fn errors(calls: &[(u64, u64)]) -> Errors {
    let (mut short, mut over, mut worst_over, mut worst_short) = (0, Vec::new(), 0.0f64, 0.0f64);
    for &(reserved, reported) in calls {
        let err = (reserved as f64 - reported as f64) / reported as f64;
        if reserved < reported {
            short += 1;
            worst_short = worst_short.min(err);
        } else {
            over.push(err);
            worst_over = worst_over.max(err);
        }
    }
    Errors {
        short,
        calls: calls.len(),
        mean_over: over.iter().sum::<f64>() / over.len().max(1) as f64,
        worst_over,
        worst_short,
    }
}

fn main() {
    if let Ok(args) = std::env::var(AGENT_ENV) {
        let mut args = args.split(' ');
        let (base, tokenizer) = (args.next().unwrap(), args.next().unwrap());
        agent(base, tokenizer, args.next().unwrap().parse().unwrap());
        return;
    }
    if common::serve_sim_if_child(sim_config) {
        return;
    }
    let rounds: usize = std::env::var("THINKERS_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let (mut child, base) = common::spawn_sim();
    let settings = ["estimate", "o200k_base"];
    let mut runs: Vec<Vec<AgentRun>> = vec![Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (i, s) in settings.iter().enumerate() {
            runs[i].push(run_agent(&base, s, 1));
        }
    }
    let steady: Vec<AgentRun> = settings
        .iter()
        .map(|s| run_agent(&base, s, STEADY_RUNS))
        .collect();
    let _ = child.kill();
    let _ = child.wait();

    println!("one-agent program, one thinker run (3 model calls), medians of {rounds} rounds");
    let mut summary = Vec::new();
    for (s, rs) in settings.iter().zip(&runs) {
        let cpu = median(rs.iter().map(|r| r.cpu_ms).collect());
        let rss = median(rs.iter().map(|r| r.peak_kib as f64).collect()) / 1024.0;
        summary.push((cpu, rss));
        let pairs: Vec<String> = rs[0]
            .calls
            .iter()
            .map(|(reserved, reported)| format!("{reserved}/{reported}"))
            .collect();
        println!(
            "  tokenizer = {s:<11} first-run CPU {cpu:>7.1} ms  peak RSS {rss:>6.1} MiB  \
             reserved/reported input tokens per call: {}",
            pairs.join(" ")
        );
    }
    println!(
        "  estimate / o200k_base: CPU {:.2}x, peak RSS {:.2}x",
        summary[0].0 / summary[1].0,
        summary[0].1 / summary[1].1
    );

    println!(
        "reservation error against the sim's reports, one program making {STEADY_RUNS} runs \
         ({} calls); the sim counts only the text a model reads, not the body's JSON",
        steady[0].calls.len()
    );
    for (s, run) in settings.iter().zip(&steady) {
        let e = errors(&run.calls[10..]);
        println!(
            "  tokenizer = {s:<11} calls 11 on: short of the report {:>2}/{} (worst {:+.1} %)  \
             mean over {:+.1} %  worst over {:+.1} %",
            e.short,
            e.calls,
            e.worst_short * 100.0,
            e.mean_over * 100.0,
            e.worst_over * 100.0
        );
    }

    println!("reservation error against o200k_base reports, a 60-turn conversation of mixed text");
    for (s, t) in settings
        .iter()
        .zip([Tokenizer::Estimate, Tokenizer::O200kBase])
    {
        let e = offline_errors(t);
        println!(
            "  tokenizer = {s:<11} short of the report {:>2}/{} (worst {:+.1} %)  mean over \
             {:+.1} %  worst over {:+.1} %",
            e.short,
            e.calls,
            e.worst_short * 100.0,
            e.mean_over * 100.0,
            e.worst_over * 100.0
        );
    }
}
