//! The canary matrix: for every family that refuses what a model sent — the single-objective
//! thinker's final answer, the toolless and decision thinkers' answers, a one-call tool's answer
//! and a tool's arguments — a wrong answer carries a canary either in a value or in a key (an
//! entry of a map, a field the type does not declare, an enum tag the type does not know, a tool
//! name), and the canary must reach neither the correction sent back to the model nor the error
//! the run returns. Everything goes over real HTTP to thinkers-sim (OpenAI dialect, sim-small-a).
//!
//! The model's own turns stay in the conversation (the provider needs them, and a one-call tool
//! keeps its answer so the model sees what it wrote); what is checked is everything the runtime
//! itself wrote into each later request.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use thinkers::model::{Depth, Grade, ModelDependent, OutputSize};
use thinkers::onecall::{ModelTool, ModelToolJob};
use thinkers::thinker::{
    DecisionThinker, SystemPrompt, Thinker, ThinkerDeclaration, ThinkerInput, ToollessThinker,
};
use thinkers::tool::{Tool, ToolCallContext, ToolContext, ToolProvider, TypedToolProvider};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall};

use crate::support::{Setup, Ticket, decl, five_options, scripted};

const CANARY: &str = "CANARY-key-4b1d";
const ENTRY: &str = "sim-small-a";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mood {
    Calm,
    Tense,
}

/// A shape with every place a model can invent a key: a map, a type that declares its fields
/// and admits no others, and an enum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Tally {
    /// The overall mood.
    pub mood: Mood,
    /// How often each name came up.
    pub counts: BTreeMap<String, u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    Value,
    Key,
}

/// One wrong `Tally`, where it puts the canary, and a phrase the correction must contain
/// (so the check cannot pass on a correction that says nothing).
struct Wrong {
    placement: Placement,
    what: &'static str,
    json: Value,
    expect: &'static str,
}

fn wrong_tallies() -> Vec<Wrong> {
    let mut invented_field = json!({"mood": "calm", "counts": {}});
    invented_field[CANARY] = json!(1);
    vec![
        Wrong {
            placement: Placement::Value,
            what: "an enum value",
            json: json!({"mood": CANARY, "counts": {}}),
            expect: "\"calm\"",
        },
        Wrong {
            placement: Placement::Value,
            what: "a map value",
            json: json!({"mood": "calm", "counts": {"tea": CANARY}}),
            expect: "an integer",
        },
        Wrong {
            placement: Placement::Key,
            what: "a map key",
            json: json!({"mood": "calm", "counts": {CANARY: "x"}}),
            expect: "counts entry",
        },
        Wrong {
            placement: Placement::Key,
            what: "an undeclared field",
            json: invented_field,
            expect: "does not declare",
        },
        Wrong {
            placement: Placement::Key,
            what: "an unknown enum tag",
            json: json!({"mood": {CANARY: {}}, "counts": {}}),
            expect: "\"tense\"",
        },
    ]
}

/// A sim that answers every request with `answer` (so corrections run out).
async fn always(answer: ScriptAnswer) -> Setup {
    scripted(Script::new(vec![ScriptRule::when_contains("", answer)])).await
}

/// What the runtime wrote into a request: the body without the model's own turns, and the
/// texts of its messages.
fn runtime_part(body: &Value) -> (String, String) {
    let mut body = body.clone();
    let mut texts = String::new();
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        messages.retain(|m| m["role"] != "assistant");
        for m in messages.iter() {
            match &m["content"] {
                Value::String(s) => texts.push_str(s),
                Value::Array(parts) => {
                    for p in parts {
                        texts.push_str(p["text"].as_str().unwrap_or_default());
                    }
                }
                _ => {}
            }
            texts.push('\n');
        }
    }
    (body.to_string(), texts)
}

/// One cell run: what the sim received and the error the run (or the provider) returned.
struct Ran {
    cell: String,
    s: Setup,
    error: thinkers::Error,
    expect: &'static str,
}

/// The checks of a family's cells: first, over every cell, that neither anything the runtime
/// sent after the first request nor the error carries the canary; then that a correction was
/// sent and says what the schema wanted (`expect`), so the first check cannot pass on a
/// correction that says nothing.
fn check(ran: &[Ran]) {
    for r in ran {
        for b in r.s.sim.requests().iter().skip(1) {
            let (sent, _) = runtime_part(&b.body);
            assert!(
                !sent.contains(CANARY),
                "{}: sent back to the model: {sent}",
                r.cell
            );
        }
        for shown in [r.error.to_string(), r.error.for_model()] {
            assert!(
                !shown.contains(CANARY),
                "{}: the error echoes: {shown}",
                r.cell
            );
        }
    }
    for r in ran {
        let bodies = r.s.sim.requests();
        assert!(bodies.len() >= 2, "{}: no correction was sent", r.cell);
        let (_, texts) = runtime_part(&bodies[1].body);
        assert!(
            texts.contains(r.expect),
            "{}: the correction lacks {:?}: {texts}",
            r.cell,
            r.expect
        );
    }
}

fn cell(family: &str, w: &Wrong) -> String {
    format!("{family} × {:?} ({})", w.placement, w.what)
}

/// Every placement occurs in the matrix, so neither column can go missing unnoticed.
fn both_placements(rows: &[Wrong]) {
    for p in [Placement::Value, Placement::Key] {
        assert!(rows.iter().any(|w| w.placement == p), "{p:?} missing");
    }
}

#[tokio::test]
async fn single_objective_answers() {
    let rows = wrong_tallies();
    both_placements(&rows);
    let mut ran = Vec::new();
    for w in &rows {
        let answer = json!({"reasoning": "r", "answer": w.json});
        let s = always(ScriptAnswer::Json(answer)).await;
        let mut t = Thinker::<Tally>::declared(
            ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
            "Tally the moods.",
        );
        t.pin_model(ENTRY.to_owned());
        let err =
            s.rt.run(t.ask(ThinkerInput::query("Count them.").with_depth(Depth::Quick)))
                .await
                .unwrap_err();
        ran.push(Ran {
            cell: cell("single-objective", w),
            s,
            error: err,
            expect: w.expect,
        });
    }
    check(&ran);
}

#[tokio::test]
async fn toolless_answers() {
    let rows = wrong_tallies();
    both_placements(&rows);
    let mut ran = Vec::new();
    for w in &rows {
        let s = always(ScriptAnswer::Json(w.json.clone())).await;
        let mut t = ToollessThinker::<Ticket, Tally>::new(
            decl(),
            SystemPrompt::new("Tally the moods in the ticket.").unwrap(),
        );
        t.pin_model(ENTRY.to_owned());
        let ticket = Ticket {
            text: "Calm, calm, tense.".into(),
        };
        let err = s.rt.run(t.ask(ticket)).await.unwrap_err();
        ran.push(Ran {
            cell: cell("toolless", w),
            s,
            error: err,
            expect: w.expect,
        });
    }
    check(&ran);
}

#[tokio::test]
async fn decision_answers() {
    let rows = [
        Wrong {
            placement: Placement::Value,
            what: "an id outside the options",
            json: json!({"choice": CANARY}),
            expect: "option ids",
        },
        Wrong {
            placement: Placement::Key,
            what: "an object keyed by the canary",
            json: json!({"choice": {CANARY: "billing"}}),
            expect: "answer.choice",
        },
        Wrong {
            placement: Placement::Key,
            what: "the canary as the only field",
            json: json!({CANARY: "billing"}),
            expect: "answer.choice",
        },
    ];
    both_placements(&rows);
    let mut ran = Vec::new();
    for w in &rows {
        let s = always(ScriptAnswer::Json(w.json.clone())).await;
        let mut t = DecisionThinker::new(
            decl(),
            SystemPrompt::new("Pick the team that should handle the ticket.").unwrap(),
            five_options(),
        )
        .unwrap();
        t.pin_model(ENTRY.to_owned());
        let err =
            s.rt.run(t.choose(ThinkerInput::query("I was charged twice.")))
                .await
                .unwrap_err();
        ran.push(Ran {
            cell: cell("decision", w),
            s,
            error: err,
            expect: w.expect,
        });
    }
    check(&ran);
}

/// A one-call tool answering a [`Tally`].
struct TallyTool;

impl ModelTool for TallyTool {
    const NAME: &'static str = "tally";
    type Input = Ticket;
    type Output = Tally;
    fn description(&self) -> Cow<'static, str> {
        "Tally the moods in a ticket.".into()
    }
    fn instructions(&self) -> Cow<'static, str> {
        "Tally the moods. Answer with JSON matching the schema.".into()
    }
    fn output_size(&self, _: &Ticket) -> OutputSize {
        OutputSize::Verdict
    }
    fn grade(&self, _: &Ticket) -> Option<Grade> {
        Some(Grade::Small)
    }
}

#[tokio::test]
async fn one_call_answers() {
    let rows = wrong_tallies();
    both_placements(&rows);
    let mut ran = Vec::new();
    for w in &rows {
        let s = always(ScriptAnswer::Json(w.json.clone())).await;
        let ticket = Ticket {
            text: "Calm, calm, tense.".into(),
        };
        let job = ModelToolJob::new(Arc::new(TallyTool), ticket)
            .unwrap()
            .pinned(ENTRY);
        let err = s.rt.run(job).await.unwrap_err();
        ran.push(Ran {
            cell: cell("one-call", w),
            s,
            error: err,
            expect: w.expect,
        });
    }
    check(&ran);
}

/// A tool whose input is a [`Tally`].
struct RecordTally;

impl Tool for RecordTally {
    const NAME: &'static str = "record_tally";
    type Input = Tally;
    type Output = String;
    fn description(&self) -> Cow<'static, str> {
        "Record a tally.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(&self, _: &Tally, _: &ToolContext<'_>) -> thinkers::Result<String> {
        Ok("recorded".into())
    }
}

/// A thinker whose model makes `call` once, then answers; the refusal is the tool result sent
/// back with the second request.
async fn one_refused_call(call: ScriptToolCall, depth: Depth) -> Setup {
    let s = scripted(Script::new(vec![
        ScriptRule::when_contains("", ScriptAnswer::ToolCalls(vec![call])).times(1),
        ScriptRule::when_contains("", ScriptAnswer::Text("done".into())),
    ]))
    .await;
    let mut t = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Record the tally.",
    )
    .tool(RecordTally)
    .delegating();
    t.pin_model(ENTRY.to_owned());
    let answer =
        s.rt.run(t.ask(ThinkerInput::query("Record it.").with_depth(depth)))
            .await
            .unwrap();
    assert_eq!(answer, "done");
    s
}

#[tokio::test]
async fn tool_arguments() {
    let rows = wrong_tallies();
    both_placements(&rows);
    let provider = TypedToolProvider::new(RecordTally);
    let mut ran = Vec::new();
    for w in &rows {
        let s = one_refused_call(
            ScriptToolCall {
                name: RecordTally::NAME.into(),
                arguments: w.json.clone(),
            },
            Depth::Quick,
        )
        .await;
        // The error the refusal is made from, as the provider returns it.
        let Err(err) = provider.instantiate(&w.json, &ToolCallContext::default()) else {
            panic!("{}: accepted", cell("tool arguments", w));
        };
        ran.push(Ran {
            cell: cell("tool arguments", w),
            s,
            error: err,
            expect: w.expect,
        });
    }
    check(&ran);
}

#[tokio::test]
async fn tool_names_and_built_in_arguments() {
    // A tool name the model made up (a key of the palette).
    let s = one_refused_call(
        ScriptToolCall {
            name: format!("{CANARY}_tool"),
            arguments: json!({}),
        },
        Depth::Quick,
    )
    .await;
    let bodies = s.sim.requests();
    let (_, texts) = runtime_part(&bodies[1].body);
    assert!(texts.contains("no such tool"), "{texts}");
    for b in &bodies[1..] {
        let (sent, _) = runtime_part(&b.body);
        assert!(!sent.contains(CANARY), "tool name sent back: {sent}");
    }

    // A ref the model wrote into `sub_thinker`'s arguments (a value of a built-in's input).
    let s = one_refused_call(
        ScriptToolCall {
            name: "sub_thinker".into(),
            arguments: json!({"objective": "Check it.", "artifact_refs": [CANARY]}),
        },
        Depth::Standard,
    )
    .await;
    let bodies = s.sim.requests();
    let (_, texts) = runtime_part(&bodies[1].body);
    assert!(texts.contains("artifact_refs[0]"), "{texts}");
    for b in &bodies[1..] {
        let (sent, _) = runtime_part(&b.body);
        assert!(!sent.contains(CANARY), "ref sent back: {sent}");
    }
}
