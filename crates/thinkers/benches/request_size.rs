//! Bytes and tokens a thinker sends for one small job, against a lean agent loop doing the same.
//!
//! The job (the one the admission bench runs): a system prompt, one read-only tool (`lookup`), a
//! two-field typed answer; thinkers-sim makes the model call the tool twice (two rounds of one
//! call) and then answer, so three model calls per run. Each run is made twice against the same
//! sim:
//!
//! - **thinkers**: a `SingleObjectiveThinker<Brief>` at quick depth (its palette is the one tool);
//! - **lean loop**: a bare reqwest loop that sends what the leanest framework sends for the same
//!   job through Chat Completions: the system prompt, the question, the tool with its JSON schema,
//!   the answer type as a strict `response_format` schema, then each tool call and its result.
//!
//! Printed per side: request bytes per run (the bodies the sim logged) and input and output
//! tokens per run (the sim's own count, which is what its rate limits charge), then the ratio of
//! thinkers to the lean loop. Target: at most 1.25× the lean loop's bytes. With `--dump` the three
//! bodies of one thinkers run are printed as well. Run with
//! `cargo bench -p thinkers --bench request_size`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "common/mod.rs"]
mod common;
#[path = "common/thinkers.rs"]
mod thinkers_bench;

use serde_json::{Value, json};
use thinkers::Runtime;
use thinkers::model::Depth;
use thinkers::thinker::ThinkerInput;
use thinkers_bench::Brief;

const THINKERS_MODEL: &str = "sized";
const LEAN_MODEL: &str = "sized-lean";
const RUNS: usize = 20;
const OUTPUT: u32 = 512;
const SYSTEM: &str = "Answer from the glossary.";

fn sim_config() -> thinkers_sim::SimConfig {
    let profile = thinkers_sim::Profile {
        tool_rounds: 2,
        parallel_tool_calls: 1,
        ..thinkers_sim::Profile::default()
    };
    thinkers_sim::SimConfig::builder()
        .model(thinkers_sim::SimModel::new(THINKERS_MODEL).profile(profile.clone()))
        .model(thinkers_sim::SimModel::new(LEAN_MODEL).profile(profile))
        .log_bodies(true)
        .build()
        .unwrap()
}

/// The lean loop's tool and answer format, as a framework derives them from the same Rust types
/// (`LookupInput`, `Brief`): the doc comments become descriptions.
fn lean_tools() -> Value {
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

fn lean_format() -> Value {
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

/// One run of the lean loop: call, run each tool call, call again, until the model answers.
async fn lean_run(client: &reqwest::Client, base: &str, i: usize) {
    let mut messages = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": format!("What is term {i}?")}),
    ];
    for _ in 0..10 {
        let body = json!({
            "model": LEAN_MODEL,
            "messages": messages,
            "tools": lean_tools(),
            "response_format": lean_format(),
            "max_completion_tokens": OUTPUT,
        });
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
            let _: Brief = serde_json::from_str(content).expect("the lean loop's answer decodes");
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
    panic!("the lean loop's run did not end in 10 calls");
}

struct Side {
    calls: usize,
    bytes: usize,
    input_tokens: u64,
    output_tokens: u64,
}

impl Side {
    async fn measure(base: &str, model: &str) -> (Self, Vec<bytes::Bytes>) {
        let bodies = thinkers_bench::logged_bodies(base, model).await;
        let s = common::sim_stats(base, model).await;
        let side = Self {
            calls: bodies.len(),
            bytes: bodies.iter().map(bytes::Bytes::len).sum(),
            input_tokens: s.input_tokens,
            output_tokens: s.output_tokens,
        };
        (side, bodies)
    }

    fn print(&self, name: &str) {
        let runs = RUNS as f64;
        println!(
            "{name:<10} calls/run {:>4.1}  request bytes/run {:>7.0}  input tokens/run {:>6.0}  \
             output tokens/run {:>5.0}",
            self.calls as f64 / runs,
            self.bytes as f64 / runs,
            self.input_tokens as f64 / runs,
            self.output_tokens as f64 / runs,
        );
    }
}

fn main() {
    if common::serve_sim_if_child(sim_config) {
        return;
    }
    let dump = std::env::args().any(|a| a == "--dump");
    let (mut child, base) = common::spawn_sim();
    common::client_runtime().block_on(async {
        let catalog = thinkers_bench::one_entry_catalog(&base, THINKERS_MODEL, "");
        let rt = Runtime::builder(catalog).build().await.unwrap();
        for i in 0..RUNS {
            let input = ThinkerInput::query(format!("What is term {i}?")).with_depth(Depth::Quick);
            let t = thinkers_bench::glossary_thinker(THINKERS_MODEL, OUTPUT);
            rt.dispatcher().submit(t.ask(input)).await.unwrap();
        }
        rt.shutdown().await.unwrap();
        let client = reqwest::Client::new();
        for i in 0..RUNS {
            lean_run(&client, &base, i).await;
        }
        let (ours, bodies) = Side::measure(&base, THINKERS_MODEL).await;
        let (lean, _) = Side::measure(&base, LEAN_MODEL).await;
        println!("{RUNS} runs per side; one tool, two tool rounds, then a typed answer");
        ours.print("thinkers");
        lean.print("lean loop");
        let bytes_ratio = ours.bytes as f64 / lean.bytes as f64;
        let token_ratio = ours.input_tokens as f64 / lean.input_tokens as f64;
        println!(
            "ratio thinkers / lean loop: request bytes {bytes_ratio:.2}x, input tokens \
             {token_ratio:.2}x (target bytes <= 1.25x: {})",
            if bytes_ratio <= 1.25 { "met" } else { "MISSED" }
        );
        if dump {
            let per_run = ours.calls / RUNS;
            for body in bodies.iter().take(per_run) {
                let body = String::from_utf8_lossy(body);
                println!("\n{body}");
            }
        }
    });
    let _ = child.kill();
    let _ = child.wait();
}
