//! Prompt caching: what it saves on input cost on each dialect, and what it gives in runs per
//! minute under an Anthropic-style input-token limit that leaves cache reads out.
//!
//! The job: a `Thinker::<String>` at quick depth whose system prompt is a long
//! policy (26,572 bytes, about 6,600 tokens by the sim's count: 110 clauses of varied
//! sentences), with five read-only tools
//! (`lookup`, `policy_clause`, `order_status`, `customer_record`, `shipping_rates`); thinkers-sim
//! makes it call tools for nine rounds (two calls a round) and then answer in text: ten model
//! calls per run. Each run asks a different question, so only the tools and the system prompt are
//! shared between runs; each run's own turns are shared between its calls.
//!
//! **Part 1, input cost.** Per dialect (`openai`, `openai-responses`, `anthropic`, `gemini`,
//! `bedrock-converse` with a Claude model id), `THINKERS_CACHE_RUNS` runs (default 20), one after
//! another, with the catalog asking for caching (`prompt_cache` on, the default), then as many
//! with `prompt_cache = false` on the entry, each side on its own sim model (the sim caches as
//! the provider does on both: explicit breakpoints on Anthropic and Bedrock, so nothing is cached
//! without them; automatic prefixes on OpenAI and Gemini, which cache with or without the
//! switch). Prices are each provider's list prices per million tokens (input / cache read /
//! output): OpenAI GPT-5 1.25 / 0.125 / 10, Anthropic and Bedrock Claude Sonnet 3 / 0.3 / 15 with
//! cache writes at the catalog's default 1.25x input, Gemini 2.5 Pro 1.25 / 0.31 / 10. The record
//! (a `MemoryRecorder`) gives each call's input, cache reads and cache writes; the input cost is
//! priced with the entry's own `Pricing` (uncached input at `price_in`, reads at `price_cached`,
//! writes at `price_cache_write`). Printed per side: model calls, input tokens, cache reads and
//! writes per run, the sim's `cache_hit_ratio`, the input cost per run; then the saving against
//! the switch off and against no cache at all (every input token at `price_in`). Target: at
//! least 60% less on Anthropic.
//!
//! **Part 2, runs per minute under an input-token limit.** Two Anthropic-dialect sim models with
//! `itpm = THINKERS_CACHE_ITPM` (default 2,000,000: Anthropic's Sonnet figure at tier 4)
//! enforced as a token bucket (the algorithm Anthropic documents) holding 10 s worth of the
//! figure and refilled continuously; cache reads are not charged (the sim's default on
//! Anthropic), cache writes and uncached input are. The catalog entries state the same `itpm` (so
//! admission paces) and leave `cache_reads_count` at its Anthropic default (false); one asks for
//! caching, the other has `prompt_cache = false`. Each pair runs twice: with the catalog's
//! default pacing (no burst: an ask waits until the previous asks are paid for at the rate, and
//! a call books its whole input estimate, cache reads included, before it knows them) and with
//! `burst_seconds = 10`, what the bucket really accepts. Each of the four sides has its own sim
//! model. `THINKERS_CACHE_IN_FLIGHT` runs (default 20) are kept in flight for
//! `THINKERS_BENCH_SECS` seconds (default 60) per side, the sim answering in 20-80 ms; runs still
//! going at the deadline are abandoned. Printed per side: runs finished
//! per minute, and runs per minute as run-equivalents (model calls answered by the deadline per
//! minute over the ten calls a run makes: runs admitted side by side advance together and end
//! in lumps, so few finish within a minute when a run takes most of one), failed runs, 429s
//! served, utilisation of the limit (the sim's settled input tokens per minute over the figure),
//! settled input tokens per call and the sim's hit ratio; then both ratios on / off for each
//! catalog. Target: at least 2x (judged on run-equivalents).
//!
//! Run with `cargo bench --workspace --all-features --bench prompt_cache` (or, once built, the
//! binary `target/release/deps/prompt_cache-<hash> --bench` from `crates/thinkers`). Pick parts
//! with `THINKERS_CACHE_PARTS` (`1`, `2` or `1,2`, the default).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "common/mod.rs"]
mod common;
#[path = "common/thinkers.rs"]
mod thinkers_bench;

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::Runtime;
use thinkers::model::{Catalog, Depth, Grade, ModelDependent, OutputSize};
use thinkers::record::MemoryRecorder;
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers::tool::{Tool, ToolContext};
use thinkers_sim::LimitShape;

/// Tool rounds before the answer: ten model calls per run.
const TOOL_ROUNDS: u32 = 9;
const PARALLEL_CALLS: u32 = 2;
const OUTPUT: u32 = 512;
/// The burst the bucket of part 2 holds, in seconds of its figure (and `burst_seconds` in the
/// catalog entries that say so).
const BUCKET_SECS: u64 = 10;

/// A dialect of part 1 and its list prices per million tokens.
struct Dialect {
    name: &'static str,
    price_in: f64,
    price_cached: f64,
    price_out: f64,
}

const DIALECTS: [Dialect; 5] = [
    Dialect {
        name: "openai",
        price_in: 1.25,
        price_cached: 0.125,
        price_out: 10.0,
    },
    Dialect {
        name: "openai-responses",
        price_in: 1.25,
        price_cached: 0.125,
        price_out: 10.0,
    },
    Dialect {
        name: "anthropic",
        price_in: 3.0,
        price_cached: 0.3,
        price_out: 15.0,
    },
    Dialect {
        name: "gemini",
        price_in: 1.25,
        price_cached: 0.31,
        price_out: 10.0,
    },
    Dialect {
        name: "bedrock-converse",
        price_in: 3.0,
        price_cached: 0.3,
        price_out: 15.0,
    },
];

const ANTHROPIC: Dialect = Dialect {
    name: "anthropic",
    price_in: 3.0,
    price_cached: 0.3,
    price_out: 15.0,
};

/// The sim model (and catalog entry) of `dialect` with caching asked for (`on`) or not. Bedrock's
/// model id must name a Claude model for the runtime to send `cachePoint` blocks.
fn model_name(dialect: &str, on: bool) -> String {
    let side = if on { "on" } else { "off" };
    match dialect {
        "bedrock-converse" => format!("anthropic.claude-cache-{side}"),
        d => format!("{d}-cache-{side}"),
    }
}

/// Part 2's sides: caching asked for or not, and whether the catalog states the bucket's burst.
const LIMIT_SIDES: [(bool, bool); 4] = [(true, false), (false, false), (true, true), (false, true)];

/// The sim model (and catalog entry) of one side of part 2.
fn limit_model(on: bool, burst: bool) -> String {
    format!(
        "limit-cache-{}{}",
        if on { "on" } else { "off" },
        if burst { "-burst" } else { "" }
    )
}

fn itpm() -> u64 {
    common::env_u64("THINKERS_CACHE_ITPM", 2_000_000)
}

fn sim_config() -> thinkers_sim::SimConfig {
    let profile = thinkers_sim::Profile {
        tool_rounds: TOOL_ROUNDS,
        parallel_tool_calls: PARALLEL_CALLS,
        ..thinkers_sim::Profile::default()
    };
    let mut b = thinkers_sim::SimConfig::builder();
    for d in &DIALECTS {
        for on in [true, false] {
            b = b.model(
                thinkers_sim::SimModel::new(model_name(d.name, on)).profile(profile.clone()),
            );
        }
    }
    let limited = thinkers_sim::Profile {
        latency_ms: [20, 80],
        ..profile
    };
    for (on, burst) in LIMIT_SIDES {
        b = b.model(
            thinkers_sim::SimModel::new(limit_model(on, burst))
                .itpm(itpm())
                .limit_shape(LimitShape::TokenBucket)
                .limit_window(Duration::from_secs(BUCKET_SECS))
                .profile(limited.clone()),
        );
    }
    b.build().unwrap()
}

/// A catalog of one entry `id` (the sim model of the same name) in `dialect`, at `d`'s prices,
/// asking for caching or not, with `extra` entry lines. (`thinkers_bench::dialect_entry_catalog`
/// fixes its own prices, which an entry cannot state twice.)
fn catalog(base: &str, dialect: &str, id: &str, d: &Dialect, on: bool, extra: &str) -> Catalog {
    let provider = match dialect {
        "anthropic" => format!("base_url = \"{base}\"\napi_key_env = \"THINKERS_SIM_KEY\""),
        "gemini" => format!("base_url = \"{base}/v1beta\"\napi_key_env = \"THINKERS_SIM_KEY\""),
        "bedrock-converse" => format!(
            "base_url = \"{base}\"\nregion = \"us-east-1\"\naccess_key_env = \
             \"THINKERS_SIM_KEY\"\nsecret_key_env = \"THINKERS_SIM_KEY\""
        ),
        _ => format!("base_url = \"{base}/v1\"\napi_key_env = \"THINKERS_SIM_KEY\""),
    };
    let toml = format!(
        r#"
[providers.sim]
dialect = "{dialect}"
{provider}

[[entries]]
id = "{id}"
provider = "sim"
model = "{id}"
grade = "small"
context_window = 200000
output_ceiling = 4096
price_in = {}
price_cached = {}
price_out = {}
currency = "USD"
prompt_cache = {on}
{extra}
"#,
        d.price_in, d.price_cached, d.price_out
    );
    Catalog::from_toml_str(&toml, "prompt_cache.toml").unwrap()
}

/// The long system prompt: a support desk's policy, clause after clause of varied sentences
/// (26,572 bytes, about 6,600 tokens).
fn system_prompt() -> String {
    const SUBJECTS: [&str; 9] = [
        "a customer",
        "a reseller",
        "a warehouse partner",
        "a courier",
        "an enterprise account",
        "a first-time buyer",
        "a subscriber",
        "a marketplace seller",
        "a public-sector client",
    ];
    const EVENTS: [&str; 11] = [
        "reports a damaged parcel",
        "asks for a refund after the return window",
        "disputes a charge on the invoice",
        "requests an address change after dispatch",
        "reports a missing item",
        "asks to split a shipment",
        "cancels a recurring order",
        "claims a warranty repair",
        "asks for a tax exemption",
        "requests a bulk discount",
        "reports a late delivery",
    ];
    const ACTIONS: [&str; 10] = [
        "check the order history with the order_status tool before promising anything",
        "quote the matching policy clause word for word and cite its number",
        "look the customer record up and confirm the account tier",
        "compare the carrier options with shipping_rates and offer the cheapest compliant one",
        "escalate to a supervisor and say so plainly",
        "refuse politely and explain which rule applies",
        "offer store credit first and a refund only if it is declined",
        "ask for a photo or a tracking number before going further",
        "check the glossary with lookup for any term the customer uses loosely",
        "record the outcome in one sentence at the end of the answer",
    ];
    const LIMITS: [&str; 8] = [
        "within two business days",
        "before the end of the billing cycle",
        "only once per calendar year",
        "only for orders above 50 euros",
        "unless the goods were personalised",
        "provided the original packaging is kept",
        "except for perishable goods",
        "subject to the regional consumer law",
    ];
    const REASONS: [&str; 7] = [
        "because auditors sample these cases every quarter",
        "since the carrier contract caps liability per parcel",
        "as the finance team reconciles credits weekly",
        "because inconsistent answers have led to chargebacks",
        "so that the customer hears one answer from every agent",
        "as required by the data protection officer",
        "because fraud attempts cluster around this case",
    ];
    let mut out = String::from(
        "You are the support desk assistant of Northwind Supplies. Answer the customer's \
         question using the tools, and follow the policy below exactly. When the policy and the \
         customer disagree, the policy wins; when the policy is silent, say so and escalate.\n\n",
    );
    for n in 0..110 {
        out.push_str(&format!(
            "Clause {}.{}: When {} {}, the agent must {}, {}; this applies {}.\n",
            n / 10 + 1,
            n % 10 + 1,
            SUBJECTS[n % SUBJECTS.len()],
            EVENTS[(n * 7 + 3) % EVENTS.len()],
            ACTIONS[(n * 3 + 1) % ACTIONS.len()],
            REASONS[(n * 5 + 2) % REASONS.len()],
            LIMITS[(n * 11 + 4) % LIMITS.len()],
        ));
    }
    out
}

static SYSTEM: std::sync::LazyLock<String> = std::sync::LazyLock::new(system_prompt);

#[derive(Debug, Clone, Deserialize, JsonSchema)]
struct KeyInput {
    /// The identifier to look up (an order number, a customer id, a clause number or a
    /// destination country).
    key: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
struct Record {
    key: String,
    fields: Vec<(String, String)>,
}

/// A read-only tool answering a small record about its key.
macro_rules! record_tool {
    ($ty:ident, $name:literal, $description:literal, [$($field:literal),*]) => {
        struct $ty;

        impl Tool for $ty {
            const NAME: &'static str = $name;
            type Input = KeyInput;
            type Output = Record;
            fn description(&self) -> Cow<'static, str> {
                $description.into()
            }
            fn read_only(&self) -> bool {
                true
            }
            async fn call(&self, input: &KeyInput, _: &ToolContext<'_>) -> thinkers::Result<Record> {
                Ok(Record {
                    key: input.key.clone(),
                    fields: [$($field),*]
                        .iter()
                        .map(|f| ((*f).to_owned(), format!("{f} of {}", input.key)))
                        .collect(),
                })
            }
        }
    };
}

record_tool!(
    PolicyClause,
    "policy_clause",
    "Fetch one clause of the support policy by its number (for example 4.7), with its history \
     of amendments and the cases it was last applied to.",
    ["text", "amended", "last_applied", "owner"]
);
record_tool!(
    OrderStatus,
    "order_status",
    "Look an order up by its number: its items, payment state, dispatch date, carrier, tracking \
     number and any open claim on it.",
    [
        "items",
        "payment",
        "dispatched",
        "carrier",
        "tracking",
        "claim"
    ]
);
record_tool!(
    CustomerRecord,
    "customer_record",
    "Look a customer up by id: account tier, region, open tickets, credits granted this year and \
     whether the account is flagged for review.",
    ["tier", "region", "open_tickets", "credits", "flagged"]
);
record_tool!(
    ShippingRates,
    "shipping_rates",
    "List the carriers that deliver to a destination country, with their price per kilogram, \
     their delivery time and their liability cap per parcel.",
    ["carriers", "price_per_kg", "delivery_days", "liability_cap"]
);

fn thinker(entry: &str) -> Thinker<String> {
    let mut t = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Tokens(OUTPUT)),
        SYSTEM.as_str(),
    )
    .tool(thinkers_bench::Lookup)
    .tool(PolicyClause)
    .tool(OrderStatus)
    .tool(CustomerRecord)
    .tool(ShippingRates)
    .class("prompt_cache_bench");
    t.pin_model(entry.to_owned());
    t
}

fn question(i: usize) -> ThinkerInput {
    ThinkerInput::query(format!(
        "Customer C-{i:05} says order N-{:06} arrived damaged and wants a refund; what do we do?",
        i * 7919 % 1_000_000
    ))
    .with_depth(Depth::Quick)
}

/// One side of part 1: sums over its model-call rows.
#[derive(Default)]
struct CostSide {
    calls: u64,
    input: u64,
    read: u64,
    write: u64,
    output: u64,
    input_cost: f64,
    list_cost: f64,
    recorded_cost: f64,
    hit_ratio: f64,
    sim_input: u64,
}

async fn cost_side(base: &str, d: &Dialect, on: bool, runs: usize) -> CostSide {
    let id = model_name(d.name, on);
    let catalog = catalog(base, d.name, &id, d, on, "");
    let pricing = catalog.entry(&id).unwrap().pricing().unwrap().clone();
    let rec = MemoryRecorder::new();
    let rt = Runtime::builder(catalog)
        .recorder(Arc::new(rec.clone()))
        .build()
        .await
        .unwrap();
    for i in 0..runs {
        let t = thinker(&id);
        rt.dispatcher().submit(t.ask(question(i))).await.unwrap();
    }
    rt.shutdown().await.unwrap();
    let mut s = CostSide::default();
    for r in rec.llm_runs().iter().filter(|r| r.entry == id) {
        s.calls += 1;
        s.input += r.input_tokens;
        s.read += r.cached_tokens;
        s.write += r.cache_write_tokens;
        s.output += r.output_tokens;
        let uncached = r
            .input_tokens
            .saturating_sub(r.cached_tokens + r.cache_write_tokens);
        s.input_cost += pricing.cost(uncached, r.cached_tokens, r.cache_write_tokens, 0);
        s.list_cost += pricing.cost(r.input_tokens, 0, 0, 0);
        s.recorded_cost += r.cost.unwrap_or(f64::NAN);
    }
    let stats = common::sim_stats(base, &id).await;
    s.hit_ratio = stats.cache_hit_ratio();
    s.sim_input = stats.input_tokens;
    s
}

fn print_cost_side(dialect: &str, side: &str, s: &CostSide, runs: usize) {
    let r = runs as f64;
    println!(
        "{dialect:<17} {side:<4} {:>9.1} {:>10.0} {:>9.0} {:>9.0} {:>9.0} {:>7.1}% {:>7.1}% {:>11.5} {:>11.5}",
        s.calls as f64 / r,
        s.input as f64 / r,
        s.read as f64 / r,
        s.write as f64 / r,
        s.output as f64 / r,
        s.read as f64 * 100.0 / s.input.max(1) as f64,
        s.hit_ratio * 100.0,
        s.input_cost / r,
        s.recorded_cost / r,
    );
}

async fn part1(base: &str) -> bool {
    let runs = common::env_u64("THINKERS_CACHE_RUNS", 20) as usize;
    println!(
        "Part 1: input cost, {runs} runs per side one after another; per run: {} tool rounds of \
         {PARALLEL_CALLS} calls then the answer, a {}-byte system prompt, 5 tools",
        TOOL_ROUNDS,
        SYSTEM.len()
    );
    println!(
        "{:<17} {:<4} {:>9} {:>10} {:>9} {:>9} {:>9} {:>8} {:>8} {:>11} {:>11}",
        "dialect",
        "side",
        "calls/run",
        "input/run",
        "read/run",
        "write/run",
        "out/run",
        "read %",
        "sim hit",
        "input $/run",
        "all $/run"
    );
    let mut anthropic_met = false;
    let mut summary = Vec::new();
    for d in &DIALECTS {
        let on = cost_side(base, d, true, runs).await;
        let off = cost_side(base, d, false, runs).await;
        print_cost_side(d.name, "on", &on, runs);
        print_cost_side(d.name, "off", &off, runs);
        let vs_off = 1.0 - on.input_cost / off.input_cost;
        let vs_none = 1.0 - on.input_cost / on.list_cost;
        if d.name == "anthropic" {
            anthropic_met = vs_off >= 0.6;
        }
        summary.push((d.name, vs_off, vs_none, on.list_cost / runs as f64));
        assert_eq!(on.sim_input, on.input, "the record's input is the sim's");
    }
    println!(
        "{:<17} {:>22} {:>22} {:>24}",
        "saving on input", "vs prompt_cache=false", "vs no cache at all", "no-cache input $/run"
    );
    for (name, vs_off, vs_none, list) in summary {
        println!(
            "{name:<17} {:>21.1}% {:>21.1}% {:>24.5}",
            vs_off * 100.0,
            vs_none * 100.0,
            list
        );
    }
    println!(
        "target: Anthropic input cost at least 60% less with caching: {}",
        if anthropic_met { "met" } else { "MISSED" }
    );
    anthropic_met
}

struct LimitSide {
    /// Runs finished before the deadline, per minute.
    finished_per_minute: f64,
    /// Model calls answered by the deadline per minute, over the calls a run makes: the runs'
    /// throughput without the lumps of runs that progress side by side and end together.
    equivalent_per_minute: f64,
    failed: u64,
    rate_limited: u64,
    requests: u64,
    utilisation: f64,
    settled_per_call: f64,
    hit_ratio: f64,
}

async fn limit_side(base: &str, on: bool, burst: bool, secs: u64, in_flight: usize) -> LimitSide {
    let id = limit_model(on, burst);
    let figure = itpm();
    let mut extra = format!("itpm = {figure}");
    if burst {
        extra.push_str(&format!("\nburst_seconds = {BUCKET_SECS}"));
    }
    let catalog = catalog(base, "anthropic", &id, &ANTHROPIC, on, &extra);
    let rt = Runtime::builder(catalog).build().await.unwrap();
    let (completed, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut workers = Vec::new();
    for w in 0..in_flight {
        let d = rt.dispatcher().clone();
        let (completed, failed, id) = (completed.clone(), failed.clone(), id.clone());
        workers.push(tokio::spawn(async move {
            let mut i = 0;
            while Instant::now() < deadline {
                i += 1;
                let t = thinker(&id);
                let done = d.submit(t.ask(question(w * 100_000 + i))).await;
                if Instant::now() > deadline {
                    break;
                }
                match done {
                    Ok(_) => completed.fetch_add(1, Ordering::Relaxed),
                    Err(e) => {
                        eprintln!("run failed: {e}");
                        failed.fetch_add(1, Ordering::Relaxed)
                    }
                };
            }
        }));
    }
    tokio::time::sleep_until(deadline.into()).await;
    let at_deadline = common::sim_stats(base, &id).await;
    let done = completed.load(Ordering::Relaxed);
    // Runs still going are stopped: only what happened up to the deadline counts.
    for w in &workers {
        w.abort();
    }
    rt.shutdown().await.ok();
    let elapsed = Duration::from_secs(secs);
    let calls_per_run = f64::from(TOOL_ROUNDS + 1);
    LimitSide {
        finished_per_minute: done as f64 * 60.0 / secs as f64,
        equivalent_per_minute: at_deadline.answered as f64 * 60.0 / secs as f64 / calls_per_run,
        failed: failed.load(Ordering::Relaxed),
        rate_limited: at_deadline.rate_limited,
        requests: at_deadline.requests,
        utilisation: at_deadline.settled_input_tokens_per_minute(elapsed) / figure as f64,
        settled_per_call: at_deadline.settled_input_tokens as f64
            / at_deadline.answered.max(1) as f64,
        hit_ratio: at_deadline.cache_hit_ratio(),
    }
}

async fn part2(base: &str) -> bool {
    let secs = common::env_u64("THINKERS_BENCH_SECS", 60);
    let in_flight = common::env_u64("THINKERS_CACHE_IN_FLIGHT", 20) as usize;
    println!(
        "\nPart 2: runs per minute, Anthropic dialect, itpm = {} as a token bucket holding \
         {BUCKET_SECS} s of it, cache reads not charged; the catalog states the same itpm, paced \
         (its default) or with burst_seconds = {BUCKET_SECS}; {in_flight} runs in flight, {secs} s \
         per side, latency 20-80 ms",
        itpm()
    );
    println!(
        "{:<10} {:<16} {:>12} {:>12} {:>6} {:>6} {:>6} {:>7} {:>16} {:>8}",
        "side",
        "catalog",
        "finished/min",
        "calls/10/min",
        "failed",
        "429s",
        "429 %",
        "used",
        "settled in/call",
        "sim hit"
    );
    let mut met = false;
    let mut rates = Vec::new();
    for (on, burst) in LIMIT_SIDES {
        let s = limit_side(base, on, burst, secs, in_flight).await;
        println!(
            "{:<10} {:<16} {:>12.1} {:>12.1} {:>6} {:>6} {:>5.1}% {:>6.1}% {:>16.0} {:>7.1}%",
            if on { "cache on" } else { "cache off" },
            if burst {
                format!("burst_seconds={BUCKET_SECS}")
            } else {
                "paced (default)".to_owned()
            },
            s.finished_per_minute,
            s.equivalent_per_minute,
            s.failed,
            s.rate_limited,
            s.rate_limited as f64 * 100.0 / s.requests.max(1) as f64,
            s.utilisation * 100.0,
            s.settled_per_call,
            s.hit_ratio * 100.0,
        );
        rates.push((s.finished_per_minute, s.equivalent_per_minute));
        if let [on, off] = rates[..] {
            let ratio = |on: f64, off: f64| {
                if off > 0.0 {
                    format!("{:.2}x", on / off)
                } else {
                    "inf (none off)".to_owned()
                }
            };
            let ok = on.1 >= 2.0 * off.1;
            met |= ok;
            println!(
                "  cache on / off: {} in run-equivalents (answered calls / {}), {} in runs \
                 finished (target >= 2x: {})",
                ratio(on.1, off.1),
                TOOL_ROUNDS + 1,
                ratio(on.0, off.0),
                if ok { "met" } else { "MISSED" }
            );
            rates.clear();
        }
    }
    met
}

fn main() {
    if common::serve_sim_if_child(sim_config) {
        return;
    }
    let parts = std::env::var("THINKERS_CACHE_PARTS").unwrap_or_else(|_| "1,2".into());
    let (mut child, base) = common::spawn_sim();
    common::client_runtime().block_on(async {
        if parts.split(',').any(|p| p.trim() == "1") {
            part1(&base).await;
        }
        if parts.split(',').any(|p| p.trim() == "2") {
            part2(&base).await;
        }
    });
    let _ = child.kill();
    let _ = child.wait();
}
