//! The answer-shape boundary of the thinker families, judged directly: one conversion,
//! refusals composed from the schema, never an echo of the model's value, native-thinking
//! strips, text answers, schemas with no field the type lacks, and no panic on any JSON. The
//! loop's side (corrections, canaries kept from the model and the logs) is in
//! `tests/thinker/answer.rs`.

use proptest::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{AnswerShape, Judgement, REASONING_DESCRIPTION};
use crate::ErrorKind;
use crate::thinker::ArtifactRef;

const CANARY: &str = "CANARY-7f3a9b-do-not-echo";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Status {
    Open,
    Closed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Ticket {
    /// A justification a reader can check.
    pub reasoning: String,
    pub status: Status,
    pub count: u32,
    pub tags: Vec<String>,
    pub artifacts: Vec<ArtifactRef>,
}

fn refused<A: std::fmt::Debug>(j: Judgement<A>) -> crate::Error {
    match j {
        Judgement::Refused(e) => e,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// The envelope other agent frameworks ask for (and this one did): still a plausible answer.
fn envelope(answer: Value) -> String {
    let mut m = serde_json::Map::new();
    m.insert("reasoning".into(), json!("r"));
    m.insert("answer".into(), answer);
    Value::Object(m).to_string()
}

/// A typed answer as it is asked for: the type's own JSON.
fn bare(answer: &Value) -> String {
    answer.to_string()
}

fn good_ticket() -> Value {
    json!({"reasoning": "x", "status": "open", "count": 2, "tags": ["a"], "artifacts": []})
}

/// Wrong answers of every kind, each carrying the canary.
fn wrong_answers() -> Vec<String> {
    let mut bad_enum = good_ticket();
    bad_enum["status"] = json!(CANARY);
    let mut bad_count = good_ticket();
    bad_count["count"] = json!(CANARY);
    let mut bad_tag = good_ticket();
    bad_tag["tags"] = json!(["ok", {"x": CANARY}]);
    let mut missing = good_ticket();
    missing.as_object_mut().unwrap().remove("count");
    missing["note"] = json!(CANARY);
    vec![
        json!(CANARY).to_string(),
        bare(&bad_enum),
        bare(&bad_count),
        bare(&bad_tag),
        bare(&missing),
        envelope(json!(CANARY)),
        envelope(json!([CANARY])),
        envelope(json!(42)),
        envelope(bad_enum),
        envelope(bad_count),
        envelope(bad_tag),
        envelope(missing),
        format!("{{\"answer\": \"{CANARY}"),
        format!("not json {CANARY}"),
    ]
}

#[test]
fn a_composite_answer_refuses_anything_but_an_object() {
    let shape = AnswerShape::<Ticket>::new();
    for text in [
        json!("flat").to_string(),
        json!([1]).to_string(),
        json!(3).to_string(),
    ] {
        let e = refused(shape.judge(&text, None));
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        let crate::Error::InvalidInput {
            parameter,
            value,
            reason,
            ..
        } = &e
        else {
            panic!()
        };
        assert_eq!(parameter, "answer");
        assert!(value.is_none());
        assert!(reason.contains("an object of type Ticket"), "{reason}");
    }
}

#[test]
fn a_wrapped_answer_refuses_objects_arrays_and_other_scalars() {
    // An enum is not an object: it travels as `{"answer": …}`.
    let shape = AnswerShape::<Status>::new();
    assert!(!shape.is_text());
    for v in [json!({"a": 1}), json!([1]), json!(3), json!(true)] {
        let e = refused(shape.judge(&json!({ "answer": v }).to_string(), None));
        assert!(e.to_string().contains("a string of type Status"), "{e}");
    }
    match shape.judge(r#"{"answer": "open"}"#, None) {
        Judgement::Answer { value, .. } => assert_eq!(value, Status::Open),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_text_answer_is_the_text_without_a_thinking_block() {
    let shape = AnswerShape::<String>::new();
    assert!(shape.is_text());
    assert!(shape.request_schema(false).is_none());
    assert!(shape.request_schema(true).is_none());
    for (text, want) in [
        ("  A seat is a claim.\n", "A seat is a claim."),
        // JSON is text like any other: nothing is unwrapped.
        (r#"{"answer": "x"}"#, r#"{"answer": "x"}"#),
        ("<think>\nLook it up.\n</think>\n\nA seat.", "A seat."),
    ] {
        match shape.judge(text, None) {
            Judgement::Answer {
                value,
                json,
                reasoning,
            } => {
                assert_eq!(value, want);
                assert_eq!(json, json!(want));
                assert_eq!(reasoning, "", "a text answer has no reasoning field");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    for text in ["", " \n ", "<think>all thinking, never closed"] {
        assert!(
            matches!(shape.judge(text, None), Judgement::NoAnswer),
            "{text}"
        );
    }
    // Under native thinking the block is the run's reasoning.
    match shape.judge("A seat.", Some("Looked it up.")) {
        Judgement::Answer { reasoning, .. } => assert_eq!(reasoning, "Looked it up."),
        other => panic!("{other:?}"),
    }
    // A constrained string (an enum) is a typed answer, not text.
    assert!(!AnswerShape::<Status>::new().is_text());
}

#[test]
fn null_or_absent_is_no_answer_yet() {
    let shape = AnswerShape::<Ticket>::new();
    for text in ["", "  ", "null", r#"{"answer": null}"#, "<think>x</think>"] {
        assert!(
            matches!(shape.judge(text, None), Judgement::NoAnswer),
            "{text}"
        );
    }
    // An object without the type's fields is a wrong answer, not an absent one.
    refused(shape.judge(r#"{"reasoning": "r"}"#, None));
    let wrapped = AnswerShape::<Status>::new();
    for text in ["", "null", "{}", r#"{"answer": null}"#] {
        assert!(
            matches!(wrapped.judge(text, None), Judgement::NoAnswer),
            "{text}"
        );
    }
}

#[test]
fn a_mistyped_field_is_refused_from_the_schema() {
    let shape = AnswerShape::<Ticket>::new();
    let mut t = good_ticket();
    t["status"] = json!("pending");
    let e = refused(shape.judge(&bare(&t), None));
    let msg = e.to_string();
    assert!(msg.contains("answer.status"), "{msg}");
    assert!(
        msg.contains("\"open\"") && msg.contains("\"closed\""),
        "{msg}"
    );
    assert!(!msg.contains("pending"), "{msg}");
    // The decoder's complaint survives on the source only.
    let source = std::error::Error::source(&e).unwrap().to_string();
    assert!(source.contains("pending"), "{source}");

    let mut t = good_ticket();
    t["count"] = json!("many");
    let msg = refused(shape.judge(&bare(&t), None)).to_string();
    assert!(
        msg.contains("answer.count") && msg.contains("an integer"),
        "{msg}"
    );
    assert!(!msg.contains("many"), "{msg}");

    let mut t = good_ticket();
    t.as_object_mut().unwrap().remove("tags");
    let msg = refused(shape.judge(&bare(&t), None)).to_string();
    assert!(
        msg.contains("answer.tags") && msg.contains("required"),
        "{msg}"
    );
}

#[test]
fn canaries_never_reach_the_error_message() {
    let shape = AnswerShape::<Ticket>::new();
    for text in wrong_answers() {
        let e = refused(shape.judge(&text, None));
        assert!(!e.to_string().contains(CANARY), "{e}");
        assert!(!e.for_model().contains(CANARY), "{e}");
        assert!(!format!("{:?}", e.kind()).contains(CANARY));
    }
}

#[test]
fn native_thinking_strips_reasoning_and_fills_it_from_the_block() {
    let shape = AnswerShape::<Ticket>::new();
    let plain = shape.request_schema(false).unwrap().schema;
    // A type with its own reasoning is asked for it there, described for a reader to check.
    assert_eq!(
        plain["properties"]["reasoning"]["description"],
        REASONING_DESCRIPTION
    );
    assert!(
        plain["required"]
            .as_array()
            .unwrap()
            .contains(&json!("reasoning"))
    );
    let stripped = shape.request_schema(true).unwrap().schema;
    assert!(stripped["properties"].get("reasoning").is_none());
    assert!(
        !stripped["required"]
            .as_array()
            .unwrap()
            .contains(&json!("reasoning"))
    );
    for schema in [&plain, &stripped] {
        assert!(
            !schema
                .to_string()
                .to_lowercase()
                .contains("thought process")
        );
    }
    let mut t = good_ticket();
    t.as_object_mut().unwrap().remove("reasoning");
    match shape.judge(&bare(&t), Some("I checked the ticket, then counted.")) {
        Judgement::Answer {
            value, reasoning, ..
        } => {
            assert_eq!(value.reasoning, "I checked the ticket, then counted.");
            assert_eq!(reasoning, "I checked the ticket, then counted.");
        }
        other => panic!("{other:?}"),
    }
    assert!(shape.uses_refs());
    assert!(!AnswerShape::<String>::new().uses_refs());
}

/// The keys of a schema's `properties`, sorted.
fn property_names(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn an_answer_with_its_own_reasoning_is_asked_for_it_once() {
    // Ticket has a `reasoning` field: it is asked for there, once, and nothing wraps the type.
    let shape = AnswerShape::<Ticket>::new();
    let schema = shape.request_schema(false).unwrap().schema;
    assert_eq!(
        property_names(&schema),
        ["artifacts", "count", "reasoning", "status", "tags"],
        "{schema}"
    );
    assert!(
        schema.get("title").is_none(),
        "the Rust type's name is not sent: {schema}"
    );
    match shape.judge(&bare(&good_ticket()), None) {
        Judgement::Answer {
            value, reasoning, ..
        } => assert_eq!(
            reasoning, value.reasoning,
            "the run's reasoning is the answer's"
        ),
        other => panic!("{other:?}"),
    }
    // An answer wrapped in the envelope other frameworks ask for is understood; the run's
    // reasoning is still the answer's own.
    let text = json!({"reasoning": "outer", "answer": good_ticket()}).to_string();
    match shape.judge(&text, None) {
        Judgement::Answer {
            value, reasoning, ..
        } => {
            assert_eq!(value.status, Status::Open);
            assert_eq!(reasoning, "x");
        }
        other => panic!("{other:?}"),
    }
}

/// An answer type without a reasoning field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Verdict {
    /// Whether the claim holds.
    pub holds: bool,
    /// The claim, restated.
    pub claim: String,
}

#[test]
fn a_typed_answer_schema_has_no_field_the_type_lacks() {
    for native in [false, true] {
        let schema = AnswerShape::<Verdict>::new()
            .request_schema(native)
            .unwrap()
            .schema;
        assert_eq!(property_names(&schema), ["claim", "holds"], "{schema}");
        let mut required: Vec<String> = serde_json::from_value(schema["required"].clone()).unwrap();
        required.sort();
        assert_eq!(required, ["claim", "holds"], "{schema}");
        assert!(
            !schema.to_string().contains(REASONING_DESCRIPTION),
            "{schema}"
        );
        // A type that is not an object gets the one field providers need at the root.
        let wrapped = AnswerShape::<Vec<u8>>::new()
            .request_schema(native)
            .unwrap()
            .schema;
        assert_eq!(property_names(&wrapped), ["answer"], "{wrapped}");
    }
    // Its run has no reasoning to report (none under native thinking other than the block's).
    match AnswerShape::<Verdict>::new().judge(r#"{"holds": true, "claim": "c"}"#, None) {
        Judgement::Answer { reasoning, .. } => assert_eq!(reasoning, ""),
        other => panic!("{other:?}"),
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("answer".to_owned()),
                    Just("reasoning".to_owned()),
                    Just("status".to_owned()),
                    Just("count".to_owned()),
                    Just("tags".to_owned()),
                    Just("artifacts".to_owned()),
                    "[a-z]{1,6}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn arbitrary_json_answers_never_panic(v in arb_json(), wrap in any::<bool>(), thinking in any::<bool>()) {
        let text = if wrap { envelope(v) } else { v.to_string() };
        let th = thinking.then_some("because");
        let _ = AnswerShape::<Ticket>::new().judge(&text, th);
        let _ = AnswerShape::<String>::new().judge(&text, th);
        let _ = AnswerShape::<Vec<u8>>::new().judge(&text, th);
    }

    #[test]
    fn arbitrary_text_never_panics(s in ".{0,64}") {
        let _ = AnswerShape::<Ticket>::new().judge(&s, None);
    }
}

#[test]
fn a_fenced_answer_is_unwrapped_once() {
    let shape = AnswerShape::<Ticket>::new();
    let text = format!("```json\n{}\n```", bare(&good_ticket()));
    assert!(matches!(shape.judge(&text, None), Judgement::Answer { .. }));
}

/// The sub-thinker's answer asks for its reasoning as an approach and steps, described as a
/// justification a reader can check; under native thinking the field is left out and filled from
/// the thinking block, its first paragraph the approach and the rest the steps.
#[test]
fn the_sub_answer_asks_for_structured_reasoning_or_fills_it_from_the_thinking_block() {
    use crate::thinker::{AnalysisReasoning, subthinker::SubThinkerAnswer};
    let shape = AnswerShape::<SubThinkerAnswer>::new();
    let asked = shape.request_schema(false).unwrap().schema;
    let reasoning = &asked["properties"]["reasoning"];
    let target = reasoning["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#"))
        .map_or(reasoning, |p| asked.pointer(p).unwrap());
    assert!(target["properties"]["approach"].is_object(), "{asked}");
    assert_eq!(target["properties"]["steps"]["type"], "array", "{asked}");
    assert!(
        !asked.to_string().to_lowercase().contains("thought"),
        "{asked}"
    );

    let native = shape.request_schema(true).unwrap().schema;
    assert!(native["properties"].get("reasoning").is_none(), "{native}");
    let text = json!({"summary": "s", "artifacts": []}).to_string();
    match shape.judge(
        &text,
        Some("Read the entry.\n\n@a1 says so.\n\nNothing contradicts it."),
    ) {
        Judgement::Answer { value, .. } => assert_eq!(
            value.reasoning,
            AnalysisReasoning {
                approach: "Read the entry.".into(),
                steps: vec!["@a1 says so.".into(), "Nothing contradicts it.".into()],
            }
        ),
        other => panic!("{other:?}"),
    }
}
