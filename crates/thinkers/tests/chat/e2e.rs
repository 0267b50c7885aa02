//! `ChatThinker` over real HTTP against thinkers-sim: answers streamed token by token in the
//! OpenAI and Anthropic dialects, published as content stream events, the conversation durable
//! and resumable by id from a new thinker, and a provider failure rolled back with a marker.

use thinkers::conversation::FAILED_TURN_FOR_MODEL;
use thinkers::conversation::{Message, Role};
use thinkers::model::{Depth, Grade, ModelDependent, OutputSize};
use thinkers::thinker::Delivery;
use thinkers::thinker::{ChatEvent, ChatThinker, ContentStream, ThinkerDeclaration};
use thinkers_sim::{FaultKind, FaultRule};

use crate::support::{Collected, Lookup, setup_with};

/// A chat at quick depth: below the delegation threshold, so the sim's model picks among the
/// test's own tools only (no `sub_thinker`).
fn chat(pin: &str) -> ChatThinker {
    let mut chat = ChatThinker::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You are a helpful assistant.",
    )
    .depth(Depth::Quick);
    chat.pin_model(pin.to_owned());
    chat
}

async fn streams_tokens_and_keeps_the_conversation(pin: &str) {
    let s = setup_with(|c| c).await;
    let events = Collected::default();
    let content = ContentStream::new(8);
    let mut published = content.subscribe();
    let thinker = chat(pin)
        .tool(Lookup::default())
        .content_stream(content)
        .events(events.sink());
    let turn = thinker.turn();
    assert_eq!(
        thinker.add_message("What does seat mean?"),
        Delivery::Joined
    );
    let answer = s.rt.run(turn).await.unwrap();

    let all = events.all();
    let names = events.names();
    // The sim's profile for the entry decides how many calls one round makes: all calls first,
    // then one result per call, then the streamed answer.
    let calls = names.iter().filter(|n| **n == "tool_call").count();
    assert!(calls >= 1, "{names:?}");
    let mut expected = vec!["message"];
    expected.extend(std::iter::repeat_n("tool_call", calls));
    expected.extend(std::iter::repeat_n("tool_result", calls));
    assert_eq!(&names[..expected.len()], &expected[..], "{names:?}");
    assert!(
        names[expected.len()..names.len() - 1]
            .iter()
            .all(|n| *n == "token"),
        "{names:?}"
    );
    assert_eq!(names.last(), Some(&"answer"));
    let tokens: Vec<String> = all
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Token { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert!(tokens.len() > 1, "{pin}: streamed in pieces: {names:?}");
    assert_eq!(tokens.concat(), answer, "{pin}");
    let ChatEvent::Answer { text, artifacts } = all.last().unwrap() else {
        panic!("not an answer");
    };
    assert_eq!(text, &answer);
    assert_eq!(artifacts.len(), calls);
    assert!(artifacts.iter().all(|a| a.tool == "lookup"));
    assert_eq!(artifacts[0].reference, "@a1");
    // The model calls are recorded under the chat's class.
    let runs = s.rec.llm_runs();
    assert_eq!(runs.len(), 2, "a tool round and the answer");
    assert!(runs.iter().all(|r| r.class == "chat.turn"), "{runs:?}");
    assert_eq!(published.recv().await.unwrap().content, answer);
    // The wire saw streamed requests.
    let sent = s.sim.requests();
    assert!(sent.iter().all(|r| r.body["stream"] == true), "{pin}");

    // Durable: a new thinker resumes the conversation by id from the store.
    let id = thinker.conversation_id().unwrap();
    let saved = s.rt.conversations().resume(&id).await.unwrap();
    assert_eq!(
        saved.messages().len(),
        4,
        "the message, the calls, the results, the answer"
    );
    let again = chat(pin).resume(id);
    let turn = again.turn();
    assert_eq!(again.add_message("Thanks. And grade?"), Delivery::Joined);
    s.rt.run(turn).await.unwrap();
    let messages = again.observer().messages();
    assert_eq!(messages[0], Message::user_text("What does seat mean?"));
    assert!(messages.len() >= 6, "{messages:?}");
}

#[tokio::test]
async fn openai_answers_stream_token_by_token_and_the_chat_is_durable() {
    streams_tokens_and_keeps_the_conversation("sim-small-a").await;
}

#[tokio::test]
async fn anthropic_answers_stream_token_by_token_and_the_chat_is_durable() {
    streams_tokens_and_keeps_the_conversation("sim-small-b").await;
}

/// The final answer published on the content stream carries the conversation's artifacts, the
/// same ones the chat's own answer event carries.
#[tokio::test]
async fn the_content_stream_answer_carries_the_artifacts() {
    for pin in ["sim-small-a", "sim-small-b"] {
        let s = setup_with(|c| c).await;
        let events = Collected::default();
        let content = ContentStream::new(8);
        let mut published = content.subscribe();
        let thinker = chat(pin)
            .tool(Lookup::default())
            .content_stream(content)
            .events(events.sink());
        let turn = thinker.turn();
        assert_eq!(
            thinker.add_message("What does seat mean?"),
            Delivery::Joined
        );
        let answer = s.rt.run(turn).await.unwrap();
        let all = events.all();
        let Some(ChatEvent::Answer { artifacts, .. }) = all.last() else {
            panic!("{pin}: no answer event");
        };
        assert!(!artifacts.is_empty(), "{pin}: the lookup made an artifact");
        let event = published.recv().await.unwrap();
        assert_eq!(event.content, answer, "{pin}");
        assert_eq!(&event.artifacts, artifacts, "{pin}");
        assert_eq!(event.artifacts[0].reference, "@a1", "{pin}");
        assert_eq!(event.artifacts[0].tool, "lookup", "{pin}");
    }
}

#[tokio::test]
async fn a_provider_failure_fails_the_turn_and_the_next_request_says_only_that_it_failed() {
    let s = setup_with(|c| c).await;
    let events = Collected::default();
    let thinker = chat("sim-small-a").events(events.sink());
    s.sim.inject(FaultRule::new(FaultKind::Http500).times(20));
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("Hello?"), Delivery::Joined);
    let err = s.rt.run(turn).await.unwrap_err();
    assert_eq!(events.names(), vec!["message", "error"]);
    let messages = thinker.observer().messages();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].role, Role::Assistant);
    assert!(messages[1].text().starts_with("[no answer:"), "{err}");
    // Saved: the store holds the rollback too.
    let id = thinker.conversation_id().unwrap();
    let saved = s.rt.conversations().resume(&id).await.unwrap();
    assert_eq!(saved.messages(), &messages[..]);

    s.sim.reset();
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("Are you there now?"), Delivery::Joined);
    s.rt.run(turn).await.unwrap();
    let body = s.sim.requests().last().unwrap().body.to_string();
    assert!(!body.contains("[no answer:"), "{body}");
    assert!(body.contains(FAILED_TURN_FOR_MODEL), "{body}");
    assert!(body.contains("Are you there now?"), "{body}");
}

#[tokio::test]
async fn a_chat_declaring_ceiling_is_served_by_the_strongest_entry() {
    let s = setup_with(|c| c).await;
    let thinker = ChatThinker::new(
        ThinkerDeclaration::new(Grade::Ceiling, OutputSize::Compact),
        "You are a helpful assistant.",
    )
    .depth(Depth::Quick);
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("Hello"), Delivery::Joined);
    s.rt.run(turn).await.unwrap();
    let runs = s.rec.llm_runs();
    assert_eq!(runs.len(), 1);
    assert!(runs[0].entry.starts_with("sim-mega"), "{}", runs[0].entry);
}

async fn budget_forces_an_answer_over_the_wire(pin: &str) {
    // A budget of one call is spent by the first round: the next request must forbid tools.
    let s = setup_with(|c| c).await;
    let lookup = Lookup::default();
    let events = Collected::default();
    let thinker = chat(pin)
        .tool(lookup.clone())
        .max_tool_calls_per_message(1)
        .events(events.sink());
    let turn = thinker.turn();
    assert_eq!(
        thinker.add_message("What does seat mean?"),
        Delivery::Joined
    );
    let answer = s.rt.run(turn).await.unwrap();
    assert!(!answer.is_empty());
    let sent = s.sim.requests();
    assert_eq!(
        sent.len(),
        2,
        "{pin}: one tool round, then the forced answer"
    );
    let forced = &sent[1].body;
    let choice = &forced["tool_choice"];
    assert!(
        choice == "none" || choice["type"] == "none",
        "{pin}: tool_choice {choice}"
    );
    assert!(
        forced.to_string().contains("remain unverified"),
        "{pin}: the answer-now note reached the model"
    );
    assert_eq!(events.names().last(), Some(&"answer"));
}

#[tokio::test]
async fn a_spent_budget_sends_tool_choice_none_in_both_dialects() {
    budget_forces_an_answer_over_the_wire("sim-small-a").await;
    budget_forces_an_answer_over_the_wire("sim-small-b").await;
}

#[tokio::test]
async fn a_sub_thinker_under_a_chat_answers_the_chat_not_the_person() {
    use serde_json::json;
    use std::sync::Arc;
    use thinkers::hub::ToolHub;
    use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall};

    let call = |name: &str, arguments: serde_json::Value| {
        ScriptAnswer::ToolCalls(vec![ScriptToolCall {
            name: name.to_owned(),
            arguments,
        }])
    };
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "DELEGATE-ME",
            call(
                "sub_thinker",
                json!({"objective": "DELEGATED: look up the term seat", "artifact_refs": []}),
            ),
        )
        .times(1),
        ScriptRule::when_contains("DELEGATED", call("lookup", json!({"term": "seat"}))).times(1),
        ScriptRule::when_contains(
            "the meaning of seat",
            ScriptAnswer::Json(json!({
                "reasoning": "looked it up",
                "answer": {
                    "summary": "SUB-SUMMARY: seat is defined",
                    "reasoning": {"approach": "looked it up", "steps": ["@a1 defines it"]},
                    "artifacts": ["@a1"]
                }
            })),
        )
        .times(1),
        ScriptRule::when_contains(
            "SUB-SUMMARY",
            ScriptAnswer::Text("CHAT: the delegate found it.".into()),
        ),
    ]);
    let s = setup_with(|c| thinkers_sim::SimConfig {
        script: Some(script),
        ..c
    })
    .await;
    let hub = ToolHub::new();
    hub.register_tool(Lookup::default()).unwrap();
    let events = Collected::default();
    let thinker = chat("sim-small-a")
        .depth(Depth::Standard)
        .tool(Lookup::default())
        .hub(Arc::new(hub))
        .delegating()
        .events(events.sink());
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("DELEGATE-ME please"), Delivery::Joined);
    let answer = s.rt.run(turn).await.unwrap();
    assert_eq!(answer, "CHAT: the delegate found it.");

    let all = events.all();
    let names = events.names();
    assert_eq!(
        &names[..3],
        &["message", "tool_call", "tool_result"],
        "{names:?}"
    );
    assert!(
        matches!(&all[1], ChatEvent::ToolCall { name, .. } if name == "sub_thinker"),
        "{all:?}"
    );
    // Only the chat's own answer streamed: nothing of the delegate's JSON.
    let streamed: String = all
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Token { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, answer, "{names:?}");
}
