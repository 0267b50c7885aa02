//! Unit tests of the answer boundary: one conversion, refusals composed from the schema only.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::*;
use crate::ErrorKind;

const CANARY: &str = "CANARY-93c1";

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Level {
    /// Nothing.
    Calm,
    /// Something.
    Alarmed,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Quote {
    text: String,
    line: u32,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Report {
    /// The verdict.
    ok: bool,
    level: Level,
    quotes: Vec<Quote>,
    note: Option<String>,
}

fn shape() -> AnswerShape {
    AnswerShape::of::<Report>()
}

fn refuse(text: &str) -> AnswerRefusal {
    match shape().decode::<Report>(text) {
        Ok(r) => panic!("accepted {r:?}"),
        Err(e) => e,
    }
}

#[test]
fn a_fitting_answer_decodes_fenced_or_not() {
    let text = r#"{"ok": true, "level": "calm", "quotes": [{"text": "a", "line": 3}]}"#;
    let r: Report = shape().decode(text).unwrap();
    assert_eq!(r.quotes[0].line, 3);
    assert_eq!(r.note, None);
    let fenced = format!("```json\n{text}\n```");
    assert_eq!(shape().decode::<Report>(&fenced).unwrap(), r);
}

#[test]
fn the_shape_is_described_from_the_schema() {
    let d = shape().describe();
    assert!(d.starts_with("a JSON object of type `Report`"), "{d}");
    assert!(d.contains("`ok` (true or false)"), "{d}");
    assert!(d.contains(r#"`level` (one of "calm", "alarmed")"#), "{d}");
    assert!(
        d.contains("`quotes` (an array of objects of type `Quote` with the fields `text` (a string) and `line` (an integer))"),
        "{d}"
    );
    assert!(d.contains("`note` (optional; a string or null)"), "{d}");
}

#[test]
fn refusals_name_schema_facts_and_never_the_value() {
    let cases = [
        (format!("not json {CANARY}"), "not valid JSON"),
        (
            format!("\"{CANARY}\""),
            "it was a JSON string, not a JSON object",
        ),
        (format!("[\"{CANARY}\"]"), "it was an array"),
        (
            format!(r#"{{"level": "calm", "quotes": [], "x": "{CANARY}"}}"#),
            "lacks the required field `ok`",
        ),
        (
            format!(r#"{{"ok": true, "level": "{CANARY}", "quotes": []}}"#),
            r#"field `level` must be one of "calm", "alarmed""#,
        ),
        (
            format!(r#"{{"ok": "{CANARY}", "level": "calm", "quotes": []}}"#),
            "field `ok` must be true or false",
        ),
        (
            format!(
                r#"{{"ok": true, "level": "calm", "quotes": [{{"text": "a", "line": 1}}, {{"text": "b", "line": "{CANARY}"}}]}}"#
            ),
            "field `quotes[1].line` must be an integer",
        ),
        (
            format!(r#"{{"ok": true, "level": "calm", "quotes": [{{"line": 1, "{CANARY}": 2}}]}}"#),
            "the required field `quotes[0].text` is missing; it must be a string",
        ),
        ("".to_owned(), "it was empty"),
    ];
    for (answer, expected) in cases {
        let refusal = refuse(&answer);
        assert!(
            refusal.problem().contains(expected),
            "{answer}: {}",
            refusal.problem()
        );
        let turn = shape().correction_for_misfit(&refusal);
        assert!(
            !turn.contains(CANARY),
            "the correction echoes the answer: {turn}"
        );
        assert!(turn.contains("type `Report`"), "{turn}");
        let err = refusal.into_error(&shape());
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        let shown = err.to_string();
        assert!(
            shown.contains("`answer`") && shown.contains("`Report`"),
            "{shown}"
        );
        assert!(
            !shown.contains(CANARY),
            "the error echoes the answer: {shown}"
        );
        match &err {
            Error::InvalidInput { value, .. } => assert_eq!(value, &None),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn the_decoders_complaint_stays_on_the_source_chain() {
    let refusal = refuse(&format!(
        r#"{{"ok": true, "level": "{CANARY}", "quotes": []}}"#
    ));
    let err = refusal.into_error(&shape());
    let source = std::error::Error::source(&err)
        .expect("a source")
        .to_string();
    assert!(source.contains(CANARY), "{source}");
    assert!(!err.to_string().contains(CANARY));
}

#[test]
fn a_key_the_model_invented_is_not_repeated() {
    #[derive(Debug, Deserialize, JsonSchema)]
    struct Counts {
        #[allow(dead_code)] // Read only through the decoder.
        by_name: std::collections::BTreeMap<String, u32>,
    }
    let shape = AnswerShape::of::<Counts>();
    let Err(refusal) = shape.decode::<Counts>(&format!(r#"{{"by_name": {{"{CANARY}": "x"}}}}"#))
    else {
        panic!("accepted a string count");
    };
    assert!(!refusal.problem().contains(CANARY), "{}", refusal.problem());
    assert!(
        refusal.problem().contains("by_name entry"),
        "{}",
        refusal.problem()
    );
    assert!(
        refusal.problem().contains("an integer"),
        "{}",
        refusal.problem()
    );
}

#[test]
fn a_leading_thinking_block_and_one_fence_are_dropped_before_the_answer() {
    assert_eq!(
        super::strip_thinking("\n<think>\nLook it up.\n</think>\n\nA seat.").trim(),
        "A seat."
    );
    assert_eq!(super::strip_thinking("<think>never closed"), "");
    assert_eq!(
        super::strip_thinking("A seat. <think>x</think>"),
        "A seat. <think>x</think>"
    );
    assert_eq!(
        super::answer_text("<think>a</think>\n```json\n{\"a\": 1}\n```"),
        "{\"a\": 1}"
    );
}

#[test]
fn a_one_call_answer_after_a_thinking_block_is_decoded() {
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema, PartialEq)]
    struct Pick {
        ok: bool,
    }
    let shape = AnswerShape::of::<Pick>();
    let got: Pick = shape
        .decode("<think>\nIt holds.\n</think>\n{\"ok\": true}")
        .map_err(|r| r.problem().to_owned())
        .unwrap();
    assert_eq!(got, Pick { ok: true });
}
