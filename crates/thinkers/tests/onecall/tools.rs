//! The built-in one-call tools through their providers, over real HTTP against thinkers-sim.

use serde_json::{Value, json};
use thinkers::ErrorKind;
use thinkers::model::{Envelope, Grade};
use thinkers::onecall::tools::{
    AnalyzeViolation, QuickAnswer, QuickQuestion, Severity, Summarization, Summary,
    ViolationAnalysis,
};
use thinkers::onecall::{ModelTool, ModelToolProvider};
use thinkers::tool::{ToolCallContext, ToolProvider};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, SimConfig};

use crate::support::{CANARY, Setup, setup, setup_with};

async fn scripted(rules: Vec<ScriptRule>) -> Setup {
    setup_with(
        |c| SimConfig {
            script: Some(Script::new(rules)),
            ..c
        },
        Envelope::unrestricted(),
    )
    .await
}

/// Every `description` in a schema, at any depth.
fn descriptions(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(d)) = m.get("description") {
                out.push(d.to_lowercase());
            }
            m.values().for_each(|x| descriptions(x, out));
        }
        Value::Array(xs) => xs.iter().for_each(|x| descriptions(x, out)),
        _ => {}
    }
}

fn justification_is_checkable<T: ModelTool>() {
    let schema = schemars::schema_for!(T::Output).to_value();
    let mut all = Vec::new();
    descriptions(&schema, &mut all);
    for d in &all {
        for banned in [
            "thought process",
            "thinking",
            "chain of thought",
            "think step",
        ] {
            assert!(!d.contains(banned), "{}: {d}", T::NAME);
        }
    }
    let j = schema["properties"]["justification"]["description"]
        .as_str()
        .unwrap();
    assert!(j.contains("a reader can check"), "{}: {j}", T::NAME);
}

#[test]
fn the_tools_are_read_only_and_ask_for_checkable_justifications() {
    justification_is_checkable::<QuickQuestion>();
    justification_is_checkable::<AnalyzeViolation>();
    assert!(ModelToolProvider::new(QuickQuestion).read_only());
    assert!(ModelToolProvider::new(Summarization).read_only());
    assert!(ModelToolProvider::new(AnalyzeViolation).read_only());

    let q = ModelToolProvider::new(QuickQuestion);
    assert_eq!(q.name(), "quick_llm_question");
    let required = q.input_schema()["required"].as_array().unwrap();
    assert!(required.contains(&json!("question")) && required.contains(&json!("grade")));
    assert!(!required.contains(&json!("context")));
}

#[tokio::test]
async fn a_quick_question_runs_at_the_grade_it_states() {
    let s = setup().await;
    let provider = ModelToolProvider::new(QuickQuestion);
    let call = provider
        .instantiate(
            &json!({"question": "Is a pin checked against the envelope?", "grade": "medium",
                   "context": "A pin bypasses the picker, never the envelope."}),
            // The question's own grade wins over the caller's.
            &ToolCallContext::with_grade(Grade::Mega),
        )
        .unwrap();
    let out = s.rt.run(call).await.unwrap();
    let answer = out.downcast::<QuickAnswer>().unwrap();
    assert!(!answer.answer.is_empty() && !answer.justification.is_empty());
    let runs = s.rec.llm_runs();
    assert_eq!(runs.len(), 1);
    assert!(
        runs[0].entry.starts_with("sim-medium-"),
        "{}",
        runs[0].entry
    );
    assert_eq!(runs[0].class, "quick_llm_question");
    let body = &s.sim.requests()[0];
    assert!(
        body.raw_body.contains("Question:\\nIs a pin checked"),
        "{}",
        body.raw_body
    );
    assert!(body.raw_body.contains("Context:\\nA pin bypasses"));
    let missing = provider
        .instantiate(&json!({"question": "Why?"}), &ToolCallContext::default())
        .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::InvalidInput);
    assert!(missing.to_string().contains("`grade`"), "{missing}");
}

#[tokio::test]
async fn a_summary_is_sent_back_when_it_runs_far_past_its_target() {
    let long = "word ".repeat(200);
    let s = scripted(vec![
        ScriptRule::when_contains(
            "Summarise the text below in about 20 words.",
            ScriptAnswer::Json(json!({"summary": long, "key_points": ["a point"]})),
        )
        .times(1),
        ScriptRule::when_contains(
            "not accepted",
            ScriptAnswer::Json(json!({
                "summary": "Seats reserve tokens; admission waits until the reservation fits.",
                "key_points": ["Seats reserve tokens.", "Admission waits for room."]
            })),
        ),
    ])
    .await;
    let provider = ModelToolProvider::new(Summarization);
    let call = provider
        .instantiate(
            &json!({"text": "A seat reserves tokens. Admission waits until the whole reservation \
                            fits the entry's budgets.",
                   "focus": "admission", "target_words": 20}),
            &ToolCallContext::default(),
        )
        .unwrap();
    let out = s.rt.run(call).await.unwrap();
    let summary = out.downcast::<Summary>().unwrap();
    assert_eq!(summary.key_points.len(), 2);
    let reqs = s.sim.requests();
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].raw_body.contains("Focus on: admission"));
    assert!(
        reqs[1]
            .raw_body
            .contains("runs to 200 words, far past the target of about 20")
    );
    assert!(
        s.rec.llm_runs()[0].entry.starts_with("sim-small-"),
        "declared small"
    );
    let zero = provider
        .instantiate(
            &json!({"text": "x", "target_words": 0}),
            &ToolCallContext::default(),
        )
        .unwrap_err();
    assert!(zero.to_string().contains("`target_words`"), "{zero}");
}

#[tokio::test]
async fn a_violation_analysis_is_corrected_until_its_evidence_is_quoted() {
    let text = "Customer passwords are stored in plain text on the shared drive.";
    let s = scripted(vec![
        ScriptRule::when_contains(
            "Rule:",
            ScriptAnswer::Json(json!({
                "violated": true, "severity": "none", "evidence": [CANARY],
                "justification": "The text stores secrets unencrypted."
            })),
        )
        .times(1),
        ScriptRule::when_contains(
            "not accepted",
            ScriptAnswer::Json(json!({
                "violated": true, "severity": "high",
                "evidence": ["passwords are stored in plain text"],
                "justification": "The rule forbids unencrypted secrets; the quote stores passwords unencrypted."
            })),
        ),
    ])
    .await;
    let provider = ModelToolProvider::new(AnalyzeViolation);
    let call = provider
        .instantiate(
            &json!({"text": text, "rule": "Secrets must never be stored unencrypted."}),
            &ToolCallContext::default(),
        )
        .unwrap();
    let out = s.rt.run(call).await.unwrap();
    let analysis = out.downcast::<ViolationAnalysis>().unwrap();
    assert!(analysis.violated);
    assert_eq!(analysis.severity, Severity::High);
    assert_eq!(out.json["severity"], "high");
    let reqs = s.sim.requests();
    assert_eq!(reqs.len(), 2);
    let correction = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        correction.contains("must not be \\\"none\\\" when `violated` is true"),
        "{correction}"
    );
    assert!(
        correction.contains("`evidence[0]` does not occur in the text"),
        "{correction}"
    );
    assert!(!correction.contains(CANARY), "{correction}");
    // The response contract names the severities.
    let schema = reqs[0].body["response_format"]["json_schema"]["schema"].to_string();
    for s in ["none", "low", "medium", "high", "critical"] {
        assert!(schema.contains(&format!("\"{s}\"")), "{schema}");
    }
}

#[tokio::test]
async fn the_schema_driven_answers_of_the_sim_fit_every_tool() {
    let s = setup().await;
    let q = ModelToolProvider::new(QuickQuestion);
    let call = q
        .instantiate(
            &json!({"question": "What is a grade?", "grade": "small"}),
            &ToolCallContext::default(),
        )
        .unwrap();
    let out = s.rt.run(call).await.unwrap();
    assert!(out.downcast::<QuickAnswer>().is_some());
    let v = ModelToolProvider::new(AnalyzeViolation);
    let call = v
        .instantiate(
            &json!({"text": "All good here.", "rule": "Be polite."}),
            &ToolCallContext::default(),
        )
        .unwrap();
    // Whatever the sim invents, the tool ends with a typed analysis (corrected, or returned as
    // it is past the bound), never an error.
    let out = s.rt.run(call).await.unwrap();
    assert!(out.downcast::<ViolationAnalysis>().is_some());
    assert!(s.sim.requests().len() <= 1 + 4);
}
