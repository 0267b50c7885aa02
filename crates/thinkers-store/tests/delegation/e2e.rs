//! End to end over real HTTP against thinkers-sim, recorded to SQLite: a thinker discovers a
//! tool with `request_tools`, loads a skill with `request_skill`, delegates to `sub_thinker`
//! (which calls the discovered tool), and answers citing the artifact the delegate returned;
//! the trace rendered from the database (what `thinkers trace` prints) shows the whole tree.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use thinkers::Runtime;
use thinkers::dispatch::DispatchConfig;
use thinkers::hub::{Skill, ToolHub};
use thinkers::llm::ModelClient;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::model::{Catalog, ModelDependent};
use thinkers::ops::Trajectory;
use thinkers::thinker::{Thinker, ThinkerInput};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall, Sim, SimConfig};
use thinkers_store::RuntimeBuilderExt as _;
use thinkers_store::SqliteStore;

use crate::support::{Definition, Delete, Lookup, Summary, decl};

const TASK: &str = "RESEARCHER-TASK: answer glossary questions.";

fn when(entry: &str, needle: &str, answer: ScriptAnswer) -> ScriptRule {
    ScriptRule::when_contains(needle, answer)
        .for_model(entry)
        .times(1)
}

fn call(name: &str, arguments: serde_json::Value) -> ScriptAnswer {
    ScriptAnswer::ToolCalls(vec![ScriptToolCall {
        name: name.to_owned(),
        arguments,
    }])
}

fn script(entry: &str) -> Script {
    let when = |needle: &str, answer| when(entry, needle, answer);
    Script::new(vec![
        when(
            "E2E-QUERY",
            call("request_tools", json!({"tool_names": ["lookup"]})),
        ),
        when(
            r#""granted":["lookup"]"#,
            call("request_skill", json!({"skill_names": ["house_style"]})),
        ),
        when(
            r#""granted":["house_style"]"#,
            call(
                "sub_thinker",
                json!({"objective": "DELEGATED: look up the term seat", "artifact_refs": []}),
            ),
        ),
        when("DELEGATED", call("lookup", json!({"term": "seat"}))),
        // The parent, once the delegate answered.
        when(
            "SUB-SUMMARY",
            ScriptAnswer::Json(json!({
                "reasoning": "the delegate looked the term up",
                "answer": {
                    "reasoning": "@a3 defines the term",
                    "summary": "PARENT: a seat is what @a3 says",
                    "artifacts": ["@a3"]
                }
            })),
        ),
        // The delegate, once its lookup returned.
        when(
            "the meaning of seat",
            ScriptAnswer::Json(json!({
                "reasoning": "looked it up",
                "answer": {
                    "summary": "SUB-SUMMARY: seat is defined",
                    "reasoning": {"approach": "looked it up", "steps": ["@a1 defines it"]},
                    "artifacts": ["@a1"]
                }
            })),
        ),
    ])
}

#[tokio::test]
async fn discover_load_delegate_and_answer_then_trace_the_tree() {
    // The OpenAI dialect (strict tool schemas) and the Anthropic one.
    for entry in ["sim-small-a", "sim-small-b"] {
        run(entry).await;
    }
}

async fn run(entry: &str) {
    let config = SimConfig::from_catalog_toml(BUNDLED_TOML).unwrap().calm();
    let sim = Sim::start(SimConfig {
        log_bodies: true,
        script: Some(script(entry)),
        ..config
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("thinkers.db");
    let hub = ToolHub::new();
    hub.register_tool(Lookup::default()).unwrap();
    hub.register_tool(Delete::default()).unwrap();
    hub.register_skill(
        Skill::new(
            "house_style",
            "How answers are worded here.",
            "HOUSE-STYLE-TEXT: answer in one short sentence.",
        )
        .unwrap(),
    );
    let rt = Runtime::builder(Catalog::bundled().with_sim_url(&sim.base_url()))
        .database(db.to_string_lossy())
        .service(Arc::new(hub))
        .client(
            ModelClient::builder()
                .request_timeout(Duration::from_secs(5))
                .build()
                .unwrap(),
        )
        .config(DispatchConfig {
            transient_backoff: Duration::from_millis(10),
            throttle_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await
        .unwrap();

    let mut t = Thinker::<Summary>::declared(decl(), TASK)
        .delegating()
        .class("researcher");
    t.pin_model(entry.to_owned());
    let obs = t.observer();
    let answer = rt
        .run(t.ask(ThinkerInput::query("E2E-QUERY: what is a seat?")))
        .await
        .unwrap();
    assert_eq!(answer.summary, "PARENT: a seat is what @a3 says");
    let arts = obs.artifacts();
    let used: &Definition = arts.resolve(&answer.artifacts[0]).unwrap();
    assert_eq!(used.term, "seat");
    assert_eq!(arts.get(&answer.artifacts[0]).unwrap().tool, "lookup");

    // Every request reached the wire; the parent's and the delegate's are told apart by their
    // system content.
    let bodies: Vec<String> = sim.requests().iter().map(|r| r.body.to_string()).collect();
    assert_eq!(
        bodies.len(),
        6,
        "{entry}: four parent turns, two delegate turns"
    );
    let parent: Vec<&String> = bodies
        .iter()
        .filter(|b| b.contains("RESEARCHER-TASK"))
        .collect();
    assert_eq!(parent.len(), 4);
    // The door's catalog went out as a native enum, never as system text.
    assert!(parent[0].contains(r#""const":"lookup""#), "{}", parent[0]);
    assert!(!parent[0].contains("HOUSE-STYLE-TEXT"));
    assert!(!parent[1].contains("HOUSE-STYLE-TEXT"));
    assert!(parent[2].contains("HOUSE-STYLE-TEXT"));
    assert!(parent[3].contains("HOUSE-STYLE-TEXT"));
    // The delegate was offered the discovered tool and called it.
    let delegate: Vec<&String> = bodies
        .iter()
        .filter(|b| b.contains("another agent handed you"))
        .collect();
    assert_eq!(delegate.len(), 2);
    assert!(
        delegate[0].contains(r#""name":"lookup""#),
        "{}",
        delegate[0]
    );

    // The trace from the database: the whole tree under the thinker.
    rt.flush().await.unwrap();
    let store = SqliteStore::open(&db.to_string_lossy()).await.unwrap();
    let workflows = store.list_workflows(5).await.unwrap();
    assert_eq!(workflows.len(), 1);
    let trajectory = Trajectory::build(store.workflow_jobs(workflows[0].workflow).await.unwrap());
    let rendered = trajectory.render();
    let at = |class: &str| -> Vec<usize> {
        trajectory
            .entries()
            .iter()
            .filter(|e| e.record.class == class)
            .map(|e| e.depth)
            .collect()
    };
    assert_eq!(at("researcher"), [0], "{rendered}");
    assert_eq!(at("researcher.turn"), [1, 1, 1, 1], "{rendered}");
    assert_eq!(at("request_tools"), [1], "{rendered}");
    assert_eq!(at("request_skill"), [1], "{rendered}");
    assert_eq!(at("sub_thinker"), [1], "{rendered}");
    assert_eq!(at("sub_thinker.turn"), [2, 2], "{rendered}");
    assert_eq!(at("lookup"), [2], "{rendered}");
    for class in [
        "researcher",
        "request_tools",
        "request_skill",
        "sub_thinker",
        "sub_thinker.turn",
        "lookup",
    ] {
        assert!(rendered.contains(class), "{class}: {rendered}");
    }
    println!("{entry}:\n{rendered}");
}

#[path = "../../../thinkers/tests/common/offline.rs"]
mod offline;

/// Unscripted, the sim calls the doors with arguments it samples from their schemas: on each
/// dialect every sampled call is one the door accepts.
#[tokio::test]
async fn schema_driven_door_calls_are_accepted_on_every_dialect() {
    let s = offline::start(Duration::from_secs(5), |c| c).await;
    for entry in ["sim-small-a", "sim-small-b", "sim-small-text"] {
        let mut t = Thinker::<String>::declared(decl(), "Answer briefly.")
            .hub(crate::support::hub())
            .class("doors");
        t.pin_model(entry.to_owned());
        let obs = t.observer();
        s.rt.run(
            t.ask(ThinkerInput::query("What is a seat?").with_depth(thinkers::model::Depth::Quick)),
        )
        .await
        .unwrap_or_else(|e| panic!("{entry}: {e}"));
        assert!(obs.refused().is_empty(), "{entry}: {:?}", obs.refused());
        let calls: Vec<String> = obs
            .messages()
            .iter()
            .flat_map(|m| m.content.iter())
            .filter_map(|b| match b {
                thinkers::conversation::ContentBlock::ToolCall { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect();
        assert!(
            calls
                .iter()
                .any(|c| c == "request_tools" || c == "request_skill"),
            "{entry}: {calls:?}"
        );
        assert!(!obs.transcript().contains("invalid input"), "{entry}");
        assert!(
            s.sim.stats().model(entry).requests >= 2,
            "{entry}: a round, then the answer"
        );
    }
    let doors = s
        .rec
        .jobs()
        .into_iter()
        .filter(|j| j.start.class == "request_tools" || j.start.class == "request_skill")
        .count();
    assert!(doors >= 3, "a door job per dialect at least: {doors}");
}

/// Without any hub (none on the thinker, none on the runtime), over the sim: the parent's model
/// calls `sub_thinker`, the delegate calls the parent's own tool, and the parent answers citing
/// the artifact the delegate returned.
#[tokio::test]
async fn without_a_hub_the_model_delegates_and_the_parent_uses_the_result() {
    let entry = "sim-small-a";
    let when = |needle: &str, answer| when(entry, needle, answer);
    let script = Script::new(vec![
        when(
            "NOHUB-QUERY",
            call(
                "sub_thinker",
                json!({"objective": "NOHUB-DELEGATED: look up the term seat", "artifact_refs": []}),
            ),
        ),
        when("NOHUB-DELEGATED", call("lookup", json!({"term": "seat"}))),
        when(
            "NOHUB-SUB-SUMMARY",
            ScriptAnswer::Json(json!({
                "reasoning": "the delegate looked the term up",
                "answer": {
                    "reasoning": "@a1 defines the term",
                    "summary": "NOHUB-PARENT: a seat is what @a1 says",
                    "artifacts": ["@a1"]
                }
            })),
        ),
        when(
            "the meaning of seat",
            ScriptAnswer::Json(json!({
                "reasoning": "looked it up",
                "answer": {
                    "summary": "NOHUB-SUB-SUMMARY: seat is defined",
                    "reasoning": {"approach": "looked it up", "steps": ["@a1 defines it"]},
                    "artifacts": ["@a1"]
                }
            })),
        ),
    ]);
    let s = offline::start(Duration::from_secs(5), |c| SimConfig {
        script: Some(script),
        ..c
    })
    .await;
    let lookup = Lookup::default();
    let mut t = Thinker::<Summary>::declared(decl(), TASK)
        .tool(lookup.clone())
        .delegating()
        .class("researcher");
    t.pin_model(entry.to_owned());
    let obs = t.observer();
    let answer =
        s.rt.run(t.ask(ThinkerInput::query("NOHUB-QUERY: what is a seat?")))
            .await
            .unwrap();
    assert_eq!(answer.summary, "NOHUB-PARENT: a seat is what @a1 says");
    let arts = obs.artifacts();
    let used: &Definition = arts.resolve(&answer.artifacts[0]).unwrap();
    assert_eq!(used.term, "seat");
    assert_eq!(arts.get(&answer.artifacts[0]).unwrap().tool, "lookup");
    assert_eq!(lookup.calls.load(std::sync::atomic::Ordering::SeqCst), 1);

    let bodies: Vec<String> = s
        .sim
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    let parent: Vec<&String> = bodies
        .iter()
        .filter(|b| b.contains("RESEARCHER-TASK"))
        .collect();
    let delegate: Vec<&String> = bodies
        .iter()
        .filter(|b| b.contains("another agent handed you"))
        .collect();
    assert_eq!((parent.len(), delegate.len()), (2, 2), "{bodies:?}");
    // The parent was offered its tool and sub_thinker, and no catalog door.
    for b in &parent {
        assert!(b.contains(r#""name":"sub_thinker""#), "{b}");
        assert!(b.contains(r#""name":"lookup""#), "{b}");
        assert!(
            !b.contains("request_tools") && !b.contains("request_skill"),
            "{b}"
        );
    }
    // The delegate (standard depth) got the parent's tool and no way to delegate further.
    for b in &delegate {
        assert!(b.contains(r#""name":"lookup""#), "{b}");
        assert!(!b.contains(r#""name":"sub_thinker""#), "{b}");
    }
    // The parent's last request carried the delegate's summary back.
    assert!(parent[1].contains("NOHUB-SUB-SUMMARY"), "{}", parent[1]);

    let jobs = s.rec.jobs();
    let top = jobs.iter().find(|j| j.start.class == "researcher").unwrap();
    let sub = jobs
        .iter()
        .find(|j| j.start.class == "sub_thinker")
        .unwrap();
    assert_eq!(sub.start.parent, Some(top.start.id));
    let look = jobs.iter().find(|j| j.start.class == "lookup").unwrap();
    assert_eq!(look.start.parent, Some(sub.start.id));
}

/// Over the sim: the delegate's model is asked for its reasoning in structure (an approach and
/// its steps), and the parent receives it that way — in the tool result its model reads and in
/// the typed `SubThinkerOutput` its code reads.
#[tokio::test]
async fn a_sub_thinker_hands_its_structured_reasoning_to_the_parent() {
    let entry = "sim-small-a";
    let when = |needle: &str, answer| when(entry, needle, answer);
    let script = Script::new(vec![
        when(
            "STRUCT-QUERY",
            call(
                "sub_thinker",
                json!({"objective": "STRUCT-DELEGATED: look up the term seat"}),
            ),
        ),
        when("STRUCT-DELEGATED", call("lookup", json!({"term": "seat"}))),
        when(
            "the meaning of seat",
            ScriptAnswer::Json(json!({
                "reasoning": "looked it up",
                "answer": {
                    "summary": "STRUCT-SUB-SUMMARY",
                    "reasoning": {
                        "approach": "STRUCT-APPROACH: read the glossary entry",
                        "steps": ["STRUCT-STEP-1: @a1 defines seat", "STRUCT-STEP-2: nothing else"]
                    },
                    "artifacts": ["@a1"]
                }
            })),
        ),
        when(
            "STRUCT-SUB-SUMMARY",
            ScriptAnswer::Json(json!({
                "reasoning": "the delegate looked the term up",
                "answer": {"reasoning": "@a1", "summary": "done", "artifacts": []}
            })),
        ),
    ]);
    let s = offline::start(Duration::from_secs(5), |c| SimConfig {
        script: Some(script),
        ..c
    })
    .await;
    let mut t = Thinker::<Summary>::declared(decl(), TASK)
        .tool(Lookup::default())
        .delegating();
    t.pin_model(entry.to_owned());
    let obs = t.observer();
    s.rt.run(t.ask(ThinkerInput::query("STRUCT-QUERY: what is a seat?")))
        .await
        .unwrap();

    let bodies: Vec<serde_json::Value> = s.sim.requests().into_iter().map(|r| r.body).collect();
    // The delegate's model was asked for an approach and steps.
    let delegate = bodies
        .iter()
        .find(|b| b.to_string().contains("another agent handed you"))
        .unwrap();
    let asked = &delegate["response_format"]["json_schema"]["schema"];
    let reasoning = asked["properties"]["answer"]["properties"]["reasoning"].to_string();
    let defs = asked["$defs"].to_string();
    assert!(
        reasoning.contains("approach") || defs.contains("approach"),
        "{asked}"
    );
    assert!(
        reasoning.contains("steps") || defs.contains("steps"),
        "{asked}"
    );
    // The parent's model read the reasoning as structure, in the sub_thinker tool result.
    let last = bodies.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    let result = last.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let json_part = result.split_once("] ").unwrap().1;
    let output: serde_json::Value = serde_json::from_str(json_part).unwrap();
    assert_eq!(
        output["reasoning"],
        json!({
            "approach": "STRUCT-APPROACH: read the glossary entry",
            "steps": ["STRUCT-STEP-1: @a1 defines seat", "STRUCT-STEP-2: nothing else"]
        }),
        "{result}"
    );
    // The parent's code reads the same, typed.
    let arts = obs.artifacts();
    let typed = arts
        .iter()
        .find(|a| a.tool == thinkers::thinker::SUB_THINKER)
        .unwrap()
        .downcast::<thinkers::thinker::SubThinkerOutput>()
        .unwrap()
        .clone();
    assert_eq!(
        typed.reasoning,
        thinkers::thinker::AnalysisReasoning {
            approach: "STRUCT-APPROACH: read the glossary entry".into(),
            steps: vec![
                "STRUCT-STEP-1: @a1 defines seat".into(),
                "STRUCT-STEP-2: nothing else".into()
            ],
        }
    );
}
