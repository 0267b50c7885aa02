//! `LlmCall` with a response schema corrects its answer like a one-call tool (issue 30, point
//! 5): a malformed answer goes back as a correction turn and the call runs again, at most
//! `MAX_CORRECTIONS` times; past that a parse failure fails the call and an answer that parses
//! but breaks a constraint of the schema is returned as it is. A caller that judges answers
//! itself opts out with `uncorrected`.

use serde_json::{Value, json};
use thinkers::ErrorKind;
use thinkers::conversation::Message;
use thinkers::llm::{ChatRequest, LlmCall, ResponseSchema};
use thinkers::model::{Grade, OutputSize};
use thinkers::onecall::MAX_CORRECTIONS;
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, SimConfig};

use crate::support::{Setup, setup_with};

const CANARY: &str = "CANARY-call-0c1e";

/// A call pinned to `entry` whose answer must be `{"summary": string, "confidence": 0..=1}`.
fn contract_call(entry: &str) -> LlmCall {
    let mut request = ChatRequest::new(
        "Answer in one sentence.",
        vec![Message::user_text("What is a seat?")],
    );
    request.response = Some(ResponseSchema {
        name: "answer".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "summary": {"type": "string"},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1}
            },
            "required": ["summary", "confidence"],
            "additionalProperties": false
        })
        .into(),
    });
    LlmCall::new(Grade::Small, OutputSize::Compact, request).pinned(entry.to_owned())
}

/// A sim that answers `answer` (`times` times, or always), then from the schema.
async fn sim(answer: ScriptAnswer, times: Option<u32>) -> Setup {
    let mut rule = ScriptRule::when_contains("", answer);
    if let Some(n) = times {
        rule = rule.times(n);
    }
    setup_with(|c| SimConfig {
        script: Some(Script::new(vec![rule])),
        ..c
    })
    .await
}

/// The texts of the messages of a logged request body (either dialect), in order.
fn texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        })
        .collect()
}

#[tokio::test]
async fn a_malformed_answer_is_corrected_then_the_call_answers() {
    for entry in ["sim-small-a", "sim-small-b"] {
        let s = sim(ScriptAnswer::Text(format!("Sure! {CANARY}")), Some(1)).await;
        let out = s.rt.run(contract_call(entry)).await.unwrap();
        let answer: Value = serde_json::from_str(&out.response.text()).unwrap();
        assert!(answer["summary"].is_string(), "{entry}: {answer}");
        let bodies = s.sim.requests();
        assert_eq!(bodies.len(), 2, "{entry}: one correction");
        let second = texts(&bodies[1].body);
        let n = second.len();
        assert!(
            second[n - 2].contains(CANARY),
            "{entry}: the model's turn is kept"
        );
        let correction = &second[n - 1];
        assert!(
            correction.contains("not valid JSON"),
            "{entry}: {correction}"
        );
        assert!(correction.contains("`confidence`"), "{entry}: {correction}");
        assert!(!correction.contains(CANARY), "{entry}: {correction}");
        assert_eq!(s.rec.llm_runs().len(), 2, "{entry}: both calls recorded");
    }
}

#[tokio::test]
async fn past_the_bound_an_answer_that_does_not_parse_fails_the_call() {
    // Nested or not, a missing required field or a wrong kind is a parse failure.
    for wrong in [
        json!({"summary": CANARY}),
        json!({"summary": 3, "confidence": 0.5}),
        json!({"summary": "s", "confidence": 0.5, CANARY: 1}),
    ] {
        let s = sim(ScriptAnswer::Json(wrong.clone()), None).await;
        let err = s.rt.run(contract_call("sim-small-a")).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{wrong}: {err}");
        let thinkers::Error::InvalidInput { parameter, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(parameter, "answer");
        assert!(!err.to_string().contains(CANARY), "{err}");
        assert_eq!(
            s.sim.requests().len(),
            1 + MAX_CORRECTIONS as usize,
            "{wrong}: the first answer and each correction"
        );
    }
}

#[tokio::test]
async fn past_the_bound_an_answer_that_breaks_a_constraint_is_returned_as_it_is() {
    let wrong = json!({"summary": "a seat is a claim", "confidence": 7});
    let s = sim(ScriptAnswer::Json(wrong.clone()), None).await;
    let out = s.rt.run(contract_call("sim-small-a")).await.unwrap();
    let answer: Value = serde_json::from_str(&out.response.text()).unwrap();
    assert_eq!(answer, wrong);
    let bodies = s.sim.requests();
    assert_eq!(bodies.len(), 1 + MAX_CORRECTIONS as usize);
    let correction = texts(&bodies[1].body).pop().unwrap();
    assert!(correction.contains("`maximum` (1)"), "{correction}");
    assert!(correction.contains("`confidence`"), "{correction}");
}

#[tokio::test]
async fn an_uncorrected_call_hands_the_answer_over_as_written() {
    let s = sim(ScriptAnswer::Text("not json".into()), None).await;
    let out =
        s.rt.run(contract_call("sim-small-a").uncorrected())
            .await
            .unwrap();
    assert_eq!(out.response.text(), "not json");
    assert_eq!(s.sim.requests().len(), 1);
}
