//! Runs every example in `crates/thinkers/examples/` against an in-process thinkers-sim and
//! checks what it did: each example's `run` is included here by path and called with a runtime
//! from the examples' own support module, then its result, the sim's request log and the
//! recorded jobs are checked.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub,
    // Each example includes the support module itself, so that it also runs on its own.
    clippy::duplicate_mod
)]

use thinkers::record::{JobRow, JobStatus, MemoryRecorder};

#[path = "../examples/support/mod.rs"]
mod support;

// Each example file also holds a `main` (and its own copy of the support module) that only
// `cargo run --example` uses.
#[allow(dead_code)]
#[path = "../examples/as_tool.rs"]
mod as_tool;
#[allow(dead_code)]
#[path = "../examples/benchmark.rs"]
mod benchmark;
#[allow(dead_code)]
#[path = "../examples/decision.rs"]
mod decision;
#[allow(dead_code)]
#[path = "../examples/delegation.rs"]
mod delegation;
#[allow(dead_code)]
#[path = "../examples/doer.rs"]
mod doer;
#[allow(dead_code)]
#[path = "../examples/read_only.rs"]
mod read_only;
#[allow(dead_code)]
#[path = "../examples/spend_cap.rs"]
mod spend_cap;
#[allow(dead_code)]
#[path = "../examples/thinker.rs"]
mod thinker;
#[allow(dead_code)]
#[path = "../examples/tool.rs"]
mod tool;
#[allow(dead_code)]
#[path = "../examples/toolless.rs"]
mod toolless;

#[allow(dead_code)]
#[path = "../examples/chat.rs"]
mod chat;

fn jobs_of(rec: &MemoryRecorder, class: &str) -> Vec<JobRow> {
    rec.jobs()
        .into_iter()
        .filter(|j| j.start.class == class)
        .collect()
}

fn one_job(rec: &MemoryRecorder, class: &str) -> JobRow {
    let jobs = jobs_of(rec, class);
    assert_eq!(jobs.len(), 1, "one `{class}` job: {jobs:?}");
    jobs.into_iter().next().unwrap()
}

#[tokio::test]
async fn tool_example_calls_typed_and_by_json_and_refuses_bad_arguments() {
    let env = support::offline(tool::tune).await.unwrap();
    let out = tool::run(&env.rt).await.unwrap();
    assert_eq!(
        out.typed,
        tool::WordCount {
            words: 5,
            longest: "dispatcher".into()
        }
    );
    assert_eq!(out.from_json["words"], 3);
    assert_eq!(out.from_json["longest"], "thinkers");
    assert!(out.refusal.contains("text"), "{}", out.refusal);
    let runs = jobs_of(&env.rec, "count_words");
    assert_eq!(runs.len(), 2, "both calls went through the dispatcher");
    assert!(runs.iter().all(|j| j.status() == JobStatus::Succeeded));
    assert_eq!(
        env.sim.unwrap().requests().len(),
        0,
        "a tool needs no model"
    );
}

#[tokio::test]
async fn spend_cap_example_stops_the_runaway_loop_within_the_cap() {
    let env = support::offline_with(|c| c, spend_cap::capped)
        .await
        .unwrap();
    let out = spend_cap::run(&env.rt).await.unwrap();
    assert_eq!(
        out.error.kind(),
        thinkers::ErrorKind::SpendCapReached,
        "{}",
        out.error
    );
    assert!(out.calls > 1, "{} calls", out.calls);
    let spent: f64 = env.rec.llm_runs().iter().filter_map(|r| r.cost).sum();
    assert_eq!(env.rec.llm_runs().len(), out.calls as usize);
    assert!(spent <= spend_cap::CAP_USD, "{spent}");
    assert_eq!(
        env.sim.unwrap().requests().len(),
        out.calls as usize,
        "the refused call was never sent"
    );
    let root = one_job(&env.rec, "runaway");
    assert_eq!(root.status(), JobStatus::Failed);
}

#[tokio::test]
async fn doer_example_fans_out_in_one_step_then_summarises_in_the_next() {
    let env = support::offline(doer::tune).await.unwrap();
    let out = doer::run(&env.rt).await.unwrap();
    assert_eq!(out.answers.len(), doer::TOPICS.len());
    assert!(out.answers.iter().all(|a| !a.answer.is_empty()));
    assert!(!out.summary.summary.is_empty());

    let root = one_job(&env.rec, "briefing");
    assert_eq!(root.status(), JobStatus::Succeeded);
    let questions = jobs_of(&env.rec, "quick_llm_question");
    assert_eq!(questions.len(), 3);
    for q in &questions {
        assert_eq!(q.start.parent, Some(root.start.id));
        assert_eq!(q.start.ordinal, Some(1), "the fan-out shares one step");
    }
    let summary = one_job(&env.rec, "summarization");
    assert_eq!(summary.start.parent, Some(root.start.id));
    assert_eq!(
        summary.start.ordinal,
        Some(2),
        "the summary is the next step"
    );
    // Each question's text reached the wire.
    let bodies: Vec<String> = env
        .sim
        .unwrap()
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    for topic in doer::TOPICS {
        assert!(bodies.iter().any(|b| b.contains(topic)), "{topic}");
    }
}

#[tokio::test]
async fn thinker_example_runs_a_tool_round_and_answers_typed() {
    let env = support::offline(thinker::tune).await.unwrap();
    let out = thinker::run(&env.rt).await.unwrap();
    assert!(!out.answer.summary.is_empty());
    assert_eq!(out.tool_calls, 1, "one tool round of one call");
    assert!(
        out.transcript.contains("[tool call glossary") && out.transcript.contains("[tool result"),
        "{}",
        out.transcript
    );
    let root = one_job(&env.rec, "glossary_thinker");
    assert_eq!(root.status(), JobStatus::Succeeded);
    assert_eq!(jobs_of(&env.rec, "glossary_thinker.turn").len(), 2);
    let tool = one_job(&env.rec, "glossary");
    assert_eq!(tool.start.parent, Some(root.start.id));
}

#[tokio::test]
async fn read_only_example_withholds_and_refuses_the_side_effect() {
    let env = support::offline(read_only::tune).await.unwrap();
    let out = read_only::run(&env.rt).await.unwrap();
    assert_eq!(out.deletions, 0, "the deletion never ran");
    // Withheld at every turn: the side-effecting tool, and nothing else (the thinker is not
    // delegating, so it has no `sub_thinker` to withhold).
    assert!(!out.withheld.is_empty());
    for tool in &out.withheld {
        assert_eq!(tool, "delete_record", "{:?}", out.withheld);
    }
    assert_eq!(out.refused.len(), 1, "{:?}", out.refused);
    assert_eq!(out.refused[0].tool, "delete_record");
    assert!(
        out.refused[0].reason.contains("read-only"),
        "{}",
        out.refused[0].reason
    );
    assert!(
        jobs_of(&env.rec, "delete_record").is_empty(),
        "no job was submitted"
    );
    // The first request shows the model the read-only tool and nothing of the withheld one,
    // whatever the dialect (native tool definitions or tools listed in the system prompt).
    let first = env.sim.unwrap().requests()[0].body.to_string();
    assert!(first.contains("read_record"), "{first}");
    assert!(!first.contains("delete_record"), "{first}");
}

#[tokio::test]
async fn benchmark_example_races_the_small_grade_and_judges_every_candidate() {
    let env = support::offline(benchmark::tune).await.unwrap();
    let report = benchmark::run(&env.rt).await.unwrap();
    let reference = report.reference().expect("a reference row");
    assert!(reference.succeeded, "{reference:?}");
    let candidates: Vec<_> = report.candidates().collect();
    assert!(candidates.len() >= 2, "{candidates:?}");
    let table = report.table();
    for row in &candidates {
        assert!(row.succeeded, "{row:?}");
        assert!(row.model.starts_with("sim-small"), "{row:?}");
        assert!(
            row.judge_score.is_some(),
            "every candidate is judged: {row:?}"
        );
        assert!(table.contains(&row.model), "{table}");
    }
}

#[tokio::test]
async fn toolless_example_is_corrected_by_its_guardrail() {
    let env = support::offline(toolless::tune).await.unwrap();
    let out = toolless::run(&env.rt).await.unwrap();
    assert_eq!(out.routing.team, toolless::Team::Billing);
    let sim = env.sim.unwrap();
    let bodies = sim.requests();
    assert_eq!(bodies.len(), 2, "refused once, then accepted");
    let second = bodies[1].body.to_string();
    assert!(
        second.contains("a ticket about money goes to a named team"),
        "{second}"
    );
    for b in &bodies {
        assert!(
            b.body.get("tools").is_none(),
            "a toolless thinker offers no tool"
        );
    }
    assert_eq!(jobs_of(&env.rec, "ticket_router.call").len(), 2);
}

#[tokio::test]
async fn decision_example_chooses_and_ranks_among_its_options() {
    let env = support::offline(decision::tune).await.unwrap();
    let out = decision::run(&env.rt).await.unwrap();
    assert!(decision::TEAMS.contains(&out.choice.chosen.option.id.as_str()));
    let ids: Vec<&str> = out
        .choice
        .options
        .iter()
        .map(|o| o.option.id.as_str())
        .collect();
    assert_eq!(ids, decision::TEAMS, "every option, in the order given");
    assert_eq!(out.ranking.ranked.len(), 2);
    assert_ne!(
        out.ranking.ranked[0].option.id,
        out.ranking.ranked[1].option.id
    );
    assert_eq!(jobs_of(&env.rec, "ticket_decision").len(), 2);
}

#[tokio::test]
async fn as_tool_example_runs_a_thinker_and_a_doer_as_children_of_the_lead() {
    let env = support::offline(as_tool::tune).await.unwrap();
    let out = as_tool::run(&env.rt).await.unwrap();
    assert!(!out.answer.is_empty());
    assert_eq!(
        out.glossary_calls, 3,
        "once in research, twice in define_all"
    );
    for step in ["[tool call research", "[tool call define_all"] {
        assert!(out.transcript.contains(step), "{step}:\n{}", out.transcript);
    }
    let lead = one_job(&env.rec, "lead");
    for class in ["research", "define_all"] {
        assert_eq!(one_job(&env.rec, class).start.parent, Some(lead.start.id));
    }
}

#[tokio::test]
async fn delegation_example_discovers_a_tool_and_a_skill_through_the_hub() {
    let env = support::offline(delegation::tune).await.unwrap();
    let out = delegation::run(&env.rt).await.unwrap();
    assert!(!out.answer.is_empty());
    assert_eq!(out.glossary_calls, 1, "the granted tool ran once");
    for step in [
        "[tool call request_tools",
        "[tool call request_skill",
        "[tool call glossary",
    ] {
        assert!(out.transcript.contains(step), "{step}:\n{}", out.transcript);
    }
    let at = |step: &str| out.transcript.find(step).unwrap();
    assert!(at("[tool call request_tools") < at("[tool call glossary"));
    let requests = env.sim.unwrap().requests();
    assert_eq!(requests.len(), 4, "three tool rounds, then the answer");
    let first = requests[0].body.to_string();
    assert!(
        !first.contains(delegation::HOUSE_STYLE),
        "no skill before it is loaded"
    );
    let last = requests[3].body.to_string();
    assert!(
        last.contains(delegation::HOUSE_STYLE),
        "the skill's text is in the conversation"
    );
    let tool = one_job(&env.rec, "glossary");
    let root = one_job(&env.rec, "delegating_thinker");
    assert_eq!(tool.start.parent, Some(root.start.id));
}

/// The lines of `text`, trimmed, without blank ones.
fn code_lines(text: &str) -> Vec<&str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Every `rust` code block of the guide is an excerpt of an example (so it compiles and runs as
/// part of it); every other block is marked `text` or `sh`.
#[test]
fn every_rust_block_of_the_guide_is_an_excerpt_of_an_example() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("../../docs/guide.md")).unwrap();
    let examples: Vec<String> = std::fs::read_dir(root.join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .chain([
            root.join("examples/support/mod.rs"),
            root.join("../thinkers-store/examples/approval.rs"),
            root.join("../thinkers-mcp/examples/mcp.rs"),
        ])
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let mut blocks = 0;
    let mut rest = guide.as_str();
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let (lang, body_start) = after.split_at(after.find('\n').unwrap());
        let close = body_start.find("\n```").unwrap();
        let body = &body_start[..close];
        rest = &body_start[close + 4..];
        match lang {
            "rust" => {
                blocks += 1;
                let wanted = code_lines(body);
                assert!(
                    examples.iter().any(|e| code_lines(e)
                        .windows(wanted.len())
                        .any(|w| w == wanted.as_slice())),
                    "a rust block of docs/guide.md is not an excerpt of any example:\n{body}"
                );
            }
            "text" | "sh" => {}
            other => {
                panic!("a code block of docs/guide.md is marked `{other}`, not rust, text or sh")
            }
        }
    }
    assert!(
        blocks >= 10,
        "the guide shows the examples' code: {blocks} rust blocks"
    );
}

#[tokio::test]
async fn chat_example_streams_two_turns_of_one_conversation() {
    let env = support::offline(chat::tune).await.unwrap();
    let out = chat::run(&env.rt).await.unwrap();
    assert_eq!(out.answers.len(), 2);
    assert!(
        out.answers.iter().all(|a| !a.is_empty()),
        "{:?}",
        out.answers
    );
    assert_eq!(
        out.late_message,
        thinkers::thinker::Delivery::Waiting,
        "a message after a closed turn waits for the next"
    );
    // Each turn: the person's message, streamed pieces, then the answer.
    let answers = out.events.iter().filter(|e| **e == "answer").count();
    assert_eq!(answers, 2, "{:?}", out.events);
    assert!(out.events.iter().filter(|e| **e == "token").count() >= 2);
    assert_eq!(out.events.first(), Some(&"message"));
    // The second turn's request carries the first exchange.
    let sim = env.sim.unwrap();
    let last = sim.requests().last().unwrap().raw_body.clone();
    assert!(
        last.contains("What is a seat?") && last.contains("And a grade?"),
        "{last}"
    );
    assert_eq!(jobs_of(&env.rec, "chat").len(), 2, "one job per turn");
}

/// A sim serving one OpenAI model named as the smallest example names it, with one tool round.
const HELLO_SIM: &str = r#"
[providers.openai]
dialect = "openai"
base_url = "{sim}/v1"
api_key_env = "OPENAI_API_KEY"

[[entries]]
id = "gpt-4o-mini"
provider = "openai"
model = "gpt-4o-mini"
grade = "small"
context_window = 128000
output_ceiling = 16384
price_in = 0.15
price_out = 0.60
currency = "USD"

[entries.sim]
latency_ms = [1, 5]
tool_rounds = 1
parallel_tool_calls = 1
quality = 0.9
"#;

/// The smallest example (a `#[thinkers::tool]` fn, a runtime over one model, a thinker) is at
/// most 11 code lines (comments and blank lines aside; `cargo fmt --check` holds it to rustfmt's
/// layout), imports nothing, and runs as its own program the way a user runs it:
/// `OPENAI_BASE_URL` and `OPENAI_API_KEY` from the environment, here pointed at a sim serving
/// `gpt-4o-mini`.
#[tokio::test]
async fn hello_example_is_eleven_code_lines_and_runs_as_a_program() {
    let source = include_str!("../examples/hello.rs");
    let code: Vec<&str> = source
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect();
    assert!(
        code.len() <= 11,
        "examples/hello.rs has {} code lines:\n{}",
        code.len(),
        code.join("\n")
    );
    assert!(
        !code.iter().any(|l| l.starts_with("use ")),
        "hello imports nothing: {code:?}"
    );
    // `cargo test` builds the examples beside the test binaries (target/<profile>/examples).
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let hello = profile_dir
        .join("examples")
        .join(format!("hello{}", std::env::consts::EXE_SUFFIX));
    assert!(
        hello.exists(),
        "{} is missing: run the whole suite, or `cargo build -p thinkers --example hello` first",
        hello.display()
    );
    let config = thinkers_sim::SimConfig::from_catalog_toml(HELLO_SIM)
        .unwrap()
        .calm();
    // The model's first turn calls the tool on "a b c".
    let script = thinkers_sim::Script::from_toml_str(
        r#"
[[rules]]
contains = "Words in"
on = "user"
times = 1
answer = { tool_calls = [{ name = "word_count", arguments = { text = "a b c" } }] }
"#,
    )
    .unwrap();
    let sim = thinkers_sim::Sim::start(thinkers_sim::SimConfig {
        log_bodies: true,
        script: Some(script),
        ..config
    })
    .await
    .unwrap();
    let out = tokio::process::Command::new(&hello)
        .env("OPENAI_BASE_URL", format!("{}/v1", sim.base_url()))
        .env("OPENAI_API_KEY", "sk-hello-example")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(!stdout.trim().is_empty(), "the answer is printed");
    let requests = sim.requests();
    assert_eq!(requests.len(), 2, "one tool round, then the answer");
    let first = &requests[0].raw_body;
    // The macro made the tool: its name, the doc comment as description, the parameter.
    assert!(first.contains("\"word_count\""), "{first}");
    assert!(first.contains("Count the words of a text."), "{first}");
    assert!(first.contains("\"text\""), "{first}");
    // The second request carries the tool's result: a count of words, from the fn's body.
    let second: serde_json::Value = serde_json::from_str(&requests[1].raw_body).unwrap();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool message in {second}"));
    let content = result["content"].as_str().unwrap_or_default();
    // Tool results reach the model as artifacts (`[artifact @a1] …`).
    assert!(
        content.trim().ends_with("] 3"),
        "the fn's body counted three words: {content:?}"
    );
}
