//! A race under a provider's rate limit: thinkers against the bare loop a user writes without a
//! framework, which retries each 429 as the server asks.
//!
//! The target: under 150,000 TPM over 10 s windows with 50 in flight, over a run of at
//! least 3 minutes, thinkers finishes at least 90% of the runs per minute of the bare loop, with
//! none failed and no 429.
//!
//! The job (the one `admission_matrix` and `request_size` run): a system prompt, one user
//! question, one read-only tool `lookup`; thinkers-sim makes the model call the tool twice (two
//! rounds of one call) and then answer in text: three model calls per run. The sim's model
//! enforces `tpm = 150000` as a sliding 10 s window (25,000 tokens in any 10 seconds), charging
//! each request its input estimate plus the output it asks for (512) at admission and settling to
//! what it really cost once answered.
//!
//! The two sides run one after another, each for `THINKERS_BENCH_SECS` seconds (default 180) with
//! `THINKERS_RACE_IN_FLIGHT` runs in flight (default 50), each against its own sim model with the
//! same limit (`race-bare`, `race-thinkers`), so their counts and windows never mix:
//!
//! 1. **bare loop**: reqwest and no framework, speaking Chat Completions (`/v1/chat/completions`):
//!    the system prompt and the question, `tools = [lookup]`, `max_completion_tokens = 512`, no
//!    `response_format`; for each tool call the assistant message and a tool result are
//!    appended and the model is called again, until it answers in text. A 429 (or a 5xx, or a
//!    failed connection, counted apart) is retried with the same request after the wait the server
//!    asks for: `retry-after-ms` if present, else `retry-after` seconds, else 1 s, up to
//!    `THINKERS_RACE_RETRIES` retries per call (default 8). The rule is the one a user writes by
//!    hand, or gets from a tenacity-style `retry` decorator with a handful of attempts, honouring
//!    the server's wait exactly; the OpenAI Python SDK's default is 2 retries (with its own
//!    backoff from 0.5 s to 8 s, or the server's wait when it asks for at most 60 s), which would
//!    fail far more runs here. A call that runs out of retries fails its run. With 50 in flight
//!    the callers a refusal told to wait wake together at the second the room returns, most lose
//!    again, and over minutes 8 retries fail most runs (their tokens spent for nothing);
//!    `THINKERS_RACE_RETRIES=1000` gives the loop that never gives up, the stronger baseline.
//! 2. **thinkers**: a `Runtime` whose catalog entry for the model states the true limit
//!    (`tpm = 150000`), running `glossary_thinker_of::<String>` at quick depth.
//!
//! Both sides keep their runs in flight with one worker task per slot, each starting its next run
//! as soon as its last one ended. A run counts as finished only if it finished before the
//! deadline; the runs still in flight at the deadline are abandoned (counted neither finished nor
//! failed), and the sim's counts are read at the deadline, on both sides alike.
//!
//! Printed per side: runs finished per minute, failed runs, the 429s the sim served, the 5xx (and
//! failed connections) the loop saw, utilisation of the true limit (the sim's settled tokens per
//! minute over 150,000), and the sim's settled tokens per finished run and per answered call. Then
//! the ratio thinkers / bare loop of runs per minute, and whether the target holds. Progress goes
//! to stderr every 30 s (runs, 429s, and the settled tokens per minute of the last 30 s).
//! `THINKERS_RACE_WINDOW_SECS` sets the sim's window (default 10; 1 is the shape in which one
//! call's output ask is a fifth of the window's tokens). `THINKERS_RACE_DIALECT=anthropic` runs
//! both sides in Anthropic Messages instead (the bare loop
//! posts to `/v1/messages` with `tool_use` / `tool_result` blocks; Anthropic's 429 carries only
//! `retry-after` in whole seconds). Run with
//! `cargo bench -p thinkers --all-features --bench limit_race`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "common/mod.rs"]
mod common;
#[path = "common/thinkers.rs"]
mod thinkers_bench;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thinkers::Runtime;
use thinkers::model::Depth;
use thinkers::thinker::ThinkerInput;
use thinkers_sim::LimitShape;

const TPM: u64 = 150_000;
/// The sim's sliding window: `THINKERS_RACE_WINDOW_SECS` (default 10, the issue's).
fn window() -> Duration {
    Duration::from_secs(common::env_u64("THINKERS_RACE_WINDOW_SECS", 10).max(1))
}
const OUTPUT: u32 = 512;
const SYSTEM: &str = "Answer from the glossary.";
const BARE: &str = "race-bare";
const THINKERS: &str = "race-thinkers";
/// The target: thinkers' runs per minute over the bare loop's.
const TARGET: f64 = 0.90;
const PROGRESS: Duration = Duration::from_secs(30);
/// A run's model calls at most (the sim's job takes three).
const MAX_CALLS: usize = 10;

fn sim_config() -> thinkers_sim::SimConfig {
    let profile = thinkers_sim::Profile {
        latency_ms: [5, 30],
        tool_rounds: 2,
        parallel_tool_calls: 1,
        ..thinkers_sim::Profile::default()
    };
    let mut b = thinkers_sim::SimConfig::builder();
    for name in [BARE, THINKERS] {
        b = b.model(
            thinkers_sim::SimModel::new(name)
                .tpm(TPM)
                .limit_shape(LimitShape::Sliding)
                .limit_window(window())
                .profile(profile.clone()),
        );
    }
    b.build().unwrap()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    OpenAi,
    Anthropic,
}

impl Dialect {
    fn name(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        }
    }
}

/// What a side's workers count.
#[derive(Default)]
struct Counts {
    finished: AtomicU64,
    failed: AtomicU64,
    /// 429s the bare loop was answered with.
    rate_limited: AtomicU64,
    /// 5xx answers and failed connections the bare loop saw.
    server_errors: AtomicU64,
}

/// One side's outcome at the deadline.
struct Outcome {
    finished: u64,
    failed: u64,
    server_errors: u64,
    stats: thinkers_sim::ModelStats,
    elapsed: Duration,
}

impl Outcome {
    fn runs_per_minute(&self) -> f64 {
        self.finished as f64 * 60.0 / self.elapsed.as_secs_f64()
    }

    fn utilisation(&self) -> f64 {
        self.stats.settled_tokens_per_minute(self.elapsed) / TPM as f64
    }

    fn print(&self, name: &str) {
        println!(
            "{name:<10} {:>6} {:>9.1} {:>7} {:>6} {:>5} {:>6.1}% {:>8.0} {:>9.0}",
            self.finished,
            self.runs_per_minute(),
            self.failed,
            self.stats.rate_limited,
            self.server_errors,
            self.utilisation() * 100.0,
            self.stats.settled_tokens() as f64 / self.finished.max(1) as f64,
            self.stats.settled_tokens() as f64 / self.stats.answered.max(1) as f64,
        );
    }
}

/// Keep `in_flight` runs of `run` going for `secs` against the sim's `model`, printing progress
/// to stderr; what had happened by the deadline.
async fn drive<F, Fut>(
    base: &str,
    side: &'static str,
    model: &str,
    secs: u64,
    in_flight: usize,
    counts: Arc<Counts>,
    run: F,
) -> Outcome
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let reported = Arc::new(AtomicU64::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for w in 0..in_flight {
        let (run, counts, reported) = (run.clone(), counts.clone(), reported.clone());
        workers.spawn(async move {
            let mut i = 0;
            while Instant::now() < deadline {
                i += 1;
                let outcome = run(w, i).await;
                if Instant::now() >= deadline {
                    break;
                }
                match outcome {
                    Ok(()) => counts.finished.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        if reported.fetch_add(1, Ordering::Relaxed) < 5 {
                            eprintln!("{side}: a run failed: {e}");
                        }
                        counts.failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        });
    }
    let mut last = (Duration::ZERO, 0u64);
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let next = start + last.0 + PROGRESS;
        tokio::time::sleep_until(next.min(deadline).into()).await;
        let at = start.elapsed().min(Duration::from_secs(secs));
        if Instant::now() >= deadline {
            break;
        }
        let s = common::sim_stats(base, model).await;
        let settled = s.settled_tokens();
        let tpm = (settled - last.1) as f64 * 60.0 / (at - last.0).as_secs_f64();
        let finished = counts.finished.load(Ordering::Relaxed);
        eprintln!(
            "[{side} {:>3.0} s] runs {finished} ({:.1}/min), failed {}, 429s {}, settled \
             tokens/min over the last {:.0} s {tpm:.0} ({:.1}% of the limit)",
            at.as_secs_f64(),
            finished as f64 * 60.0 / at.as_secs_f64(),
            counts.failed.load(Ordering::Relaxed),
            s.rate_limited,
            (at - last.0).as_secs_f64(),
            tpm * 100.0 / TPM as f64,
        );
        last = (at, settled);
    }
    let stats = common::sim_stats(base, model).await;
    let finished = counts.finished.load(Ordering::Relaxed);
    let failed = counts.failed.load(Ordering::Relaxed);
    // The runs still in flight are abandoned: only what finished by the deadline counts.
    workers.abort_all();
    while workers.join_next().await.is_some() {}
    Outcome {
        finished,
        failed,
        server_errors: counts.server_errors.load(Ordering::Relaxed),
        stats,
        elapsed: Duration::from_secs(secs),
    }
}

/// The wait a refusal asks for: `retry-after-ms`, else `retry-after` seconds, else 1 s.
fn server_wait(headers: &reqwest::header::HeaderMap) -> Duration {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
    };
    if let Some(ms) = number("retry-after-ms") {
        Duration::from_secs_f64(ms / 1000.0)
    } else if let Some(secs) = number("retry-after") {
        Duration::from_secs_f64(secs)
    } else {
        Duration::from_secs(1)
    }
}

/// The bare loop's client and settings.
struct Bare {
    client: reqwest::Client,
    base: String,
    dialect: Dialect,
    retries: u64,
    counts: Arc<Counts>,
}

impl Bare {
    /// One model call of `body`, retried on a 429, a 5xx or a failed connection after the wait the
    /// server asks for, at most `retries` times; the answer's JSON.
    async fn call(&self, body: &Value) -> Result<Value, String> {
        let body = bytes::Bytes::from(serde_json::to_vec(body).unwrap());
        let mut retried = 0;
        loop {
            let request = match self.dialect {
                Dialect::OpenAi => self
                    .client
                    .post(format!("{}/v1/chat/completions", self.base))
                    .bearer_auth("bench"),
                Dialect::Anthropic => self
                    .client
                    .post(format!("{}/v1/messages", self.base))
                    .header("x-api-key", "bench")
                    .header("anthropic-version", "2023-06-01"),
            };
            let sent = request
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await;
            let (wait, why) = match sent {
                Ok(r) if r.status().is_success() => {
                    return r.json().await.map_err(|e| format!("the answer: {e}"));
                }
                Ok(r) if r.status() == reqwest::StatusCode::TOO_MANY_REQUESTS => {
                    self.counts.rate_limited.fetch_add(1, Ordering::Relaxed);
                    (server_wait(r.headers()), "429".to_owned())
                }
                Ok(r) if r.status().is_server_error() => {
                    self.counts.server_errors.fetch_add(1, Ordering::Relaxed);
                    (server_wait(r.headers()), r.status().to_string())
                }
                Ok(r) => {
                    let status = r.status();
                    return Err(format!("{status}: {}", r.text().await.unwrap_or_default()));
                }
                Err(e) => {
                    self.counts.server_errors.fetch_add(1, Ordering::Relaxed);
                    (Duration::from_secs(1), e.to_string())
                }
            };
            if retried == self.retries {
                return Err(format!("{why} after {retried} retries"));
            }
            retried += 1;
            tokio::time::sleep(wait).await;
        }
    }

    /// One run: call, answer each tool call, call again, until the model answers in text.
    async fn run(&self, i: String) -> Result<(), String> {
        match self.dialect {
            Dialect::OpenAi => self.run_openai(i).await,
            Dialect::Anthropic => self.run_anthropic(i).await,
        }
    }

    async fn run_openai(&self, question: String) -> Result<(), String> {
        let mut messages = vec![
            json!({"role": "system", "content": SYSTEM}),
            json!({"role": "user", "content": question}),
        ];
        for _ in 0..MAX_CALLS {
            let body = json!({
                "model": BARE,
                "messages": messages,
                "tools": openai_tools(),
                "max_completion_tokens": OUTPUT,
            });
            let answer = self.call(&body).await?;
            let message = answer["choices"][0]["message"].clone();
            let Some(calls) = message["tool_calls"].as_array().filter(|c| !c.is_empty()) else {
                let content = message["content"].as_str().unwrap_or_default();
                return if content.trim().is_empty() {
                    Err(format!("no text answer: {answer}"))
                } else {
                    Ok(())
                };
            };
            let calls = calls.clone();
            messages.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
            for call in calls {
                let args: Value =
                    serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
                        .map_err(|e| format!("the tool call's arguments: {e}"))?;
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": lookup(&args),
                }));
            }
        }
        Err(format!("no answer in {MAX_CALLS} calls"))
    }

    async fn run_anthropic(&self, question: String) -> Result<(), String> {
        let mut messages = vec![json!({"role": "user", "content": question})];
        for _ in 0..MAX_CALLS {
            let body = json!({
                "model": BARE,
                "system": SYSTEM,
                "messages": messages,
                "tools": anthropic_tools(),
                "max_tokens": OUTPUT,
            });
            let answer = self.call(&body).await?;
            let content = answer["content"].as_array().cloned().unwrap_or_default();
            let uses: Vec<&Value> = content.iter().filter(|b| b["type"] == "tool_use").collect();
            if uses.is_empty() {
                let text: String = content.iter().filter_map(|b| b["text"].as_str()).collect();
                return if text.trim().is_empty() {
                    Err(format!("no text answer: {answer}"))
                } else {
                    Ok(())
                };
            }
            let results: Vec<Value> = uses
                .iter()
                .map(|u| {
                    json!({
                        "type": "tool_result",
                        "tool_use_id": u["id"],
                        "content": lookup(&u["input"]),
                    })
                })
                .collect();
            messages.push(json!({"role": "assistant", "content": content}));
            messages.push(json!({"role": "user", "content": results}));
        }
        Err(format!("no answer in {MAX_CALLS} calls"))
    }
}

/// The `lookup` tool's result for its arguments, as the thinkers' `Lookup` answers.
fn lookup(args: &Value) -> String {
    let term = args["term"].as_str().unwrap_or_default();
    json!({"term": term, "meaning": format!("the meaning of {term}")}).to_string()
}

/// The `lookup` tool's input schema, as a framework derives it from `LookupInput`.
fn lookup_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"term": {"type": "string", "description": "The term to look up."}},
        "required": ["term"],
        "additionalProperties": false
    })
}

/// The loop's tool in Chat Completions (what `request_size`'s text-answer loop sends).
fn openai_tools() -> Value {
    json!([{
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a term up in the glossary.",
            "parameters": lookup_schema(),
            "strict": true
        }
    }])
}

/// The loop's tool in Anthropic Messages.
fn anthropic_tools() -> Value {
    json!([{
        "name": "lookup",
        "description": "Look a term up in the glossary.",
        "input_schema": lookup_schema()
    }])
}

fn question(w: usize, i: u64) -> String {
    format!("What is term {w}-{i}?")
}

async fn bare_side(
    base: &str,
    dialect: Dialect,
    secs: u64,
    in_flight: usize,
    retries: u64,
) -> Outcome {
    let counts = Arc::new(Counts::default());
    let bare = Arc::new(Bare {
        client: reqwest::Client::new(),
        base: base.to_owned(),
        dialect,
        retries,
        counts: counts.clone(),
    });
    drive(base, "bare", BARE, secs, in_flight, counts, move |w, i| {
        let bare = bare.clone();
        async move { bare.run(question(w, i)).await }
    })
    .await
}

async fn thinkers_side(base: &str, dialect: Dialect, secs: u64, in_flight: usize) -> Outcome {
    let catalog = thinkers_bench::dialect_entry_catalog(
        base,
        dialect.name(),
        THINKERS,
        &format!("tpm = {TPM}"),
    );
    let rt = Runtime::builder(catalog).build().await.unwrap();
    let d = rt.dispatcher().clone();
    let counts = Arc::new(Counts::default());
    let mut outcome = drive(
        base,
        "thinkers",
        THINKERS,
        secs,
        in_flight,
        counts,
        move |w, i| {
            let d = d.clone();
            async move {
                let input = ThinkerInput::query(question(w, i)).with_depth(Depth::Quick);
                let t = thinkers_bench::glossary_thinker_of::<String>(THINKERS, OUTPUT);
                d.submit(t.ask(input))
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        },
    )
    .await;
    rt.shutdown().await.ok();
    // The sim's 5xx (it serves none unless asked to).
    outcome.server_errors = outcome.stats.faults;
    outcome
}

fn main() {
    if common::serve_sim_if_child(sim_config) {
        return;
    }
    let secs = common::env_u64("THINKERS_BENCH_SECS", 180);
    let in_flight = common::env_u64("THINKERS_RACE_IN_FLIGHT", 50) as usize;
    let retries = common::env_u64("THINKERS_RACE_RETRIES", 8);
    let dialect = match std::env::var("THINKERS_RACE_DIALECT").as_deref() {
        Ok("anthropic") => Dialect::Anthropic,
        Ok("openai") | Err(_) => Dialect::OpenAi,
        Ok(other) => panic!("THINKERS_RACE_DIALECT: `{other}` is neither openai nor anthropic"),
    };
    let (mut child, base) = common::spawn_sim();
    common::client_runtime().block_on(async {
        println!(
            "limit_race: tpm = {TPM} as a sliding {} s window ({} tokens in any {} s); \
             {in_flight} runs in flight; {secs} s per side; dialect {}",
            window().as_secs(),
            TPM * window().as_secs() / 60,
            window().as_secs(),
            dialect.name(),
        );
        println!(
            "bare loop: each 429, 5xx or failed connection retried with the same request after \
             retry-after-ms, else retry-after s, else 1 s; at most {retries} retries per call"
        );
        println!(
            "thinkers: glossary_thinker_of::<String> at quick depth, catalog tpm = {TPM} (the \
             true figure)"
        );
        println!(
            "runs in flight at the deadline are abandoned (neither finished nor failed); the \
             sim's counts are read at the deadline; tok/run = settled tokens / finished runs"
        );
        let bare = bare_side(&base, dialect, secs, in_flight, retries).await;
        let ours = thinkers_side(&base, dialect, secs, in_flight).await;
        println!(
            "{:<10} {:>6} {:>9} {:>7} {:>6} {:>5} {:>7} {:>8} {:>9}",
            "side", "runs", "runs/min", "failed", "429s", "5xx", "used", "tok/run", "tok/call"
        );
        bare.print("bare loop");
        ours.print("thinkers");
        let ratio = ours.runs_per_minute() / bare.runs_per_minute().max(f64::MIN_POSITIVE);
        let yes = |b: bool| if b { "yes" } else { "NO" };
        let met = ratio >= TARGET && ours.failed == 0 && ours.stats.rate_limited == 0;
        println!(
            "ratio thinkers / bare loop, runs per minute: {ratio:.3}; target {}: ratio >= \
             {TARGET:.2} {}, thinkers failed 0 {}, thinkers 429s 0 {}",
            if met { "met" } else { "MISSED" },
            yes(ratio >= TARGET),
            yes(ours.failed == 0),
            yes(ours.stats.rate_limited == 0),
        );
    });
    let _ = child.kill();
    let _ = child.wait();
}
