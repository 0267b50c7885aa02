//! The answer-shape boundary as the loop uses it: wrong answers are corrected in the thinker's
//! own conversation, bounded, and a canary in them reaches neither the model, the transcript,
//! the logs nor the final error; a thinker without a declaration takes its answer type's seat.
//! The boundary's judgements themselves are unit tests (`src/thinker/answer_tests.rs`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use thinkers::ErrorKind;
use thinkers::conversation::ContentBlock;
use thinkers::llm::{ChatResponse, StopReason, Usage};
use thinkers::model::{Grade, OutputSize};
use thinkers::thinker::{ScriptedTurns, Thinker, ThinkerDeclaration, ThinkerInput};

use crate::support::{LogCapture, dispatcher};

const CANARY: &str = "CANARY-5d21c0-do-not-echo";

/// The loop's answer type: a label and a count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Label {
    pub label: String,
    pub count: u32,
}

fn text_turn(text: &str) -> ChatResponse {
    ChatResponse {
        content: vec![ContentBlock::text(text)],
        stop: StopReason::EndTurn,
        usage: Usage::default(),
        model: "scripted".into(),
        logprobs: None,
    }
}

#[tokio::test]
async fn wrong_shapes_are_corrected_and_canaries_reach_neither_the_model_nor_the_logs() {
    let logs = LogCapture::default();
    let _guard = tracing::subscriber::set_default(logs.clone());
    let (d, _) = dispatcher();
    // A bare value, a mistyped field, a missing field with an unknown one, an envelope, and
    // text that is not JSON: each carries the canary.
    let wrong = [
        json!(CANARY).to_string(),
        json!({"label": "a", "count": CANARY}).to_string(),
        json!({"label": "a", "note": CANARY}).to_string(),
        json!({"reasoning": "r", "answer": [CANARY]}).to_string(),
        format!("not json {CANARY}"),
    ];
    let mut turns = ScriptedTurns::new();
    for w in &wrong {
        turns = turns.then(text_turn(w));
    }
    turns = turns.then_answer(json!({"label": "open", "count": 2}));
    let thinker = Thinker::<Label>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Label the ticket.",
    )
    .turns(turns.clone())
    .limits(thinkers::thinker::ThinkerLimits {
        max_iterations: 30,
        max_answer_corrections: 20,
        ..Default::default()
    });
    let obs = thinker.observer();
    let out = d
        .run(thinker.ask(ThinkerInput::query("Ticket #1")))
        .await
        .unwrap();
    assert_eq!(out.label, "open");
    assert_eq!(out.count, 2);
    let seen = turns.seen();
    assert_eq!(
        seen.len(),
        wrong.len() + 1,
        "every wrong answer was followed by a re-ask"
    );
    for s in &seen {
        let body = serde_json::to_string(&s.request).unwrap();
        assert!(!body.contains(CANARY), "sent back to the model: {body}");
    }
    let last = seen.last().unwrap().request.messages.last().unwrap().text();
    assert!(last.contains("invalid"), "a correction was put: {last}");
    assert!(!obs.transcript().contains(CANARY));
    let logged = logs.text();
    assert!(logged.contains("answer-shape boundary"), "{logged}");
    assert!(!logged.contains(CANARY), "{logged}");
}

#[tokio::test]
async fn answer_corrections_are_bounded_and_the_failure_echoes_nothing() {
    let (d, _) = dispatcher();
    let mut turns = ScriptedTurns::new();
    for _ in 0..5 {
        turns = turns.then(text_turn(&json!(CANARY).to_string()));
    }
    let thinker = Thinker::<Label>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Label.",
    )
    .turns(turns);
    let err = d
        .run(thinker.ask(ThinkerInput::query("q")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(!err.to_string().contains(CANARY), "{err}");
}

/// A label the model picks from a list.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mood {
    Calm,
    Upset,
}

/// A thinker built from its objective alone runs on the catalog's strongest rung (in a
/// one-model catalog, that model) and books the output size its answer type needs.
#[test]
fn a_thinker_without_a_declaration_takes_the_seat_of_its_answer_type() {
    let seat = |d: &ThinkerDeclaration| (d.grade(), d.output());
    assert_eq!(
        seat(thinkers::Thinker::<bool>::new("x").declaration()),
        (Grade::Ceiling, OutputSize::Verdict)
    );
    assert_eq!(
        seat(thinkers::Thinker::<u32>::new("x").declaration()),
        (Grade::Ceiling, OutputSize::Verdict)
    );
    assert_eq!(
        seat(thinkers::Thinker::<Mood>::new("x").declaration()),
        (Grade::Ceiling, OutputSize::Verdict)
    );
    assert_eq!(
        seat(thinkers::Thinker::<crate::scripted::Summary>::new("x").declaration()),
        (Grade::Ceiling, OutputSize::Compact)
    );
    assert_eq!(
        seat(thinkers::Thinker::<String>::new("x").declaration()),
        (Grade::Ceiling, OutputSize::Standard)
    );
    assert_eq!(
        seat(thinkers::Thinker::<Vec<String>>::new("x").declaration()),
        (Grade::Ceiling, OutputSize::Standard)
    );
}
