//! `ToollessThinker` over the sim: guardrail corrections (accepted after one, failing after
//! two with the last refusal), no tools, the read-only scope, the answer-shape boundary, leaf
//! answer types and native thinking.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use thinkers::Error;
use thinkers::job::ScopeGuard;
use thinkers::model::{Depth, Grade, ModelDependent, OutputSize};
use thinkers::record::JobStatus;
use thinkers::thinker::{
    ContentStream, GuardrailRefusal, MAX_GUARDRAIL_CORRECTIONS, SystemPrompt, ThinkerDeclaration,
    ToollessThinker, Verdict,
};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule};

use crate::support::{Routing, Team, Ticket, decl, jobs_of, router, scripted, setup};

fn ticket() -> Ticket {
    Ticket {
        text: "My invoice shows the wrong amount.".into(),
    }
}

#[tokio::test]
async fn a_guardrail_refuses_once_then_the_classification_is_accepted() {
    let script = Script::new(vec![
        ScriptRule::when_contains("invoice", ScriptAnswer::Json(json!({"team": "other"}))).times(1),
        ScriptRule::when_contains(
            "Revise your answer",
            ScriptAnswer::Json(json!({"team": "billing"})),
        )
        .times(1),
    ]);
    let s = scripted(script).await;
    let stream = ContentStream::new(8);
    let mut events = stream.subscribe();
    let t = router("sim-small-a")
        .content_stream(stream)
        .guardrail(|r: &Routing| match r.team {
            Team::Other => Verdict::refuse("a ticket about money goes to a named team"),
            _ => Verdict::Accept,
        });
    let obs = t.observer();
    let answer = s.rt.run(t.ask(ticket())).await.unwrap();
    assert_eq!(answer.team, Team::Billing);

    // Two calls on the wire: the candidate refused, then the accepted one.
    assert_eq!(s.sim.stats().model("sim-small-a").requests, 2);
    let bodies = s.sim.requests();
    assert_eq!(bodies.len(), 2);
    let second = bodies[1].body.to_string();
    assert!(second.contains("refused by a check"), "{second}");
    assert!(
        second.contains("a ticket about money goes to a named team"),
        "{second}"
    );
    for b in &bodies {
        assert!(b.body.get("tools").is_none() && b.body.get("tool_choice").is_none());
        // The answer type itself, not the loop's envelope.
        let schema = &b.body["response_format"]["json_schema"]["schema"];
        assert!(schema["properties"].get("team").is_some(), "{schema}");
        assert!(schema["properties"].get("answer").is_none(), "{schema}");
    }

    // One recorded, admitted model call per candidate, each in its own step under the thinker.
    let root = jobs_of(&s, 0, "ticket_router");
    assert_eq!(root.len(), 1);
    assert_eq!(root[0].status(), JobStatus::Succeeded);
    let calls = jobs_of(&s, 0, "ticket_router.call");
    assert_eq!(calls.len(), 2);
    for (i, c) in calls.iter().enumerate() {
        assert_eq!(c.start.parent, Some(root[0].start.id));
        assert_eq!(c.start.ordinal, Some(i as u32 + 1));
        assert_eq!(c.status(), JobStatus::Succeeded);
    }
    let runs = s.rec.llm_runs();
    assert_eq!(runs.len(), 2);
    assert!(
        runs.iter().all(|r| r.entry == "sim-small-a"),
        "the pin reaches every call"
    );

    // The accepted answer is an artifact, published once, and the transcript shows the refusal.
    let artifacts = obs.artifacts();
    assert_eq!(artifacts.len(), 1);
    let first = artifacts.iter().next().unwrap();
    assert_eq!(first.downcast::<Routing>(), Some(&answer));
    let event = events.try_recv().unwrap();
    assert_eq!(event.class, "ticket_router");
    assert_eq!(event.content, json!({"team": "billing"}).to_string());
    assert!(events.try_recv().is_err(), "published once");
    assert!(obs.transcript().contains("refused by a check"));
}

#[tokio::test]
async fn a_third_refusal_fails_the_run_with_the_last_refusal() {
    let s = setup().await;
    let refusals = Arc::new(AtomicU32::new(0));
    let counter = refusals.clone();
    let t = router("sim-small-b").guardrail(move |_: &Routing| {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        Verdict::refuse(format!("refusal number {n}"))
    });
    let err = s.rt.run(t.ask(ticket())).await.unwrap_err();
    assert_eq!(refusals.load(Ordering::SeqCst), 3);
    assert_eq!(s.sim.stats().model("sim-small-b").requests, 3);
    let refusal = GuardrailRefusal::of(&err).expect("a guardrail refusal on the error");
    assert_eq!(refusal.reason(), "refusal number 3");
    assert_eq!(refusal.corrections(), MAX_GUARDRAIL_CORRECTIONS);
    match &err {
        Error::InvalidInput {
            parameter, reason, ..
        } => {
            assert_eq!(parameter, "answer");
            assert!(reason.contains("refusal number 3"), "{reason}");
        }
        other => panic!("expected invalid input, got {other:?}"),
    }
    // The two corrections reached the model; the third refusal did not.
    let last = s.sim.requests().last().unwrap().body.to_string();
    assert!(last.contains("refusal number 2") && !last.contains("refusal number 3"));
    let root = jobs_of(&s, 0, "ticket_router");
    assert_eq!(root[0].status(), JobStatus::Failed);
}

#[tokio::test]
async fn a_blank_system_prompt_is_an_error_naming_it() {
    let err = SystemPrompt::new(" \n ").unwrap_err();
    assert!(err.to_string().contains("system_prompt"), "{err}");
}

#[tokio::test]
async fn it_runs_under_a_read_only_scope() {
    let s = setup().await;
    let t = router("sim-small-b");
    let answer =
        s.rt.dispatcher()
            .submit_scoped(t.ask(ticket()), ScopeGuard::unbound().read_only())
            .await
            .unwrap();
    assert!(matches!(
        answer.team,
        Team::Billing | Team::Technical | Team::Other
    ));
    let runs = s.rec.llm_runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].entry, "sim-small-b");
}

#[tokio::test]
async fn a_wrong_shape_is_corrected_from_the_schema_and_a_canary_never_goes_back() {
    const CANARY: &str = "CANARY-toolless-7f3a";
    let script = Script::new(vec![
        ScriptRule::when_contains("", ScriptAnswer::Json(json!(CANARY))).times(1),
    ]);
    let s = scripted(script).await;
    let answer = s.rt.run(router("sim-small-a").ask(ticket())).await.unwrap();
    assert!(matches!(
        answer.team,
        Team::Billing | Team::Technical | Team::Other
    ));
    let bodies = s.sim.requests();
    assert_eq!(bodies.len(), 2);
    let second = bodies[1].body.to_string();
    assert!(!second.contains(CANARY), "{second}");
    assert!(
        second.contains("Routing"),
        "names the declared type: {second}"
    );
}

#[tokio::test]
async fn a_leaf_answer_type_travels_wrapped_and_is_unwrapped() {
    let s = setup().await;
    let mut t = ToollessThinker::<String, Team>::new(
        decl(),
        SystemPrompt::new("Name the team for the ticket.").unwrap(),
    );
    t.pin_model("sim-small-a".into());
    let team =
        s.rt.run(t.ask("The app crashes on start.".to_owned()))
            .await
            .unwrap();
    assert!(matches!(
        team,
        Team::Billing | Team::Technical | Team::Other
    ));
    let body = s.sim.requests()[0].body.clone();
    let schema = &body["response_format"]["json_schema"]["schema"];
    assert_eq!(
        schema["properties"]["answer"]["enum"],
        json!(["billing", "technical", "other"]),
        "{schema}"
    );
    // A string input is the user message as it is.
    assert_eq!(body["messages"][1]["content"], "The app crashes on start.");
}

/// An answer type with its own reasoning field.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Explained {
    /// Why.
    reasoning: String,
    /// The team.
    team: Team,
}

#[tokio::test]
async fn native_thinking_fills_the_reasoning_field_from_the_block() {
    let s = setup().await;
    let mut t = ToollessThinker::<Ticket, Explained>::new(
        ThinkerDeclaration::new(Grade::Medium, OutputSize::Compact),
        SystemPrompt::new("Route the ticket and say why.").unwrap(),
    )
    .depth(Depth::Standard);
    t.pin_model("sim-medium-b".into());
    let answer = s.rt.run(t.ask(ticket())).await.unwrap();
    assert!(
        !answer.reasoning.is_empty(),
        "filled from the thinking block"
    );
    let body = s.sim.requests()[0].body.clone();
    let schema = &body["output_config"]["format"]["schema"];
    assert!(schema["properties"].get("reasoning").is_none(), "{schema}");
    assert!(schema["properties"].get("team").is_some(), "{schema}");
    assert!(body.get("thinking").is_some(), "{body}");

    // Without a guaranteed block the field is asked for, with the common description.
    let mut t = ToollessThinker::<Ticket, Explained>::new(
        decl(),
        SystemPrompt::new("Route the ticket and say why.").unwrap(),
    );
    t.pin_model("sim-small-a".into());
    s.rt.run(t.ask(ticket())).await.unwrap();
    let body = s.sim.requests()[1].body.clone();
    let reasoning = &body["response_format"]["json_schema"]["schema"]["properties"]["reasoning"];
    assert_eq!(
        reasoning["description"],
        "A justification a reader can check: your approach and its steps, citing the tool \
         results used.",
        "{body}"
    );
}
