//! The loop driven by scripted turns through a real dispatcher: tool rounds in one step,
//! refusals answering their call ids, the per-turn bound, guardrails, the iteration limit, the
//! seeded follow-up, the transcript, content stream events and depth clamping.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use thinkers::ErrorKind;
use thinkers::conversation::{ContentBlock, Role};
use thinkers::model::{Depth, Grade, ModelDependent, OutputSize};
use thinkers::thinker::{
    ArtifactRef, ContentStream, META_THINKER_DEPTH, ScriptedTurns, Thinker, ThinkerDeclaration,
    ThinkerHooks, ThinkerInput, ThinkerLimits, Verdict,
};
use thinkers::tool::{Tool, ToolContext};

use crate::support::{Definition, Delete, Lookup, dispatcher};

/// The guidance a thinker's system prompt carries when it offers more than one tool (the
/// wire text the model reads).
const TOOL_GUIDANCE: &str = "Make independent tool calls in one turn.";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// A justification a reader can check.
    pub reasoning: String,
    pub summary: String,
    pub artifacts: Vec<ArtifactRef>,
}

fn decl() -> ThinkerDeclaration {
    ThinkerDeclaration::new(Grade::Small, OutputSize::Compact)
}

fn summary(text: &str, refs: &[&str]) -> serde_json::Value {
    json!({"reasoning": "looked it up", "summary": text, "artifacts": refs})
}

#[tokio::test]
async fn parallel_tool_calls_share_the_turn_ordinal_and_come_back_as_one_batch() {
    let (d, rec) = dispatcher();
    let lookup = Lookup::default();
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("c1", "lookup", json!({"term": "seat"})),
            ("c2", "lookup", json!({"term": "grade"})),
            ("c3", "lookup", json!({"term": "depth"})),
        ])
        .then_answer(summary("three terms", &["@a1", "@a3"]));
    let thinker = Thinker::<Summary>::declared(decl(), "Explain terms.")
        .tool(lookup.clone())
        .turns(turns.clone())
        .class("glossary");
    let obs = thinker.observer();
    let answer = d
        .run(thinker.ask(ThinkerInput::query("What are these?")))
        .await
        .unwrap();
    assert_eq!(answer.summary, "three terms");
    assert_eq!(lookup.calls.load(Ordering::SeqCst), 3);

    // One batch message answering every call id, in call order, each labelled with its ref.
    let conv = obs.messages();
    let batch = &conv[2];
    assert_eq!(batch.role, Role::User);
    let ids: Vec<_> = batch
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => {
                assert!(!is_error);
                assert!(content.starts_with("[artifact @a"), "{content}");
                call_id.clone()
            }
            other => panic!("not a result: {other:?}"),
        })
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3"]);
    // The second turn saw the batch.
    assert_eq!(turns.seen()[1].request.messages.len(), 3);
    assert_eq!(turns.seen()[0].turn, 1);
    assert_eq!(turns.seen()[1].turn, 2);

    // The three tool jobs are children of the thinker in step 1, sharing its ordinal.
    let jobs = rec.jobs();
    let root = jobs.iter().find(|j| j.start.class == "glossary").unwrap();
    let tools: Vec<_> = jobs.iter().filter(|j| j.start.class == "lookup").collect();
    assert_eq!(tools.len(), 3);
    for t in &tools {
        assert_eq!(t.start.parent, Some(root.start.id));
        assert_eq!(t.start.ordinal, Some(1));
    }
    // Artifacts resolve to the typed values.
    let arts = obs.artifacts();
    let first: &Definition = arts.resolve(&answer.artifacts[0]).unwrap();
    assert_eq!(first.term, "seat");
    let third: &Definition = arts.resolve(&answer.artifacts[1]).unwrap();
    assert_eq!(third.term, "depth");
}

#[tokio::test]
async fn refused_calls_answer_their_own_ids_and_the_turn_bound_holds() {
    let (d, _) = dispatcher();
    let lookup = Lookup::default();
    let turns = ScriptedTurns::new()
        .then_calls(&[
            ("ok", "lookup", json!({"term": "seat"})),
            ("unknown", "no_such_tool", json!({})),
            ("bad", "lookup", json!({"term": 42})),
            ("over", "lookup", json!({"term": "extra"})),
        ])
        .then_answer(summary("done", &[]));
    let thinker = Thinker::<Summary>::declared(decl(), "Explain.")
        .tool(lookup.clone())
        .turns(turns)
        .limits(ThinkerLimits {
            max_tool_calls_per_turn: 3,
            ..ThinkerLimits::default()
        });
    let obs = thinker.observer();
    d.run(thinker.ask(ThinkerInput::query("q"))).await.unwrap();
    assert_eq!(
        lookup.calls.load(Ordering::SeqCst),
        1,
        "only the valid call ran"
    );
    let conv = obs.messages();
    let results: Vec<(String, bool, String)> = conv[2]
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::ToolResult {
                call_id,
                is_error,
                content,
                ..
            } => (call_id.clone(), *is_error, content.clone()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(results.len(), 4, "every call is answered");
    assert_eq!((results[0].0.as_str(), results[0].1), ("ok", false));
    assert_eq!((results[1].0.as_str(), results[1].1), ("unknown", true));
    assert!(results[1].2.contains("no such tool"), "{}", results[1].2);
    assert_eq!((results[2].0.as_str(), results[2].1), ("bad", true));
    assert!(results[2].2.contains("term"), "{}", results[2].2);
    assert_eq!((results[3].0.as_str(), results[3].1), ("over", true));
    assert!(
        results[3].2.contains("at most 3 tool calls"),
        "{}",
        results[3].2
    );
    assert_eq!(obs.refused().len(), 3);
}

#[tokio::test]
async fn guardrail_refusals_become_correction_turns_then_the_answer_passes() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_answer(summary("", &[]))
        .then_answer(summary("a real summary", &[]));
    let thinker = Thinker::<Summary>::declared(decl(), "Summarise.")
        .turns(turns.clone())
        .guardrail(|a: &Summary| {
            if a.summary.is_empty() {
                Verdict::refuse("the summary must not be empty")
            } else {
                Verdict::Accept
            }
        });
    let answer = d.run(thinker.ask(ThinkerInput::query("q"))).await.unwrap();
    assert_eq!(answer.summary, "a real summary");
    let second = &turns.seen()[1].request.messages;
    let last = second.last().unwrap();
    assert_eq!(last.role, Role::User);
    assert!(
        last.text().contains("the summary must not be empty"),
        "{}",
        last.text()
    );
}

#[tokio::test]
async fn guardrail_corrections_are_bounded() {
    let (d, _) = dispatcher();
    let mut turns = ScriptedTurns::new();
    for _ in 0..3 {
        turns = turns.then_answer(summary("", &[]));
    }
    let thinker = Thinker::<Summary>::declared(decl(), "Summarise.")
        .turns(turns)
        .limits(ThinkerLimits {
            max_guardrail_corrections: 2,
            ..ThinkerLimits::default()
        })
        .guardrail(|_: &Summary| Verdict::refuse("never good enough"));
    let err = d
        .run(thinker.ask(ThinkerInput::query("q")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("never good enough"), "{err}");
}

#[tokio::test]
async fn the_iteration_limit_fails_with_what_was_gathered() {
    let (d, _) = dispatcher();
    let mut turns = ScriptedTurns::new();
    for i in 0..3 {
        turns = turns.then_calls(&[(&format!("c{i}"), "lookup", json!({"term": format!("t{i}")}))]);
    }
    let thinker = Thinker::<Summary>::declared(decl(), "Explain.")
        .tool(Lookup::default())
        .turns(turns)
        .limits(ThinkerLimits {
            max_iterations: 3,
            ..ThinkerLimits::default()
        });
    let err = d
        .run(thinker.ask(ThinkerInput::query("q")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AttemptsExhausted);
    let msg = err.to_string();
    assert!(msg.contains("iteration limit of 3"), "{msg}");
    assert!(
        msg.contains("the meaning of t2"),
        "the gathered results are carried: {msg}"
    );
}

struct Plan;
impl ThinkerHooks for Plan {
    fn seeded_followup(&self, _: &ThinkerInput) -> Option<String> {
        Some("Plan: look up, then summarise.".into())
    }
}

#[tokio::test]
async fn seeded_followup_follows_the_objective_only_in_a_new_conversation_and_transcript_has_it_all()
 {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_calls(&[("c1", "lookup", json!({"term": "seat"}))])
        .then_answer(summary("first", &["@a1"]))
        .then_answer(summary("second", &["@a1"]));
    let thinker = Thinker::<Summary>::declared(decl(), "OBJECTIVE: explain.")
        .tool(Lookup::default())
        .hooks(Plan)
        .turns(turns.clone());
    d.run(thinker.ask(ThinkerInput::query("first question")))
        .await
        .unwrap();
    let first = &turns.seen()[0].request;
    // One tool and no `sub_thinker` (the thinker is not delegating): neither the parallel-calls
    // hint nor the depth line has anything to say.
    assert_eq!(
        first.system,
        format!("OBJECTIVE: explain.\n\n{}", thinkers_legend())
    );
    assert_eq!(first.messages[0].text(), "Plan: look up, then summarise.");
    assert_eq!(first.messages[1].text(), "first question");

    // A second run continues the conversation: no second follow-up.
    let second = d
        .run(thinker.follow_up(ThinkerInput::query("challenge")))
        .await
        .unwrap();
    assert_eq!(second.summary, "second");
    let texts: Vec<String> = turns.seen()[2]
        .request
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(texts.iter().filter(|t| t.starts_with("Plan:")).count(), 1);
    assert_eq!(texts.last().unwrap(), "challenge");

    let t = thinker.transcript();
    let order = [
        "=== objective ===\nOBJECTIVE",
        "Plan: look up",
        "first question",
        "[tool call lookup id=c1]",
        "[tool result lookup for id=c1]\n[artifact @a1]",
        "\"first\"",
        "challenge",
        "\"second\"",
    ];
    let mut at = 0;
    for needle in order {
        let found = t[at..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} after {at} in\n{t}"));
        at += found + needle.len();
    }
}

fn thinkers_legend() -> &'static str {
    "Artifacts: every successful tool result is labelled with a ref such as @a1. To rely on a \
     result in your answer, list its ref in the answer's artifact fields exactly as written; do \
     not invent refs."
}

#[tokio::test]
async fn an_unknown_artifact_ref_is_corrected_not_failed() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_answer(summary("x", &["@a7"]))
        .then_answer(summary("x", &[]));
    let thinker = Thinker::<Summary>::declared(decl(), "Explain.").turns(turns.clone());
    d.run(thinker.ask(ThinkerInput::query("q"))).await.unwrap();
    let last = turns.seen()[1].request.messages.last().unwrap().text();
    assert!(last.contains("name no tool result"), "{last}");
    assert!(
        !last.contains("@a7"),
        "the model's value is not echoed: {last}"
    );
}

/// A tool that runs a whole thinker as its body (an agent used as a tool).
struct AskExpert {
    expert: Thinker<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct AskInput {
    question: String,
}

impl Tool for AskExpert {
    const NAME: &'static str = "ask_expert";
    type Input = AskInput;
    type Output = String;
    fn description(&self) -> Cow<'static, str> {
        "Ask an expert.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(&self, input: &AskInput, cx: &ToolContext<'_>) -> thinkers::Result<String> {
        let job = self
            .expert
            .ask(ThinkerInput::query(input.question.clone()).with_depth(Depth::Thorough));
        cx.job.submit(job).await
    }
}

#[tokio::test]
async fn content_events_only_for_direct_runs_and_depth_is_clamped_to_the_caller() {
    let (d, rec) = dispatcher();
    let stream = ContentStream::new(16);
    let mut events = stream.subscribe();
    let expert_turns = ScriptedTurns::new().then_answer(json!("the expert's view"));
    let expert = Thinker::<String>::declared(decl(), "Be an expert.")
        .turns(expert_turns.clone())
        .class("expert")
        .content_stream(stream.clone());
    let expert_obs = expert.observer();
    let lead = Thinker::<Summary>::declared(decl(), "Lead.")
        .tool(AskExpert { expert })
        .turns(
            ScriptedTurns::new()
                .then_calls(&[("c1", "ask_expert", json!({"question": "why?"}))])
                .then_answer(summary("lead answer", &["@a1"])),
        )
        .class("lead")
        .content_stream(stream.clone());
    let answer = d
        .run(lead.ask(ThinkerInput::query("q").with_depth(Depth::Quick)))
        .await
        .unwrap();
    assert_eq!(answer.summary, "lead answer");
    assert!(expert_obs.transcript().contains("the expert's view"));
    let ev = events.try_recv().unwrap();
    assert_eq!(ev.class, "lead");
    assert!(ev.content.contains("lead answer"));
    assert!(
        events.try_recv().is_err(),
        "the expert, called by a thinker, published nothing"
    );

    // The expert asked for thorough but works at its caller's quick depth.
    assert_eq!(expert_turns.seen()[0].depth, Depth::Quick);
    let _ = (rec, META_THINKER_DEPTH);
}

#[tokio::test]
async fn a_direct_run_keeps_its_requested_depth() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new().then_answer(json!("x"));
    let t = Thinker::<String>::declared(decl(), "x").turns(turns.clone());
    let handle = d.submit(t.ask(ThinkerInput::query("q").with_depth(Depth::Thorough)));
    let job_cx = handle.context().clone();
    handle.await.unwrap();
    assert_eq!(turns.seen()[0].depth, Depth::Thorough);
    assert_eq!(job_cx.metadata(META_THINKER_DEPTH), Some(json!("thorough")));
    assert_eq!(
        job_cx.metadata(thinkers::thinker::META_CONTENT),
        Some(json!("x")),
        "a direct run also publishes its answer on its metadata"
    );
    let default = ThinkerInput::query("q");
    assert_eq!(default.depth, Depth::Standard);
    let parsed: ThinkerInput = serde_json::from_value(json!({"query": "q"})).unwrap();
    assert_eq!(parsed.depth, Depth::Standard);
}

#[tokio::test]
async fn a_direct_string_answer_is_published_as_text() {
    let (d, _) = dispatcher();
    let stream = ContentStream::new(4);
    let mut events = stream.subscribe();
    let t = Thinker::<String>::declared(decl(), "Answer.")
        .turns(ScriptedTurns::new().then_answer(json!("plain text")))
        .content_stream(stream);
    assert_eq!(
        d.run(t.ask(ThinkerInput::query("q"))).await.unwrap(),
        "plain text"
    );
    assert_eq!(events.try_recv().unwrap().content, "plain text");
}

#[test]
fn declarations_refine_and_the_thinker_is_model_dependent() {
    let mut t = Thinker::<String>::declared(decl(), "x");
    t.set_grade(Grade::Large);
    t.set_output(OutputSize::Tokens(700));
    t.set_output(OutputSize::Standard);
    assert_eq!(t.declaration().grade(), Grade::Large);
    assert_eq!(t.declaration().output(), OutputSize::Standard);
    t.pin_model("sim-large-a".into());
    assert_eq!(t.pin(), Some("sim-large-a"));
    let d = ThinkerDeclaration::new(Grade::Medium, OutputSize::Verdict)
        .comfort_tokens(64_000)
        .compaction_trigger(0.8);
    assert_eq!(d.comfort(), Some(64_000));
    assert_eq!(d.trigger(), Some(0.8));
    let _ = Arc::new(0);
}

#[tokio::test]
async fn a_content_stream_registered_on_the_dispatcher_receives_direct_answers() {
    let stream = ContentStream::new(4);
    let mut events = stream.subscribe();
    let d = thinkers::Dispatcher::builder()
        .service(Arc::new(stream))
        .build();
    let t = Thinker::<String>::declared(decl(), "Answer.")
        .turns(ScriptedTurns::new().then_answer(json!("via the service")));
    d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    assert_eq!(events.try_recv().unwrap().content, "via the service");
}

/// A reconcile hook that registers the same tool at every turn.
struct EveryTurn;
impl ThinkerHooks for EveryTurn {
    fn reconcile_tools(&self, registry: &mut thinkers::tool::ToolRegistry, _: Depth) {
        registry.register(Arc::new(thinkers::tool::TypedToolProvider::new(
            Lookup::default(),
        )));
    }
}

#[tokio::test]
async fn reconcile_hooks_run_every_turn_and_are_idempotent() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_calls(&[("c1", "lookup", json!({"term": "a"}))])
        .then_calls(&[("c2", "lookup", json!({"term": "b"}))])
        .then_answer(summary("done", &[]));
    let t = Thinker::<Summary>::declared(decl(), "x")
        .hooks(EveryTurn)
        .delegating()
        .turns(turns.clone());
    d.run(t.ask(ThinkerInput::query("q"))).await.unwrap();
    for seen in turns.seen() {
        let names: Vec<_> = seen.request.tools.iter().map(|t| t.name.as_ref()).collect();
        // The hook's tool, then the built-in sub_thinker (delegating, at standard depth, no hub
        // needed).
        assert_eq!(names, ["lookup", "sub_thinker"], "turn {}", seen.turn);
    }
}

/// The depth reaches every call; the model is told it where it can act on it: at thorough depth
/// (and whenever `sub_thinker` is offered, whose `depth` may not exceed the thinker's), not at
/// quick depth with one tool.
#[tokio::test]
async fn every_turn_runs_at_its_depth_and_the_model_reads_it_where_it_changes_its_work() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_calls(&[("c1", "lookup", json!({"term": "seat"}))])
        .then_answer(summary("first", &["@a1"]))
        .then_answer(summary("second", &["@a1"]));
    let thinker = Thinker::<Summary>::declared(decl(), "OBJECTIVE: explain.")
        .tool(Lookup::default())
        .turns(turns.clone());
    d.run(thinker.ask(ThinkerInput::query("q").with_depth(Depth::Thorough)))
        .await
        .unwrap();
    // The same conversation, continued at another depth.
    d.run(thinker.follow_up(ThinkerInput::query("again").with_depth(Depth::Quick)))
        .await
        .unwrap();
    let seen = turns.seen();
    let wants = [Depth::Thorough, Depth::Thorough, Depth::Quick];
    assert_eq!(seen.len(), wants.len());
    for (turn, want) in seen.iter().zip(wants) {
        assert_eq!(turn.depth, want);
        let system = &turn.request.system;
        let told = want == Depth::Thorough;
        for depth in Depth::ALL {
            assert_eq!(
                system.contains(depth.hint()),
                told && depth == want,
                "{depth:?} at {want:?}: {system}"
            );
        }
    }
}

#[tokio::test]
async fn the_parallel_calls_hint_needs_more_than_one_tool() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_answer(summary("one tool", &[]))
        .then_answer(summary("two tools", &[]));
    // Quick: below the delegation threshold, so the palette is exactly the declared tools.
    let one = Thinker::<Summary>::declared(decl(), "x")
        .tool(Lookup::default())
        .turns(turns.clone());
    d.run(one.ask(ThinkerInput::query("q").with_depth(Depth::Quick)))
        .await
        .unwrap();
    let two = Thinker::<Summary>::declared(decl(), "x")
        .tool(Lookup::default())
        .tool(Delete::default())
        .turns(turns.clone());
    d.run(two.ask(ThinkerInput::query("q").with_depth(Depth::Quick)))
        .await
        .unwrap();
    let seen = turns.seen();
    assert_eq!(seen[0].request.tools.len(), 1);
    assert!(
        !seen[0].request.system.contains(TOOL_GUIDANCE),
        "{}",
        seen[0].request.system
    );
    assert_eq!(seen[1].request.tools.len(), 2);
    assert!(
        seen[1].request.system.contains(TOOL_GUIDANCE),
        "{}",
        seen[1].request.system
    );
}

/// Each `ask` runs in a conversation of its own, so asking twice never continues by accident;
/// `follow_up` continues the conversation of the run asked last, and the thinker's observer
/// follows the run asked last.
#[tokio::test]
async fn ask_starts_a_new_conversation_and_follow_up_continues_the_last() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_answer(summary("first", &[]))
        .then_answer(summary("second", &[]))
        .then_answer(summary("third", &[]));
    let thinker = Thinker::<Summary>::declared(decl(), "Answer.").turns(turns.clone());
    let first = thinker.ask("What is a seat?");
    let first_view = first.observer();
    d.run(first).await.unwrap();
    d.run(thinker.ask("What is a depth?")).await.unwrap();
    d.run(thinker.follow_up("And a grade?")).await.unwrap();

    let seen = turns.seen();
    let text = |i: usize| serde_json::to_string(&seen[i].request.messages).unwrap();
    // The second `ask` carries nothing of the first run.
    assert!(text(1).contains("What is a depth?"), "{}", text(1));
    assert!(!text(1).contains("What is a seat?"), "{}", text(1));
    // The follow-up carries the run asked last, not the one before it.
    assert!(text(2).contains("What is a depth?") && text(2).contains("And a grade?"));
    assert!(!text(2).contains("What is a seat?"), "{}", text(2));
    // Each job keeps its own conversation; the thinker shows the one asked last.
    let first_text = serde_json::to_string(&first_view.messages()).unwrap();
    assert!(first_text.contains("What is a seat?") && !first_text.contains("depth"));
    let latest = serde_json::to_string(&thinker.observer().messages()).unwrap();
    assert!(latest.contains("And a grade?") && !latest.contains("What is a seat?"));
}
