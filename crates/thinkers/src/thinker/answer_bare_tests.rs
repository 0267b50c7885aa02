//! The thinker's answer-shape boundary without the loop's envelope (`AnswerShape::bare_request_schema` and
//! `judge_bare`), as the loopless families use it.

use super::{AnswerShape, Judgement, REASONING_DESCRIPTION};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// The desk a ticket goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Desk {
    Billing,
    Technical,
    Other,
}

/// Where a ticket goes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize, JsonSchema)]
struct Assignment {
    /// The desk that should handle the ticket.
    team: Desk,
}

const CANARY: &str = "CANARY-bare-90e1";

fn refusal<A: std::fmt::Debug>(j: Judgement<A>) -> crate::Error {
    match j {
        Judgement::Refused(e) => e,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_object_type_is_asked_for_as_itself() {
    let shape = AnswerShape::<Assignment>::new();
    assert!(!shape.bare_is_wrapped());
    let schema = shape.bare_request_schema(false).schema;
    assert!(schema["properties"].get("team").is_some(), "{schema}");
    assert!(schema.get("$schema").is_none());
    match shape.judge_bare(r#"{"team": "technical"}"#, None) {
        Judgement::Answer { value, .. } => assert_eq!(value.team, Desk::Technical),
        other => panic!("{other:?}"),
    }
    // A fenced answer is unwrapped once; nothing or null is no answer yet.
    assert!(matches!(
        shape.judge_bare("```json\n{\"team\": \"other\"}\n```", None),
        Judgement::Answer { .. }
    ));
    assert!(matches!(shape.judge_bare("  ", None), Judgement::NoAnswer));
    assert!(matches!(
        shape.judge_bare("null", None),
        Judgement::NoAnswer
    ));
}

#[test]
fn wrong_shapes_are_refused_from_the_schema_without_the_value() {
    let shape = AnswerShape::<Assignment>::new();
    for wrong in [
        json!(CANARY).to_string(),
        json!({"team": CANARY}).to_string(),
        json!([CANARY]).to_string(),
        format!("{CANARY} not json"),
    ] {
        let e = refusal(shape.judge_bare(&wrong, None));
        let text = e.to_string();
        assert!(!text.contains(CANARY), "{text}");
        assert!(e.for_model().contains("`answer"), "{text}");
        assert!(text.contains("Assignment"), "{text}");
    }
    let e = refusal(shape.judge_bare(&json!({"team": CANARY}).to_string(), None));
    assert!(
        e.to_string().contains("\"billing\""),
        "lists the accepted values: {e}"
    );
}

#[test]
fn a_leaf_type_travels_as_a_one_field_object() {
    let shape = AnswerShape::<Desk>::new();
    assert!(shape.bare_is_wrapped());
    let schema = shape.bare_request_schema(false).schema;
    assert_eq!(schema["required"], json!(["answer"]));
    assert_eq!(
        schema["properties"]["answer"]["enum"],
        json!(["billing", "technical", "other"])
    );
    match shape.judge_bare(r#"{"answer": "billing"}"#, None) {
        Judgement::Answer { value, .. } => assert_eq!(value, Desk::Billing),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        shape.judge_bare(r#"{"answer": null}"#, None),
        Judgement::NoAnswer
    ));
    let e = refusal(shape.judge_bare(&json!(CANARY).to_string(), None));
    assert!(!e.to_string().contains(CANARY), "{e}");
    assert!(e.to_string().contains("{\"answer\""), "{e}");
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Explained {
    reasoning: String,
    team: Desk,
}

#[test]
fn native_thinking_leaves_the_reasoning_field_to_the_block() {
    let shape = AnswerShape::<Explained>::new();
    let asked = shape.bare_request_schema(false).schema;
    assert_eq!(
        asked["properties"]["reasoning"]["description"],
        REASONING_DESCRIPTION
    );
    let native = shape.bare_request_schema(true).schema;
    assert!(native["properties"].get("reasoning").is_none(), "{native}");
    assert!(
        !native["required"]
            .as_array()
            .unwrap()
            .contains(&json!("reasoning"))
    );
    match shape.judge_bare(r#"{"team": "billing"}"#, Some("from the block")) {
        Judgement::Answer {
            value, reasoning, ..
        } => {
            assert_eq!(value.reasoning, "from the block");
            assert_eq!(value.team, Desk::Billing);
            assert_eq!(reasoning, "from the block");
        }
        other => panic!("{other:?}"),
    }
    match shape.judge_bare(r#"{"reasoning": "own", "team": "billing"}"#, None) {
        Judgement::Answer { reasoning, .. } => assert_eq!(reasoning, "own"),
        other => panic!("{other:?}"),
    }
}
