//! `null` for an optional argument or answer field means the field is absent: OpenAI strict
//! mode makes every optional property required and nullable, so a model answering in strict mode
//! writes `null` for what it leaves out. One test per built-in tool (every optional argument
//! `null`), and the two answer boundaries. The service tools' own are in `thinkers-tools`.

use std::fmt::Debug;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::benchmark::JudgeInput;
use crate::hub::CatalogEntry;
use crate::onecall::AnswerShape as OneCallShape;
use crate::onecall::tools::{QuickQuestionInput, SummarizationInput, ViolationInput};
use crate::thinker::{AnswerShape, Judgement, SubThinkerInput};
use crate::tool::decode_arguments;

/// The top-level properties `schema` declares but does not require.
fn optional_properties(schema: &Value) -> Vec<String> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k.clone())
        .filter(|k| !required.contains(&k.as_str()))
        .collect()
}

/// Decode `required` (the required arguments only) and the same with every optional argument
/// `null`; both must decode to the same input. Returns the optional arguments, so each test
/// states which ones it covered.
fn nulls_decode_as_absent<I>(required: &Value) -> Vec<String>
where
    I: DeserializeOwned + JsonSchema + Debug + 'static,
{
    let optional = optional_properties(&crate::schema::of::<I>());
    let mut nulled = required.clone();
    for k in &optional {
        nulled[k.as_str()] = Value::Null;
    }
    let absent: I = decode_arguments(required).expect("the required arguments decode");
    let with_nulls: I = match decode_arguments(&nulled) {
        Ok(input) => input,
        Err(e) => panic!("{nulled}: {e}"),
    };
    assert_eq!(format!("{with_nulls:?}"), format!("{absent:?}"));
    optional
}

#[test]
fn sub_thinker() {
    assert_eq!(
        nulls_decode_as_absent::<SubThinkerInput>(&json!({"objective": "find it"})),
        ["artifact_refs", "depth"]
    );
}

#[test]
fn quick_llm_question() {
    assert_eq!(
        nulls_decode_as_absent::<QuickQuestionInput>(
            &json!({"question": "why?", "grade": "small"})
        ),
        ["context"]
    );
}

#[test]
fn summarization() {
    assert_eq!(
        nulls_decode_as_absent::<SummarizationInput>(&json!({"text": "t", "target_words": 5})),
        ["focus"]
    );
}

#[test]
fn tools_without_optional_arguments() {
    // Nothing to make null: these assert that it stays so (a new optional argument lands in a
    // test of its own).
    assert!(
        nulls_decode_as_absent::<ViolationInput>(&json!({"text": "t", "rule": "r"})).is_empty()
    );
    let sheet = json!({"transcript": "t", "answer": "a"});
    assert!(
        nulls_decode_as_absent::<JudgeInput>(
            &json!({"task": "t", "reference": sheet, "candidate": sheet})
        )
        .is_empty()
    );
    // `request_tools` and `request_skill` take one required list of names.
    let catalog = [CatalogEntry {
        name: "lookup".into(),
        description: "Look things up.".into(),
    }];
    for field in ["tool_names", "skill_names"] {
        let schema = crate::thinker::doors::catalog_schema(field, "names", &catalog);
        assert!(optional_properties(&schema).is_empty(), "{schema}");
    }
}

/// An answer type with optional fields of both kinds: a defaulted list and an `Option`.
#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Finding {
    summary: String,
    #[serde(default)]
    artifacts: Vec<String>,
    note: Option<String>,
}

#[test]
fn a_thinker_answer_with_optional_fields_null() {
    let shape = AnswerShape::<Finding>::new();
    let text = r#"{"reasoning": "r", "answer": {"summary": "s", "artifacts": null, "note": null}}"#;
    match shape.judge(text, None) {
        Judgement::Answer { value, .. } => assert_eq!(
            value,
            Finding {
                summary: "s".into(),
                artifacts: Vec::new(),
                note: None,
            }
        ),
        Judgement::Refused(e) => panic!("refused: {e}"),
        Judgement::NoAnswer => panic!("no answer"),
    }
}

#[test]
fn a_one_call_answer_with_optional_fields_null() {
    let shape = OneCallShape::of::<Finding>();
    let answer: Finding = match shape.decode(r#"{"summary": "s", "artifacts": null, "note": null}"#)
    {
        Ok(answer) => answer,
        Err(refusal) => panic!("refused: {}", refusal.problem()),
    };
    assert_eq!(answer.artifacts, Vec::<String>::new());
}
