//! The correction protocol through the test seam: no transport, the real dispatcher.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use thinkers::conversation::{ContentBlock, MediaSource, Message, Role};
use thinkers::error::BoxError;
use thinkers::onecall::{ExchangeHook, MAX_CORRECTIONS, ModelToolJob, ModelToolProvider};
use thinkers::record::JobStatus;
use thinkers::tool::{ToolCallContext, ToolProvider};
use thinkers::{Error, ErrorKind, RetrySignal};

use crate::support::{
    CANARY, GOOD, Label, Probe, Rating, Scripted, answer, probe_input, seam_runtime, truncated,
};

fn job(script: &Arc<Scripted>) -> ModelToolJob<Probe> {
    ModelToolJob::new(Arc::new(Probe::SMALL), probe_input())
        .unwrap()
        .answer_with(script.clone())
}

/// The text of the last user turn of a request.
fn last_user(messages: &[Message]) -> String {
    let m = messages.last().unwrap();
    assert_eq!(m.role, Role::User);
    m.text()
}

#[tokio::test]
async fn a_misfit_goes_back_as_a_schema_worded_correction_on_the_same_instance() {
    let (rt, rec) = seam_runtime().await;
    let not_json = format!("Sure! label={CANARY}");
    let wrong_enum = format!(r#"{{"label": "{CANARY}", "score": 3}}"#);
    let script = Scripted::texts(&[&not_json, &wrong_enum, GOOD]);
    let corrections_seen = Arc::new(Mutex::new(Vec::new()));
    let log = corrections_seen.clone();
    let hook: ExchangeHook = Arc::new(move |x| log.lock().unwrap().push(x.corrections));

    let out = rt.run(job(&script).on_exchange(hook)).await.unwrap();
    assert_eq!(
        out,
        Rating {
            label: Label::Good,
            score: 7
        }
    );

    let seen = script.seen();
    assert_eq!(seen.len(), 3);
    // The conversation was built once and grew by two turns per correction.
    let lens: Vec<usize> = seen.iter().map(|s| s.request.messages.len()).collect();
    assert_eq!(lens, [1, 3, 5]);
    for s in &seen {
        assert_eq!(s.request.messages[0], seen[0].request.messages[0]);
        assert_eq!(s.request.system, seen[0].request.system);
        assert_eq!(s.request.response, seen[0].request.response);
    }
    // The same instance ran each time: its own correction count grew 0, 1, 2, in step with the
    // dispatcher's.
    assert_eq!(*corrections_seen.lock().unwrap(), [0, 1, 2]);
    let counted: Vec<u32> = seen.iter().map(|s| s.attempt.corrections).collect();
    assert_eq!(counted, [0, 1, 2]);

    // First correction: the model's answer as an assistant turn, then a user turn in schema terms.
    let second = &seen[1].request.messages;
    assert_eq!(second[1].role, Role::Assistant);
    assert_eq!(
        second[1].text(),
        not_json,
        "the model's own turn is kept as it said it"
    );
    let turn = last_user(second);
    assert!(turn.contains("not valid JSON"), "{turn}");
    assert!(turn.contains("type `Rating`"), "{turn}");
    assert!(turn.contains(r#"`label` (one of "good", "bad")"#), "{turn}");
    assert!(turn.contains("`score` (an integer)"), "{turn}");
    assert!(
        !turn.contains(CANARY),
        "the correction repeats the answer: {turn}"
    );

    // Second correction: names the field and its accepted values, never the value sent.
    let turn = last_user(&seen[2].request.messages);
    assert!(
        turn.contains(r#"field `label` must be one of "good", "bad""#),
        "{turn}"
    );
    assert!(
        !turn.contains(CANARY),
        "the correction repeats the answer: {turn}"
    );

    let row = &rec.jobs()[0];
    assert_eq!(row.status(), JobStatus::Succeeded);
    assert_eq!(row.end.as_ref().unwrap().attempts, 3);
}

#[tokio::test]
async fn past_the_bound_a_misfit_is_an_error_naming_the_answer_and_its_type() {
    let (rt, rec) = seam_runtime().await;
    let bad = format!("{{ \"label\": {CANARY}");
    let script = Scripted::texts(&[&bad, &bad, &bad, &bad, GOOD]);
    let err = rt.run(job(&script)).await.unwrap_err();

    assert_eq!(MAX_CORRECTIONS, 3);
    assert_eq!(
        script.seen().len(),
        4,
        "exactly three corrections, then stop"
    );
    assert_eq!(script.left(), 1, "the fifth answer was never asked for");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    match &err {
        Error::InvalidInput {
            parameter, value, ..
        } => {
            assert_eq!(parameter, "answer");
            assert_eq!(value, &None);
        }
        other => panic!("{other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("`Rating`") && text.contains("not valid JSON"),
        "{text}"
    );
    assert!(!text.contains(CANARY), "{text}");
    assert_eq!(rec.jobs()[0].status(), JobStatus::Failed);
}

#[tokio::test]
async fn past_the_bound_an_invalid_answer_is_returned_as_it_is() {
    let (rt, _) = seam_runtime().await;
    let invalid = r#"{"label": "bad", "score": 4242}"#;
    let script = Scripted::texts(&[invalid, invalid, invalid, invalid]);
    let out = rt.run(job(&script)).await.unwrap();
    assert_eq!(out.score, 4242, "returned as it is");
    let seen = script.seen();
    assert_eq!(seen.len(), 4);
    let turn = last_user(&seen[3].request.messages);
    assert!(turn.contains("right shape but was not accepted"), "{turn}");
    assert!(turn.contains("`score` must be at most 10"), "{turn}");
    assert!(!turn.contains("4242"), "{turn}");
}

#[tokio::test]
async fn a_fitting_answer_after_misfits_ends_the_corrections() {
    let (rt, _) = seam_runtime().await;
    // A misfit, an invalid answer, then a fitting one: each kind of correction counts once.
    let script = Scripted::texts(&[
        r#""just a string""#,
        r#"{"label": "good", "score": 11}"#,
        GOOD,
    ]);
    let out = rt.run(job(&script)).await.unwrap();
    assert_eq!(out.score, 7);
    let seen = script.seen();
    let first = last_user(&seen[1].request.messages);
    assert!(
        first.contains("it was a JSON string, not a JSON object"),
        "{first}"
    );
    let second = last_user(&seen[2].request.messages);
    assert!(second.contains("at most 10"), "{second}");
}

#[tokio::test]
async fn retry_signals_pass_through_the_broad_catch_untouched() {
    let (rt, rec) = seam_runtime().await;
    let boxed = |e: Error| -> Result<_, BoxError> { Err(Box::new(e)) };
    let script = Scripted::new(vec![
        boxed(Error::throttled(None, Some(Duration::from_millis(20)))),
        boxed(Error::correction("the answerer asks for another go")),
        boxed(Error::Retry(RetrySignal::TruncationEscalation)),
        Ok(answer(GOOD)),
    ]);
    let out = rt.run(job(&script).pinned("sim-small-a")).await.unwrap();
    assert_eq!(out.score, 7);
    let seen = script.seen();
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[1].attempt.throttles, 1, "waited and re-admitted");
    assert_eq!(seen[2].attempt.corrections, 1);
    assert!(seen[3].attempt.escalated);
    assert_eq!(
        seen[3].request.max_output_tokens, 16_384,
        "sim-small-a's ceiling"
    );
    assert!(
        seen.iter().all(|s| s.request.messages.len() == 1),
        "signals from the answerer grow nothing"
    );
    let row = &rec.jobs()[0];
    assert_eq!(row.status(), JobStatus::Succeeded);
    assert_eq!(row.end.as_ref().unwrap().attempts, 4);

    // A foreign error is classified once, by the broad catch, and not retried.
    let script = Scripted::new(vec![
        Err(Box::new(std::io::Error::other("socket closed"))),
        Ok(answer(GOOD)),
    ]);
    let err = rt.run(job(&script)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ExternalService, "{err}");
    assert_eq!(script.left(), 1);
}

#[tokio::test]
async fn a_truncated_answer_escalates_once_and_never_enters_the_conversation() {
    let (rt, _) = seam_runtime().await;
    let script = Scripted::new(vec![Ok(truncated(r#"{"label": "go"#)), Ok(answer(GOOD))]);
    let out = rt.run(job(&script).pinned("sim-small-b")).await.unwrap();
    assert_eq!(out.score, 7);
    let seen = script.seen();
    assert_eq!(seen[0].request.max_output_tokens, 4_096, "compact");
    assert!(!seen[0].attempt.escalated);
    assert!(seen[1].attempt.escalated);
    assert_eq!(
        seen[1].request.max_output_tokens, 8_192,
        "sim-small-b's ceiling"
    );
    assert_eq!(
        seen[1].request.messages.len(),
        1,
        "the cut answer was not kept"
    );
    assert_eq!(
        seen[1].attempt.corrections, 0,
        "an escalation is not a correction"
    );

    // Cut off even at the ceiling: the job ends, it is not corrected.
    let script = Scripted::new(vec![
        Ok(truncated("{")),
        Ok(truncated("{")),
        Ok(answer(GOOD)),
    ]);
    let err = rt.run(job(&script)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AttemptsExhausted);
    assert!(err.to_string().contains("truncated"), "{err}");
    assert_eq!(script.left(), 1);
}

#[tokio::test]
async fn a_built_conversation_with_an_image_is_wired_and_corrected_the_same_way() {
    let (rt, _) = seam_runtime().await;
    let script = Scripted::texts(&["no", GOOD]);
    let built = Arc::new(Mutex::new(0));
    let count = built.clone();
    let job = job(&script).messages_with(move |input| {
        *count.lock().unwrap() += 1;
        Ok(vec![Message::new(
            Role::User,
            vec![
                ContentBlock::text(format!("Rate the {} in this picture.", input.topic)),
                ContentBlock::Image {
                    media_type: "image/png".into(),
                    source: MediaSource::Base64("iVBORw0KGgo=".into()),
                },
            ],
        )])
    });
    let out = rt.run(job).await.unwrap();
    assert_eq!(out.label, Label::Good);
    assert_eq!(*built.lock().unwrap(), 1, "built once");
    let seen = script.seen();
    for s in &seen {
        assert!(matches!(
            s.request.messages[0].content[1],
            ContentBlock::Image { .. }
        ));
        assert!(
            s.request.response.is_some(),
            "the response contract is kept"
        );
    }
    assert_eq!(seen[1].request.messages.len(), 3);
    assert!(last_user(&seen[1].request.messages).contains("not valid JSON"));
}

#[tokio::test]
async fn a_gradeless_tool_inherits_the_callers_grade_and_pin() {
    let (rt, _) = seam_runtime().await;
    let err = ModelToolJob::new(Arc::new(Probe::GRADELESS), probe_input()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::System);
    assert!(
        err.to_string().contains("probe") && err.to_string().contains("grade"),
        "{err}"
    );

    let script = Scripted::texts(&[GOOD, GOOD, GOOD]);
    let provider = ModelToolProvider::new(Probe::GRADELESS).answer_with(script.clone());
    assert!(
        !provider.read_only(),
        "read-only only when the tool says so"
    );
    let args = serde_json::json!({"topic": "tea"});
    let err = provider
        .instantiate(&args, &ToolCallContext::default())
        .unwrap_err();
    assert!(err.to_string().contains("grade"), "{err}");

    let cx = ToolCallContext::with_grade(thinkers::model::Grade::Large);
    let out = rt
        .run(provider.instantiate(&args, &cx).unwrap())
        .await
        .unwrap();
    assert_eq!(out.downcast::<Rating>().unwrap().score, 7);
    assert_eq!(out.json["label"], "good");
    let mut cx = ToolCallContext::with_grade(thinkers::model::Grade::Medium);
    cx.parent_pin = Some("sim-medium-b".into());
    rt.run(provider.instantiate(&args, &cx).unwrap())
        .await
        .unwrap();
    // A tool's own grade wins over the caller's.
    let own = ModelToolProvider::new(Probe::SMALL).answer_with(script.clone());
    rt.run(own.instantiate(&args, &cx.clone()).unwrap())
        .await
        .unwrap();

    let entries: Vec<String> = script.seen().into_iter().map(|s| s.entry).collect();
    assert!(entries[0].starts_with("sim-large-"), "{entries:?}");
    assert_eq!(entries[1], "sim-medium-b", "the caller's pin");
    assert_eq!(
        entries[2], "sim-medium-b",
        "the pin also reaches a tool with its own grade"
    );
}

#[tokio::test]
async fn arguments_that_do_not_fit_are_refused_naming_the_parameter() {
    let provider = ModelToolProvider::new(Probe::SMALL);
    let err = provider
        .instantiate(
            &serde_json::json!({"topic": 12}),
            &ToolCallContext::default(),
        )
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("`topic`"), "{err}");
}
