//! The correction protocol over real HTTP against thinkers-sim, driven by its faults.

use std::sync::Arc;

use serde_json::Value;
use thinkers::model::Grade;
use thinkers::onecall::ModelToolJob;
use thinkers::onecall::tools::{QuickQuestion, QuickQuestionInput};
use thinkers::record::JobStatus;
use thinkers_sim::{
    FaultKind, FaultRule, LoggedRequest, Script, ScriptAnswer, ScriptRule, SimConfig,
};

use crate::support::{CANARY, Setup, setup, setup_with};

fn question() -> QuickQuestionInput {
    QuickQuestionInput {
        question: "What does a seat reserve?".into(),
        grade: Grade::Small,
        context: Some("A seat reserves input, output and reasoning tokens.".into()),
    }
}

fn ask(entry: &str) -> ModelToolJob<QuickQuestion> {
    ModelToolJob::new(Arc::new(QuickQuestion), question())
        .unwrap()
        .pinned(entry)
}

/// The turns of a logged body, in the dialect's own shape: (role, text).
fn turns(req: &LoggedRequest) -> Vec<(String, String)> {
    let messages = req.body["messages"].as_array().unwrap();
    messages
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap().to_owned();
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            (role, text)
        })
        .filter(|(role, _)| role != "system" && role != "developer")
        .collect()
}

async fn once(kind: FaultKind, entry: &str) -> Setup {
    let s = setup().await;
    s.sim.inject(FaultRule::new(kind).for_model(entry).times(1));
    let out =
        s.rt.run(ask(entry))
            .await
            .unwrap_or_else(|e| panic!("{kind:?} on {entry}: {e}"));
    assert!(!out.answer.is_empty());
    s
}

#[tokio::test]
async fn malformed_json_and_wrong_shapes_are_corrected_on_both_dialects() {
    for entry in ["sim-small-a", "sim-small-b", "sim-small-text"] {
        for (kind, problem) in [
            (FaultKind::MalformedJson, "not valid JSON"),
            (
                FaultKind::WrongShape,
                "it was a JSON string, not a JSON object",
            ),
        ] {
            let s = once(kind, entry).await;
            let reqs = s.sim.requests();
            assert_eq!(
                reqs.len(),
                2,
                "{entry} {kind:?}: one faulty answer, one corrected"
            );
            let first = turns(&reqs[0]);
            let second = turns(&reqs[1]);
            assert_eq!(first.len(), 1, "{entry}");
            assert_eq!(second.len(), 3, "{entry}: answer and correction appended");
            assert_eq!(second[0], first[0], "{entry}: the prompt is unchanged");
            assert_eq!(second[1].0, "assistant");
            let (role, text) = &second[2];
            assert_eq!(role, "user");
            assert!(text.contains(problem), "{entry} {kind:?}: {text}");
            assert!(text.contains("type `QuickAnswer`"), "{entry}: {text}");
            assert!(
                text.contains("`justification` (a string)"),
                "{entry}: {text}"
            );
            let runs = s.rec.llm_runs();
            assert_eq!(runs.len(), 2, "{entry}: both calls recorded");
            assert_eq!(s.sim.stats().model(entry).faults, 1);
        }
    }
}

#[tokio::test]
async fn a_wrongly_typed_field_is_corrected_without_repeating_the_value() {
    // The first answer is scripted: right shape, a list where a string is due, carrying a canary.
    let bad = serde_json::json!({"answer": "tokens", "justification": [CANARY]});
    let s = setup_with(
        |c| SimConfig {
            script: Some(Script::new(vec![
                ScriptRule::when_contains("Question:", ScriptAnswer::Json(bad)).times(1),
            ])),
            ..c
        },
        thinkers::model::Envelope::unrestricted(),
    )
    .await;
    let out = s.rt.run(ask("sim-small-b")).await.unwrap();
    assert!(!out.justification.contains(CANARY));
    let reqs = s.sim.requests();
    assert_eq!(reqs.len(), 2);
    let second = turns(&reqs[1]);
    assert!(second[1].1.contains(CANARY), "the model's own turn is kept");
    let correction = &second[2].1;
    assert!(
        correction.contains("field `justification` must be a string"),
        "{correction}"
    );
    assert!(!correction.contains(CANARY), "{correction}");
}

#[tokio::test]
async fn a_truncated_answer_is_escalated_once_to_the_ceiling() {
    for (entry, key, ceiling) in [
        ("sim-small-a", "max_completion_tokens", 16_384),
        ("sim-small-b", "max_tokens", 8_192),
    ] {
        let s = once(FaultKind::Truncate, entry).await;
        let reqs = s.sim.requests();
        assert_eq!(reqs.len(), 2, "{entry}");
        assert_eq!(reqs[0].body[key], 4_096, "{entry}: compact first");
        assert_eq!(reqs[1].body[key], ceiling, "{entry}: then the ceiling");
        assert_eq!(
            turns(&reqs[1]),
            turns(&reqs[0]),
            "{entry}: the cut answer never entered the conversation"
        );
        let runs = s.rec.llm_runs();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].stop_reason, "max_tokens");
        assert!(!runs[0].escalated && runs[1].escalated, "{entry}");
        let row = &s.rec.jobs()[0];
        assert_eq!(row.status(), JobStatus::Succeeded);
    }
}

#[tokio::test]
async fn throttling_waits_and_readmits_instead_of_failing() {
    for (kind, entry) in [
        (FaultKind::RateLimit429, "sim-small-a"),
        (FaultKind::RateLimit429, "sim-small-b"),
        (FaultKind::Overloaded529, "sim-small-b"),
    ] {
        let s = once(kind, entry).await;
        assert_eq!(
            s.sim.stats().model(entry).requests,
            2,
            "{kind:?} on {entry}"
        );
        let row = &s.rec.jobs()[0];
        assert_eq!(row.status(), JobStatus::Succeeded);
        assert_eq!(row.end.as_ref().unwrap().attempts, 2);
        // The refused call reached no answer, so one run is recorded, and nothing was corrected.
        assert_eq!(s.rec.llm_runs().len(), 1);
        assert_eq!(turns(&s.sim.requests()[1]).len(), 1);
    }
}
