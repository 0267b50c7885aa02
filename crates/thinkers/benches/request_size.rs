//! Bytes and tokens a thinker sends for one small job, against the bare loop a user would write
//! instead.
//!
//! The job (the one the admission bench runs): a system prompt, one user question, one read-only
//! tool (`lookup`); thinkers-sim makes the model call the tool twice (two rounds of one call) and
//! then answer, so three model calls per run. It is run in two kinds, each by two sides against
//! the same sim:
//!
//! - **text answer**: a `Thinker::<String>` at quick depth, and the same thinker asked at the
//!   default depth (`Depth::Standard`, what a user gets without choosing), against a bare reqwest
//!   loop that sends what the leanest framework sends for the job through Chat Completions: the
//!   system prompt, the question, the tool with its JSON schema, then each tool call and its
//!   result; no `response_format`, and the run ends on the model's text answer;
//! - **typed answer**: a `Thinker::<Brief>` at quick depth, against the same loop
//!   with the answer type as a strict `response_format` schema (what PydanticAI sends for a typed
//!   output), the run ending on an answer that decodes as a `Brief`.
//!
//! Printed per side: model calls, request bytes (the bodies the sim logged), input and output
//! tokens (the sim's own count, which is what its rate limits charge; it leaves the answer schema
//! out) and the `o200k_base` tokens of the whole request bodies (the answer schema and the JSON
//! around everything included) per run, then the ratios of the thinker to its loop. Targets: both
//! input token counts per run at most 1.05× the loop's for the text answer, 1.10× for the typed
//! one. Also printed: the bytes of each piece of framework guidance
//! the thinker may add to its system prompt. With `--dump` one request body of each side is
//! printed (the last call of the first run: the one carrying the most). Run with
//! `cargo bench --workspace --all-features --bench request_size [-- --dump]`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "common/mod.rs"]
mod common;
#[path = "common/thinkers.rs"]
mod thinkers_bench;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use thinkers::Runtime;
use thinkers::model::Depth;
use thinkers::thinker::ThinkerInput;
use thinkers_bench::Brief;

const TEXT_THINKER: &str = "text-thinker";
const TEXT_DEFAULT: &str = "text-thinker-default-depth";
const TEXT_LOOP: &str = "text-loop";
const TYPED_THINKER: &str = "typed-thinker";
const TYPED_LOOP: &str = "typed-loop";
const RUNS: usize = 20;
const OUTPUT: u32 = 512;
const SYSTEM: &str = "Answer from the glossary.";

fn sim_config() -> thinkers_sim::SimConfig {
    let profile = thinkers_sim::Profile {
        tool_rounds: 2,
        parallel_tool_calls: 1,
        ..thinkers_sim::Profile::default()
    };
    let mut config = thinkers_sim::SimConfig::builder();
    for model in [
        TEXT_THINKER,
        TEXT_DEFAULT,
        TEXT_LOOP,
        TYPED_THINKER,
        TYPED_LOOP,
    ] {
        config = config.model(thinkers_sim::SimModel::new(model).profile(profile.clone()));
    }
    config.log_bodies(true).build().unwrap()
}

/// The loop's tool, as a framework derives it from the same Rust type (`LookupInput`): the doc
/// comments become descriptions.
fn loop_tools() -> Value {
    json!([{
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a term up in the glossary.",
            "parameters": {
                "type": "object",
                "properties": {"term": {"type": "string", "description": "The term to look up."}},
                "required": ["term"],
                "additionalProperties": false
            },
            "strict": true
        }
    }])
}

/// The typed loop's answer format: `Brief` as a strict `json_schema`, as PydanticAI sends a
/// native structured output.
fn loop_format() -> Value {
    json!({
        "type": "json_schema",
        "json_schema": {
            "name": "Brief",
            "strict": true,
            "schema": {
                "type": "object",
                "properties": {
                    "reasoning": {
                        "type": "string",
                        "description": "A justification a reader can check: the approach and its steps."
                    },
                    "summary": {"type": "string", "description": "The answer in a sentence."}
                },
                "required": ["reasoning", "summary"],
                "additionalProperties": false
            }
        }
    })
}

/// One run of the bare loop: call, run each tool call, call again, until the model answers.
/// `typed` puts the strict `response_format` on every call and decodes the answer as a `Brief`;
/// otherwise the answer is the message's text.
async fn loop_run(client: &reqwest::Client, base: &str, model: &str, typed: bool, i: usize) {
    let mut messages = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": format!("What is term {i}?")}),
    ];
    for _ in 0..10 {
        let mut body = json!({
            "model": model,
            "messages": messages,
            "tools": loop_tools(),
            "max_completion_tokens": OUTPUT,
        });
        if typed {
            body["response_format"] = loop_format();
        }
        let answer: Value = client
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth("bench")
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let message = answer["choices"][0]["message"].clone();
        let Some(calls) = message["tool_calls"].as_array().filter(|c| !c.is_empty()) else {
            let content = message["content"].as_str().unwrap_or_default();
            if typed {
                let _: Brief = serde_json::from_str(content).expect("the loop's answer decodes");
            } else {
                assert!(!content.trim().is_empty(), "the loop's answer is text");
            }
            return;
        };
        let calls = calls.clone();
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": calls}));
        for call in calls {
            let args: Value =
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap_or("{}"))
                    .unwrap();
            let term = args["term"].as_str().unwrap_or_default();
            let result = json!({"term": term, "meaning": format!("the meaning of {term}")});
            messages.push(json!({
                "role": "tool",
                "tool_call_id": call["id"],
                "content": result.to_string(),
            }));
        }
    }
    panic!("the loop's run did not end in 10 calls");
}

/// `RUNS` runs of a thinker whose answer is an `A`, on `entry`, asked at `depth` (the default
/// depth when `None`).
async fn thinker_runs<A>(base: &str, entry: &str, depth: Option<Depth>)
where
    A: DeserializeOwned + JsonSchema + Serialize + Send + Sync + std::fmt::Debug + 'static,
{
    let catalog = thinkers_bench::one_entry_catalog(base, entry, "");
    let rt = Runtime::builder(catalog).build().await.unwrap();
    for i in 0..RUNS {
        let mut input = ThinkerInput::query(format!("What is term {i}?"));
        if let Some(depth) = depth {
            input = input.with_depth(depth);
        }
        let t = thinkers_bench::glossary_thinker_of::<A>(entry, OUTPUT);
        rt.dispatcher().submit(t.ask(input)).await.unwrap();
    }
    rt.shutdown().await.unwrap();
}

struct Side {
    calls: usize,
    bytes: usize,
    /// `o200k_base` tokens of the whole bodies.
    body_tokens: usize,
    input_tokens: u64,
    output_tokens: u64,
    bodies: Vec<bytes::Bytes>,
}

impl Side {
    async fn measure(base: &str, model: &str) -> Self {
        let bodies = thinkers_bench::logged_bodies(base, model).await;
        let s = common::sim_stats(base, model).await;
        Self {
            calls: bodies.len(),
            bytes: bodies.iter().map(bytes::Bytes::len).sum(),
            body_tokens: bodies
                .iter()
                .map(|b| {
                    tiktoken_rs::o200k_base_singleton()
                        .encode_ordinary(&String::from_utf8_lossy(b))
                        .len()
                })
                .sum(),
            input_tokens: s.input_tokens,
            output_tokens: s.output_tokens,
            bodies,
        }
    }

    fn print(&self, name: &str) {
        let runs = RUNS as f64;
        println!(
            "  {name:<9} calls/run {:>3.1}  request bytes/run {:>5.0}  input tokens/run {:>4.0} \
             (o200k of the bodies {:>4.0})  output tokens/run {:>3.0}",
            self.calls as f64 / runs,
            self.bytes as f64 / runs,
            self.input_tokens as f64 / runs,
            self.body_tokens as f64 / runs,
            self.output_tokens as f64 / runs,
        );
    }

    /// The last body of the first run: the call that carries the whole exchange.
    fn dump(&self, name: &str) {
        let per_run = self.calls / RUNS;
        if let Some(body) = per_run.checked_sub(1).and_then(|i| self.bodies.get(i)) {
            println!(
                "\n{name} (call {per_run} of run 1):\n{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}

/// Print one kind's two sides and their ratios; whether the token target was met.
fn compare(kind: &str, ours: &Side, bare: &Side, target: f64) -> bool {
    println!("{kind}:");
    ours.print("thinker");
    bare.print("bare loop");
    let bytes_ratio = ours.bytes as f64 / bare.bytes as f64;
    let token_ratio = ours.input_tokens as f64 / bare.input_tokens as f64;
    let body_ratio = ours.body_tokens as f64 / bare.body_tokens as f64;
    let met = token_ratio <= target && body_ratio <= target;
    println!(
        "  ratio thinker / bare loop: input tokens {token_ratio:.2}x, o200k of the bodies \
         {body_ratio:.2}x (target <= {target:.2}x: {}), request bytes {bytes_ratio:.2}x",
        if met { "met" } else { "MISSED" }
    );
    met
}

fn main() {
    if common::serve_sim_if_child(sim_config) {
        return;
    }
    let dump = std::env::args().any(|a| a == "--dump");
    let (mut child, base) = common::spawn_sim();
    common::client_runtime().block_on(async {
        thinker_runs::<String>(&base, TEXT_THINKER, Some(Depth::Quick)).await;
        thinker_runs::<String>(&base, TEXT_DEFAULT, None).await;
        thinker_runs::<Brief>(&base, TYPED_THINKER, Some(Depth::Quick)).await;
        let client = reqwest::Client::new();
        for i in 0..RUNS {
            loop_run(&client, &base, TEXT_LOOP, false, i).await;
            loop_run(&client, &base, TYPED_LOOP, true, i).await;
        }
        let text = Side::measure(&base, TEXT_THINKER).await;
        let text_default = Side::measure(&base, TEXT_DEFAULT).await;
        let text_loop = Side::measure(&base, TEXT_LOOP).await;
        let typed = Side::measure(&base, TYPED_THINKER).await;
        let typed_loop = Side::measure(&base, TYPED_LOOP).await;
        println!("{RUNS} runs per side; one tool, two tool rounds, then the answer");
        compare("text answer (String)", &text, &text_loop, 1.05);
        compare(
            "text answer (String), asked at the default depth",
            &text_default,
            &text_loop,
            1.05,
        );
        compare("typed answer (Brief)", &typed, &typed_loop, 1.10);
        println!(
            "guidance a thinker may add (none in this job): the parallel-calls hint (one line, \
             with more than one tool); the depth line {}-{} bytes (with sub_thinker, at \
             thorough, or at immediate with tools)",
            Depth::ALL.iter().map(|d| d.hint().len()).min().unwrap_or(0),
            Depth::ALL.iter().map(|d| d.hint().len()).max().unwrap_or(0),
        );
        if dump {
            text.dump("text answer, thinker");
            text_loop.dump("text answer, bare loop");
            typed.dump("typed answer, thinker");
            typed_loop.dump("typed answer, bare loop");
        }
    });
    let _ = child.kill();
    let _ = child.wait();
}
