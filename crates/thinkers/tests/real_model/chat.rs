//! A streamed chat turn: the server streams the answer, the chat reports the pieces as they
//! arrive, and its final answer is what was streamed.

use std::sync::{Arc, Mutex, PoisonError};

use thinkers::model::{Depth, Grade, ModelDependent, OutputSize};
use thinkers::thinker::Delivery;
use thinkers::thinker::{ChatEvent, ChatEvents, ChatThinker, ThinkerDeclaration};

use crate::support::{NATIVE, server};

#[tokio::test]
async fn a_chat_turn_streams_text_deltas_and_a_final_answer() {
    let Some(s) = server("streamed chat").await else {
        return;
    };
    let seen: Arc<Mutex<Vec<ChatEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    // No tools and a one-sentence answer: the turn is one streamed model call.
    let mut chat = ChatThinker::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
        "You are a helpful assistant. Answer in one short sentence.",
    )
    .depth(Depth::Quick)
    .events(ChatEvents::new(move |event| {
        sink.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event);
    }));
    chat.pin_model(NATIVE.to_owned());
    let turn = chat.turn();
    assert_eq!(
        chat.add_message("What colour is the sky on a clear day?"),
        Delivery::Joined
    );
    let answer = s.rt.run(turn).await.unwrap();

    let events = seen.lock().unwrap().clone();
    let names: Vec<&str> = events.iter().map(ChatEvent::name).collect();
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Token { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        deltas.len() >= 2,
        "the answer did not arrive in pieces: {names:?}"
    );
    assert_eq!(names.first(), Some(&"message"), "{names:?}");
    assert_eq!(names.last(), Some(&"answer"), "{names:?}");
    assert!(!names.contains(&"error"), "{events:?}");
    let Some(ChatEvent::Answer { text, .. }) = events.last() else {
        panic!("no final answer: {events:?}");
    };
    assert_eq!(text, &answer);
    assert!(!answer.trim().is_empty(), "an empty answer");
    assert_eq!(deltas.concat().trim(), answer.trim(), "{deltas:?}");
    s.assert_every_job_succeeded("chat.turn");
}
