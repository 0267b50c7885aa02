//! The reactive loop driven by scripted turns through a real dispatcher.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use serde_json::json;
use thinkers::ErrorKind;
use thinkers::conversation::{ContentBlock, Message, Role};
use thinkers::llm::ToolChoice;
use thinkers::model::{Depth, Grade, OutputSize};
use thinkers::thinker::Delivery;
use thinkers::thinker::{
    DEFAULT_TOOL_CALLS_PER_MESSAGE, ReactiveThinker, ScriptedTurns, ThinkerDeclaration,
};

use crate::support::{Collected, Lookup, Steered, dispatcher};

fn decl() -> ThinkerDeclaration {
    ThinkerDeclaration::new(Grade::Small, OutputSize::Compact)
}

fn user_texts(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.role == Role::User && !m.text().is_empty())
        .map(Message::text)
        .collect()
}

#[tokio::test]
async fn a_message_sent_while_the_model_works_is_read_at_the_next_step() {
    let (d, _) = dispatcher();
    let lookup = Lookup::default();
    let slot: Arc<OnceLock<Arc<ReactiveThinker>>> = Arc::default();
    let accepted: Arc<OnceLock<bool>> = Arc::default();
    let script = ScriptedTurns::new()
        .then_calls(&[("c1", "lookup", json!({"term": "seat"}))])
        .then_text("A seat is a reservation; a grade is a rung.");
    let (s, a) = (slot.clone(), accepted.clone());
    // During the first model turn, the person adds a second message.
    let steered = Steered::new(script.clone(), move |n| {
        if n == 1 {
            let ok = s.get().unwrap().add_message("And what is a grade?") == Delivery::Joined;
            a.set(ok).unwrap();
        }
    });
    let events = Collected::default();
    let thinker = Arc::new(
        ReactiveThinker::new(decl(), "Answer questions about the runtime.")
            .tool(lookup.clone())
            .turns(steered)
            .events(events.sink()),
    );
    slot.set(thinker.clone()).unwrap();
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("What is a seat?"), Delivery::Joined);
    let answer = d.run(turn).await.unwrap();
    assert_eq!(answer, "A seat is a reservation; a grade is a rung.");
    assert_eq!(
        accepted.get(),
        Some(&true),
        "the open turn took the message"
    );

    let seen = script.seen();
    assert_eq!(seen.len(), 2);
    // The first request had only the first message; the second, after the tool results, both.
    assert_eq!(
        user_texts(&seen[0].request.messages),
        vec!["What is a seat?"]
    );
    let second = &seen[1].request.messages;
    assert_eq!(
        second.last().unwrap(),
        &Message::user_text("And what is a grade?")
    );
    assert!(
        second[second.len() - 2]
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolResult { call_id, .. } if call_id == "c1")),
        "the late message follows the tool results: {second:?}"
    );
    assert_eq!(lookup.calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        events.names(),
        vec!["message", "tool_call", "tool_result", "message", "answer"]
    );
}

/// A turn source set with `turns` answers the turns whether `events` (which otherwise asks for
/// streamed model turns) came before or after it; the events still arrive.
#[tokio::test]
async fn a_turn_source_wins_over_streaming_whichever_is_set_first() {
    let (d, _) = dispatcher();
    for events_first in [true, false] {
        let script = ScriptedTurns::new().then_text("Hi.");
        let events = Collected::default();
        let thinker = ReactiveThinker::new(decl(), "Chat.");
        let thinker = if events_first {
            thinker.events(events.sink()).turns(script.clone())
        } else {
            thinker.turns(script.clone()).events(events.sink())
        };
        let turn = thinker.turn();
        assert_eq!(thinker.add_message("Hello"), Delivery::Joined);
        assert_eq!(
            d.run(turn).await.unwrap(),
            "Hi.",
            "events first: {events_first}"
        );
        assert_eq!(script.seen().len(), 1, "events first: {events_first}");
        assert_eq!(events.names(), vec!["message", "answer"]);
    }
}

#[tokio::test]
async fn a_message_arriving_while_the_answer_is_written_keeps_the_turn_open() {
    let (d, _) = dispatcher();
    let slot: Arc<OnceLock<Arc<ReactiveThinker>>> = Arc::default();
    let script = ScriptedTurns::new().then_text("Hello!").then_text("Paris.");
    let s = slot.clone();
    let steered = Steered::new(script.clone(), move |n| {
        if n == 1 {
            assert_eq!(
                s.get().unwrap().add_message("Capital of France?"),
                Delivery::Joined
            );
        }
    });
    let events = Collected::default();
    let thinker = Arc::new(
        ReactiveThinker::new(decl(), "Chat.")
            .turns(steered)
            .events(events.sink()),
    );
    slot.set(thinker.clone()).unwrap();
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("Hi"), Delivery::Joined);
    let answer = d.run(turn).await.unwrap();
    // One turn answered both messages: the first answer was given, then the second message read.
    assert_eq!(answer, "Paris.");
    assert_eq!(script.seen().len(), 2);
    let texts: Vec<String> = thinker
        .observer()
        .messages()
        .iter()
        .map(Message::text)
        .collect();
    assert_eq!(texts, vec!["Hi", "Hello!", "Capital of France?", "Paris."]);
    assert_eq!(
        events.names(),
        vec!["message", "answer", "message", "answer"]
    );
}

#[tokio::test]
async fn after_the_turn_closes_a_message_waits_for_the_next_turn_which_resumes_the_conversation() {
    let (d, _) = dispatcher();
    let script = ScriptedTurns::new()
        .then_text("First answer.")
        .then_text("Second answer.");
    let thinker = ReactiveThinker::new(decl(), "Chat.").turns(script.clone());
    assert_eq!(thinker.current_depth(), Depth::Standard);
    assert_eq!(thinker.tool_budget(), DEFAULT_TOOL_CALLS_PER_MESSAGE);
    assert_eq!(DEFAULT_TOOL_CALLS_PER_MESSAGE, 25);

    let first = thinker.turn();
    assert_eq!(thinker.add_message("one"), Delivery::Joined);
    assert_eq!(d.run(first).await.unwrap(), "First answer.");
    assert!(!thinker.is_turn_open());
    assert_eq!(
        thinker.add_message("two"),
        Delivery::Waiting,
        "after a closed turn a message waits for the next"
    );

    let second = thinker.turn();
    assert_eq!(d.run(second).await.unwrap(), "Second answer.");
    let seen = script.seen();
    let texts: Vec<String> = seen[1].request.messages.iter().map(Message::text).collect();
    assert_eq!(texts, vec!["one", "First answer.", "two"]);
    assert_eq!(seen[1].depth, Depth::Standard);
}

#[tokio::test]
async fn messages_added_before_their_turn_is_made_are_answered_by_it_in_order() {
    let (d, _) = dispatcher();
    let script = ScriptedTurns::new().then_text("Both answered.");
    let thinker = ReactiveThinker::new(decl(), "Chat.").turns(script.clone());
    assert!(!thinker.is_turn_open());
    assert_eq!(thinker.add_message("one"), Delivery::Waiting);
    assert_eq!(thinker.add_message("two"), Delivery::Waiting);
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("three"), Delivery::Joined);
    assert_eq!(d.run(turn).await.unwrap(), "Both answered.");
    let seen = script.seen();
    assert_eq!(seen.len(), 1, "one turn answers every waiting message");
    let texts: Vec<String> = seen[0].request.messages.iter().map(Message::text).collect();
    assert_eq!(texts.concat().matches("one").count(), 1, "{texts:?}");
    assert!(
        texts.concat().contains("two") && texts.concat().contains("three"),
        "{texts:?}"
    );
}

#[tokio::test]
async fn a_turn_job_runs_once() {
    let (d, _) = dispatcher();
    let thinker = ReactiveThinker::new(decl(), "Chat.").turns(ScriptedTurns::new().then_text("ok"));
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("hi"), Delivery::Joined);
    let again = thinker.turn(); // shares the open turn's inbox
    d.run(turn).await.unwrap();
    let err = d.run(again).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("turn"), "{err}");
}

#[tokio::test]
async fn its_own_depth_reaches_every_call() {
    let (d, _) = dispatcher();
    let script = ScriptedTurns::new().then_text("ok");
    let thinker = ReactiveThinker::new(
        ThinkerDeclaration::new(Grade::Ceiling, OutputSize::Compact),
        "Chat.",
    )
    .depth(Depth::Quick)
    .turns(script.clone());
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("hi"), Delivery::Joined);
    d.run(turn).await.unwrap();
    let seen = script.seen();
    assert_eq!(seen[0].depth, Depth::Quick);
    assert_eq!(seen[0].grade, Grade::Ceiling);
    // A chat answers in text: no answer schema on the request.
    assert!(seen[0].request.response.is_none());
}

#[tokio::test]
async fn a_spent_tool_budget_forces_one_answer_without_tools_that_says_what_is_unverified() {
    let (d, _) = dispatcher();
    let lookup = Lookup::default();
    let script = ScriptedTurns::new()
        .then_calls(&[("c1", "lookup", json!({"term": "a"}))])
        .then_calls(&[
            ("c2", "lookup", json!({"term": "b"})),
            ("c3", "lookup", json!({"term": "c"})),
        ])
        // The forced call: the model tries a tool anyway; it is not run.
        .then(thinkers::llm::ChatResponse {
            content: vec![
                ContentBlock::text("From a and b: X. Not verified: c."),
                ContentBlock::tool_call("c4", "lookup", json!({"term": "d"})),
            ],
            stop: thinkers::llm::StopReason::ToolUse,
            usage: thinkers::llm::Usage::default(),
            model: "scripted".into(),
            logprobs: None,
        });
    let events = Collected::default();
    let thinker = ReactiveThinker::new(decl(), "Research.")
        .tool(lookup.clone())
        .max_tool_calls_per_message(3)
        .turns(script.clone())
        .events(events.sink());
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("Find a, b, c."), Delivery::Joined);
    let answer = d.run(turn).await.unwrap();
    assert_eq!(answer, "From a and b: X. Not verified: c.");
    assert_eq!(lookup.calls.load(Ordering::SeqCst), 3, "c4 never ran");

    let seen = script.seen();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].request.tool_choice, ToolChoice::Auto);
    assert_eq!(seen[1].request.tool_choice, ToolChoice::Auto);
    let forced = &seen[2].request;
    assert_eq!(forced.tool_choice, ToolChoice::None);
    let note = forced.messages.last().unwrap().text();
    assert!(note.contains("budget"), "{note}");
    assert!(note.contains("unverified"), "{note}");
    // The answer kept in the conversation is text only: no call left unanswered.
    let last = thinker.observer().messages().last().unwrap().clone();
    assert_eq!(
        last,
        Message::assistant_text("From a and b: X. Not verified: c.")
    );
    assert_eq!(events.names().last(), Some(&"answer"));
}

#[tokio::test]
async fn a_forced_answer_with_no_text_still_answers_the_person() {
    let (d, _) = dispatcher();
    let script = ScriptedTurns::new()
        .then_calls(&[("c1", "lookup", json!({"term": "a"}))])
        .then_calls(&[("c2", "lookup", json!({"term": "b"}))]);
    let thinker = ReactiveThinker::new(decl(), "Research.")
        .tool(Lookup::default())
        .max_tool_calls_per_message(1)
        .turns(script.clone());
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("Find a."), Delivery::Joined);
    let answer = d.run(turn).await.unwrap();
    assert!(answer.contains("tool budget"), "{answer}");
    assert!(answer.contains("verified"), "{answer}");
    assert_eq!(script.seen()[1].request.tool_choice, ToolChoice::None);
}

#[tokio::test]
async fn a_failed_exchange_rolls_back_to_the_message_and_the_next_turn_reads_the_marker() {
    let (d, _) = dispatcher();
    // One tool round, then the script runs dry: the second model turn fails.
    let script = ScriptedTurns::new().then_calls(&[("c1", "lookup", json!({"term": "a"}))]);
    let events = Collected::default();
    let thinker = ReactiveThinker::new(decl(), "Chat.")
        .tool(Lookup::default())
        .turns(script.clone())
        .events(events.sink());
    let turn = thinker.turn();
    assert_eq!(thinker.add_message("What is a?"), Delivery::Joined);
    let err = d.run(turn).await.unwrap_err();
    assert!(err.to_string().contains("no turn left"), "{err}");
    assert!(!thinker.is_turn_open(), "a failed turn is closed");

    // Rolled back: the tool call and its results are gone; a marker says why.
    let messages = thinker.observer().messages();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[0], Message::user_text("What is a?"));
    assert_eq!(messages[1].role, Role::Assistant);
    let marker = messages[1].text();
    assert!(marker.starts_with("[no answer:"), "{marker}");
    assert!(marker.contains("no turn left"), "{marker}");
    assert_eq!(
        events.names(),
        vec!["message", "tool_call", "tool_result", "error"]
    );

    // The next turn's request says the turn failed, not why.
    let _ = script.clone().then_text("Sorry about that: a is a letter.");
    let next = thinker.turn();
    assert_eq!(thinker.add_message("Try again?"), Delivery::Joined);
    assert_eq!(
        d.run(next).await.unwrap(),
        "Sorry about that: a is a letter."
    );
    let seen = script.seen();
    let request = &seen.last().unwrap().request.messages;
    let texts: Vec<String> = request.iter().map(Message::text).collect();
    assert_eq!(texts[0], "What is a?");
    assert_eq!(texts[1], thinkers::conversation::FAILED_TURN_FOR_MODEL);
    assert_eq!(texts[2], "Try again?");
    assert_eq!(request.len(), 3);
}

#[tokio::test]
async fn a_turn_with_no_message_is_refused_and_closed() {
    let (d, _) = dispatcher();
    let script = ScriptedTurns::new().then_text("unused");
    let thinker = ReactiveThinker::new(decl(), "Chat.").turns(script.clone());
    let err = d.run(thinker.turn()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("message"), "{err}");
    assert!(script.seen().is_empty(), "no model call");
    assert_eq!(
        thinker.add_message("late"),
        Delivery::Waiting,
        "the empty turn closed: the message waits for the next"
    );
}
