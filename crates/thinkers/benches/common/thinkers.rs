#![allow(dead_code)]
//! What both thinker benches share: the sim's models, the catalog over them, the bench thinker
//! (one read-only glossary tool, a two-field answer), the runtime, the bare reqwest loop that
//! replays the thinkers' own bodies, and the sim's request log.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use cpu_time::ProcessTime;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::Runtime;
use thinkers::job::FanOut;
use thinkers::llm::ChatResponse;
use thinkers::model::{Catalog, Grade, ModelDependent, OutputSize};
use thinkers::record::MemoryRecorder;
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput, TurnRequest, TurnSource};
use thinkers::tool::{Tool, ToolContext};

pub(crate) const RUNS: usize = 600;
pub(crate) const TOOL_ROUNDS: u32 = 2;
pub(crate) const CONCURRENCY: usize = 64;
pub(crate) const IDLE: usize = 10_000;

/// The sim both benches run in their child process: `bench-fast` answers at once after two
/// tool rounds; `bench-slow` holds every request open for minutes (the idle thinkers).
pub(crate) fn sim_config() -> thinkers_sim::SimConfig {
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
}

pub(crate) fn catalog(base: &str) -> Catalog {
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
pub(crate) struct LookupInput {
    /// The term to look up.
    term: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Definition {
    term: String,
    meaning: String,
}

/// A cheap read-only tool, so a tool round costs the runtime's work and little else.
pub(crate) struct Lookup;

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
pub(crate) struct Parked;

impl TurnSource for Parked {
    fn take_turn<'a>(
        &'a self,
        _turn: TurnRequest,
        _step: &'a FanOut,
    ) -> BoxFuture<'a, thinkers::Result<ChatResponse>> {
        Box::pin(std::future::pending())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Brief {
    /// A justification a reader can check: the approach and its steps.
    pub(crate) reasoning: String,
    /// The answer in a sentence.
    pub(crate) summary: String,
}

/// A catalog of one OpenAI-dialect sim entry `id` at small grade over `base`, with `extra`
/// lines added to the entry (limits, a tokenizer).
pub(crate) fn one_entry_catalog(base: &str, id: &str, extra: &str) -> Catalog {
    dialect_entry_catalog(base, "openai", id, extra)
}

/// The same in `dialect` (`openai`, `anthropic` or `gemini`), at the sim's URL for it.
pub(crate) fn dialect_entry_catalog(base: &str, dialect: &str, id: &str, extra: &str) -> Catalog {
    let base_url = match dialect {
        "anthropic" => base.to_owned(),
        "gemini" => format!("{base}/v1beta"),
        _ => format!("{base}/v1"),
    };
    let toml = format!(
        r#"
[providers.sim]
dialect = "{dialect}"
base_url = "{base_url}"
api_key_env = "THINKERS_SIM_KEY"

[[entries]]
id = "{id}"
provider = "sim"
model = "{id}"
grade = "small"
context_window = 128000
output_ceiling = 4096
price_in = 0.15
price_out = 0.6
currency = "USD"
{extra}
"#
    );
    Catalog::from_toml_str(&toml, "bench.toml").unwrap()
}

/// The admission and request-size benches' job: a system prompt, the one read-only `lookup`
/// tool and a [`Brief`] answer within `output` tokens, pinned to `entry`.
pub(crate) fn glossary_thinker(entry: &str, output: u32) -> Thinker<Brief> {
    glossary_thinker_of::<Brief>(entry, output)
}

/// The same job with an answer of type `A` (a `String` answer is the text-answer job).
pub(crate) fn glossary_thinker_of<A>(entry: &str, output: u32) -> Thinker<A>
where
    A: serde::de::DeserializeOwned + JsonSchema + Serialize + Send + Sync + 'static,
{
    let mut t = Thinker::<A>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Tokens(output)),
        "Answer from the glossary.",
    )
    .tool(Lookup)
    .class("bench_thinker");
    t.pin_model(entry.to_owned());
    t
}

pub(crate) fn thinker(entry: &str, grade: Grade) -> Thinker<Brief> {
    let mut t = Thinker::<Brief>::declared(
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
pub(crate) async fn runtime(base: &str, recorded: bool) -> (Runtime, MemoryRecorder) {
    let rec = MemoryRecorder::new();
    let mut builder = Runtime::builder(catalog(base));
    if recorded {
        builder = builder.recorder(std::sync::Arc::new(rec.clone()));
    }
    (builder.build().await.unwrap(), rec)
}

/// The sim's request log entries for `model`, in arrival order.
async fn logged(base: &str, model: &str) -> Vec<serde_json::Value> {
    let v: serde_json::Value = crate::common::control()
        .get(format!("{base}/sim/requests"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let serde_json::Value::Array(entries) = v else {
        return Vec::new();
    };
    entries
        .into_iter()
        .filter(|r| r["model"] == model)
        .collect()
}

pub(crate) async fn logged_bodies(base: &str, model: &str) -> Vec<bytes::Bytes> {
    logged(base, model)
        .await
        .iter()
        .map(|r| bytes::Bytes::from(r["raw_body"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

pub(crate) async fn reset(base: &str) {
    crate::common::control()
        .post(format!("{base}/sim/reset"))
        .send()
        .await
        .unwrap();
}

/// Run `RUNS` thinkers, at most `CONCURRENCY` model calls in flight; CPU µs in all and wall time.
pub(crate) async fn run_thinkers(rt: &Runtime) -> (f64, Duration) {
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

pub(crate) async fn bare_loop(base: &str, bodies: Vec<bytes::Bytes>) -> f64 {
    crate::common::bare_loop(base, bodies, CONCURRENCY).await
}

/// Rounds of each path, alternated so load from other processes hits both alike; medians are
/// reported.
pub(crate) const ROUNDS: usize = 15;

pub(crate) fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

pub(crate) fn rss_bytes() -> u64 {
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
pub(crate) async fn sim_requests(base: &str, model: &str) -> u64 {
    logged(base, model).await.len() as u64
}

/// Two runtimes over the sim, warmed up, and the bodies of one round of their calls.
pub(crate) struct Warm {
    /// Built as by default, without a database (rows are not kept).
    pub(crate) plain: Runtime,
    /// Every job and model-call row kept in memory.
    pub(crate) recorded: Runtime,
    _rec: MemoryRecorder,
    /// The request bodies of one round, in the order the sim logged them.
    pub(crate) bodies: Vec<bytes::Bytes>,
}

/// Warm both runtimes and both placements of the bare loop up (connections, tokenizer tables,
/// schema caches), capturing the bodies of one round on the way.
pub(crate) async fn warm_up(base: &str) -> Warm {
    let (plain, _) = runtime(base, false).await;
    let (recorded, rec) = runtime(base, true).await;
    let _ = run_thinkers(&plain).await;
    let _ = run_thinkers(&recorded).await;
    reset(base).await;
    let _ = run_thinkers(&plain).await;
    // The thinkers' own turns, plus the turns of any sub-thinker the sim's model picked (every
    // thinker is offered `sub_thinker` at standard depth). Answers depend only on content, so
    // every round makes these same calls.
    let bodies = logged_bodies(base, "bench-fast").await;
    assert!(
        bodies.len() >= RUNS * (TOOL_ROUNDS as usize + 1),
        "every model call was logged"
    );
    let _ = bare_loop(base, bodies.clone()).await;
    Warm {
        plain,
        recorded,
        _rec: rec,
        bodies,
    }
}
