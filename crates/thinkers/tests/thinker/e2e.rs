//! Single-objective thinkers over real HTTP against thinkers-sim: the OpenAI dialect
//! (sim-small-a), the Anthropic dialect (sim-small-b) and the text-tool fallback
//! (sim-small-text) — tool rounds with parallel calls in one step, a typed final answer — plus
//! wrong-shape correction and native thinking.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::model::{Depth, Grade, ModelDependent, OutputSize};
use thinkers::record::JobStatus;
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers::tool::{Tool, ToolContext};
use thinkers_sim::{FaultKind, FaultRule, Script, ScriptAnswer, ScriptRule};

use crate::support::{Lookup, LookupInput, setup, setup_with};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Brief {
    /// A justification a reader can check.
    pub reasoning: String,
    /// The answer in a sentence.
    pub summary: String,
    /// How sure the answer is.
    pub confidence: Confidence,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Low,
    High,
}

/// A second read-only tool, so a round can call two distinct tools.
struct Synonyms;

impl Tool for Synonyms {
    const NAME: &'static str = "synonyms";
    type Input = LookupInput;
    type Output = Vec<String>;
    fn description(&self) -> Cow<'static, str> {
        "List synonyms of a term.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(
        &self,
        input: &LookupInput,
        _: &ToolContext<'_>,
    ) -> thinkers::Result<Vec<String>> {
        Ok(vec![format!("{}-like", input.term)])
    }
}

fn thinker(entry: &str, grade: Grade) -> Thinker<Brief> {
    let mut t = Thinker::<Brief>::declared(
        ThinkerDeclaration::new(grade, OutputSize::Compact),
        "Answer the question from the glossary.",
    )
    .tool(Lookup::default())
    .tool(Synonyms)
    .class("glossary_thinker");
    t.pin_model(entry.to_owned());
    t
}

#[tokio::test]
async fn three_dialects_run_tool_rounds_in_one_step_and_answer_typed() {
    let s = setup_with(|mut c| {
        for m in &mut c.models {
            if let Some(p) = &mut m.profile {
                p.parallel_tool_calls = 2;
                p.tool_rounds = 1;
            }
        }
        c
    })
    .await;
    for entry in ["sim-small-a", "sim-small-b", "sim-small-text"] {
        let t = thinker(entry, Grade::Small);
        let obs = t.observer();
        let before = s.rec.jobs().len();
        // Quick: below the delegation threshold, so the palette is exactly the two tools and
        // the sim's two parallel calls are one of each.
        let answer =
            s.rt.run(t.ask(ThinkerInput::query("What is a seat?").with_depth(Depth::Quick)))
                .await
                .unwrap_or_else(|e| panic!("{entry}: {e}"));
        assert!(!answer.summary.is_empty(), "{entry}");
        let jobs: Vec<_> = s.rec.jobs().into_iter().skip(before).collect();
        let root = jobs
            .iter()
            .find(|j| j.start.class == "glossary_thinker")
            .unwrap();
        assert_eq!(root.status(), JobStatus::Succeeded);
        let turns: Vec<_> = jobs
            .iter()
            .filter(|j| j.start.class == "glossary_thinker.turn")
            .collect();
        let tools: Vec<_> = jobs
            .iter()
            .filter(|j| j.start.class == "lookup" || j.start.class == "synonyms")
            .collect();
        assert_eq!(turns.len(), 2, "{entry}: a tool round, then the answer");
        assert_eq!(tools.len(), 2, "{entry}: two parallel calls");
        assert_eq!(turns[0].start.ordinal, Some(1));
        assert_eq!(turns[1].start.ordinal, Some(2));
        for t in tools.iter().chain(turns.iter()) {
            assert_eq!(t.start.parent, Some(root.start.id), "{entry}");
        }
        for t in &tools {
            assert_eq!(
                t.start.ordinal,
                Some(1),
                "{entry}: the tool calls share the turn's ordinal"
            );
        }
        let transcript = obs.transcript();
        assert!(transcript.contains("[tool result"), "{entry}: {transcript}");
        assert_eq!(s.sim.stats().model(entry).requests, 2, "{entry}");
    }
}

/// A `String` answer is asked for as text, as agent frameworks ask for it: no answer schema on
/// any request (no `response_format`, `output_config` or schema in the prompt), no reasoning
/// field, and the output is the model's text.
#[tokio::test]
async fn a_string_answer_is_asked_for_as_text_and_is_the_models_text() {
    let s = setup().await;
    for entry in ["sim-small-a", "sim-small-b", "sim-small-text"] {
        let mut t = Thinker::<String>::declared(
            ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
            "Answer the question from the glossary.",
        )
        .tool(Lookup::default())
        .class("text_thinker");
        t.pin_model(entry.to_owned());
        let obs = t.observer();
        let before = s.sim.requests().len();
        let answer =
            s.rt.run(t.ask(ThinkerInput::query("What is a seat?").with_depth(Depth::Quick)))
                .await
                .unwrap_or_else(|e| panic!("{entry}: {e}"));
        let sent: Vec<_> = s.sim.requests().into_iter().skip(before).collect();
        assert!(sent.len() >= 2, "{entry}: a tool round, then the answer");
        for r in &sent {
            let raw = &r.raw_body;
            for asked in [
                "response_format",
                "output_config",
                "response_schema",
                "json_schema",
                "final_answer",
                "\"reasoning\"",
                // The description every reasoning field carries.
                "A justification a reader can check",
            ] {
                assert!(!raw.contains(asked), "{entry}: {asked} in {raw}");
            }
        }
        // The output is the text of the model's last turn, as it wrote it (trimmed).
        let last = obs.messages().last().map(|m| m.text()).unwrap_or_default();
        assert_eq!(answer, last.trim(), "{entry}");
        // The sim's text answer quotes the question and the latest tool result.
        assert!(answer.contains("\"What is a seat?\""), "{entry}: {answer}");
        assert!(answer.contains("the meaning of"), "{entry}: {answer}");
    }
}

#[tokio::test]
async fn a_wrong_shape_from_the_wire_is_corrected_and_not_echoed() {
    for entry in ["sim-small-a", "sim-small-b"] {
        let s = setup().await;
        s.sim.inject(
            FaultRule::new(FaultKind::WrongShape)
                .for_model(entry)
                .times(1),
        );
        // No tools (and, at quick depth, no sub_thinker), so the first answer is the
        // wrong-shaped final answer.
        let mut t = Thinker::<Brief>::declared(
            ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
            "Answer briefly.",
        );
        t.pin_model(entry.to_owned());
        let answer =
            s.rt.run(t.ask(ThinkerInput::query("Hi?").with_depth(Depth::Quick)))
                .await;
        let answer = answer.unwrap_or_else(|e| panic!("{entry}: {e}"));
        assert!(!answer.summary.is_empty());
        let stats = s.sim.stats().model(entry);
        assert_eq!(stats.faults, 1, "{entry}");
        assert_eq!(stats.requests, 2, "{entry}: refused once, asked again");
        let bodies = s.sim.requests();
        let second = bodies[1].body.to_string();
        assert!(second.contains("expected an object"), "{entry}: {second}");
        assert!(second.contains("Brief"), "{entry}: names the declared type");
    }
}

#[tokio::test]
async fn native_thinking_fills_reasoning_from_the_block_and_other_entries_ask_for_it() {
    let s = setup().await;
    let t = thinker("sim-medium-b", Grade::Medium);
    let answer =
        s.rt.run(t.ask(ThinkerInput::query("What is a grade?").with_depth(Depth::Standard)))
            .await
            .unwrap();
    assert!(
        !answer.reasoning.is_empty(),
        "filled from the thinking block"
    );
    let last = s.sim.requests().last().unwrap().body.clone();
    let schema = &last["output_config"]["format"]["schema"];
    // The answer type itself, without its reasoning (the block supplies it) and with nothing
    // around it.
    assert!(schema["properties"].get("reasoning").is_none(), "{schema}");
    assert!(schema["properties"].get("summary").is_some(), "{schema}");
    assert!(schema["properties"].get("answer").is_none(), "{schema}");

    // At immediate depth this entry reasons with no budget: no block is guaranteed, so the
    // reasoning fields stay in the schema.
    let t = thinker("sim-medium-b", Grade::Medium);
    s.rt.run(t.ask(ThinkerInput::query("Again?").with_depth(Depth::Immediate)))
        .await
        .unwrap();
    let last = s.sim.requests().last().unwrap().body.clone();
    let schema = &last["output_config"]["format"]["schema"];
    assert!(schema["properties"].get("reasoning").is_some(), "{schema}");
}

#[tokio::test]
async fn canaries_in_wrong_answers_from_the_wire_never_go_back_nor_into_logs() {
    const CANARY: &str = "CANARY-wire-51c0de";
    let logs = crate::support::LogCapture::default();
    let _guard = tracing::subscriber::set_default(logs.clone());
    let once = |answer| {
        ScriptRule::when_contains("", answer)
            .for_model("sim-small-a")
            .times(1)
    };
    let script = Script::new(vec![
        once(ScriptAnswer::Json(serde_json::json!(CANARY))),
        once(ScriptAnswer::Json(serde_json::json!({
            "reasoning": "r",
            "answer": {"reasoning": "r", "summary": "s", "confidence": CANARY}
        }))),
        once(ScriptAnswer::Text(format!("not json {CANARY}"))),
    ]);
    let s = setup_with(|c| thinkers_sim::SimConfig {
        script: Some(script),
        ..c
    })
    .await;
    let mut t = Thinker::<Brief>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Answer briefly.",
    );
    t.pin_model("sim-small-a".to_owned());
    let obs = t.observer();
    // Quick: no sub_thinker for the sim to call once the script is spent.
    let answer =
        s.rt.run(t.ask(ThinkerInput::query("Hi?").with_depth(Depth::Quick)))
            .await
            .unwrap();
    assert_ne!(answer.summary, CANARY);
    let bodies = s.sim.requests();
    assert_eq!(bodies.len(), 4, "three refusals, then an answer");
    for b in &bodies {
        assert!(!b.body.to_string().contains(CANARY), "{}", b.body);
    }
    let corrections = bodies[2].body.to_string();
    assert!(corrections.contains("answer.confidence"), "{corrections}");
    assert!(
        corrections.contains("\\\"low\\\""),
        "the accepted values: {corrections}"
    );
    assert!(!obs.transcript().contains(CANARY));
    assert!(!logs.text().contains(CANARY));
}
