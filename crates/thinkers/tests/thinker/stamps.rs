//! The conversation's stamps are what calls read (issue 30, point 6): grade and output size are
//! stamped when a conversation is obtained and keep serving it, unless the thinker is given new
//! ones after construction (`set_grade`, `set_output`: the last declaration wins), which the
//! next run stamps over them; a run's depth is stamped over the old one; the compaction fit
//! check measures against the entry the stamped grade resolves to.

use std::sync::Arc;

use serde_json::json;
use thinkers::Runtime;
use thinkers::conversation::{
    ConversationService, MemoryConversationStore, Message, Objective, SUMMARY_HEADER, Stamps,
    summarizer_fn,
};
use thinkers::model::{Catalog, Depth, Grade, ModelDependent, OutputSize};
use thinkers::thinker::Delivery;
use thinkers::thinker::{
    ReactiveThinker, ScriptedTurns, Thinker, ThinkerDeclaration, ThinkerInput,
};

use crate::support::dispatcher;

fn seat(turn: &thinkers::thinker::TurnRequest) -> (Grade, OutputSize, Depth) {
    (turn.grade, turn.output, turn.depth)
}

#[tokio::test]
async fn a_held_conversation_is_stamped_with_a_grade_and_output_set_after_its_first_run() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_answer(json!("first"))
        .then_answer(json!("second"));
    let mut t = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Medium, OutputSize::Compact),
        "Answer.",
    )
    .turns(turns.clone());
    let first = ThinkerInput::query("one").with_depth(Depth::Thorough);
    assert_eq!(d.run(t.ask(first)).await.unwrap(), "first");
    // The declaration changes after the conversation was obtained: the last declaration wins,
    // so the next run stamps the new grade and output size over the conversation's, with its
    // depth.
    t.set_grade(Grade::Large);
    t.set_output(OutputSize::Extended);
    let second = ThinkerInput::query("two").with_depth(Depth::Quick);
    assert_eq!(d.run(t.follow_up(second)).await.unwrap(), "second");

    let seen = turns.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seat(&seen[0]),
        (Grade::Medium, OutputSize::Compact, Depth::Thorough)
    );
    let texts: Vec<String> = seen[1].request.messages.iter().map(Message::text).collect();
    assert_eq!(texts.first().map(String::as_str), Some("one"), "{texts:?}");
    assert_eq!(
        seat(&seen[1]),
        (Grade::Large, OutputSize::Extended, Depth::Quick),
        "the held conversation is served by the last declaration"
    );
    let stamps = *t.observer().conversation().unwrap().stamps();
    assert_eq!(
        (stamps.grade, stamps.output, stamps.depth),
        (Grade::Large, OutputSize::Extended, Depth::Quick)
    );
}

#[tokio::test]
async fn a_resumed_conversation_takes_a_grade_set_on_the_resuming_thinker_and_saves_it() {
    let (d, _) = dispatcher();
    let service = ConversationService::new(Arc::new(MemoryConversationStore::new()));
    let mut conv = service.obtain_new(
        Stamps::new(Grade::Small, Depth::Standard, OutputSize::Compact),
        true,
    );
    conv.objective_mut()
        .put(Objective::TASK, "Answer from the glossary.".to_owned());
    conv.push(Message::user_text("What is a seat?"));
    conv.push(Message::assistant_text("A reservation at a model."));
    service.save(&mut conv).await.unwrap();

    let turns = ScriptedTurns::new().then_answer(json!("resumed"));
    let mut t = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Answer.",
    )
    .conversations(service.clone())
    .turns(turns.clone());
    t.set_grade(Grade::Xl);
    let input = ThinkerInput::query("And a grade?");
    d.run(t.resume(conv.id().clone(), input)).await.unwrap();
    assert_eq!(turns.seen()[0].grade, Grade::Xl);
    // Saved with the conversation: a later resumption reads the new grade.
    let saved = service.resume(conv.id()).await.unwrap();
    assert_eq!(saved.stamps().grade, Grade::Xl);
    assert_eq!(saved.stamps().output, OutputSize::Compact);
}

#[tokio::test]
async fn a_resumed_conversation_is_served_by_the_stamps_it_was_obtained_with() {
    let (d, _) = dispatcher();
    let service = ConversationService::new(Arc::new(MemoryConversationStore::new()));
    let mut conv = service.obtain_new(
        Stamps::new(Grade::Large, Depth::Thorough, OutputSize::Extended),
        true,
    );
    conv.objective_mut()
        .put(Objective::TASK, "Answer from the glossary.".to_owned());
    conv.push(Message::user_text("What is a seat?"));
    conv.push(Message::assistant_text("A reservation at a model."));
    service.save(&mut conv).await.unwrap();

    let turns = ScriptedTurns::new().then_answer(json!("resumed"));
    let t = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
        "Another objective.",
    )
    .conversations(service)
    .turns(turns.clone());
    let input = ThinkerInput::query("And a grade?").with_depth(Depth::Thorough);
    assert_eq!(
        d.run(t.resume(conv.id().clone(), input)).await.unwrap(),
        "resumed"
    );
    let seen = turns.seen();
    assert_eq!(
        seat(&seen[0]),
        (Grade::Large, OutputSize::Extended, Depth::Thorough),
        "the first call reads the conversation's stamps, not the resuming thinker's declaration"
    );
}

#[tokio::test]
async fn a_chat_takes_a_grade_raised_between_turns_and_a_new_depth() {
    let (d, _) = dispatcher();
    let turns = ScriptedTurns::new()
        .then_text("First answer.")
        .then_text("Second answer.");
    let mut chat = ReactiveThinker::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Chat.",
    )
    .turns(turns.clone());
    let turn = chat.turn();
    assert_eq!(chat.add_message("one"), Delivery::Joined);
    d.run(turn).await.unwrap();
    chat.set_grade(Grade::Xl);
    chat.set_depth(Depth::Thorough);
    let turn = chat.turn();
    assert_eq!(chat.add_message("two"), Delivery::Joined);
    d.run(turn).await.unwrap();
    let seen = turns.seen();
    assert_eq!(
        seat(&seen[0]),
        (Grade::Small, OutputSize::Compact, Depth::Standard)
    );
    assert_eq!(
        seat(&seen[1]),
        (Grade::Xl, OutputSize::Compact, Depth::Thorough),
        "a grade raised between turns serves the next one; its depth is the turn's"
    );
    let stamps = *chat.observer().conversation().unwrap().stamps();
    assert_eq!(stamps.grade, Grade::Xl);
}

/// Two entries whose context windows differ by far: the compaction threshold depends on which
/// one the fit check measures against. Nothing is sent (the turns are scripted).
const WINDOWS_TOML: &str = r#"
[providers.p]
dialect = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "THINKERS_SIM_KEY"

[[entries]]
id = "tiny"
provider = "p"
model = "tiny"
grade = "small"
context_window = 4000
output_ceiling = 1024
price_in = 1.0
price_out = 1.0
currency = "USD"
native_tools = true

[[entries]]
id = "roomy"
provider = "p"
model = "roomy"
grade = "large"
context_window = 1000000
output_ceiling = 32768
price_in = 1.0
price_out = 1.0
currency = "USD"
native_tools = true
"#;

#[tokio::test]
async fn the_compaction_fit_check_measures_against_the_stamped_grade() {
    let catalog = Catalog::from_toml_str(WINDOWS_TOML, "windows.toml").unwrap();
    let rt = Runtime::builder(catalog).build().await.unwrap();
    let service = ConversationService::new(Arc::new(MemoryConversationStore::new()))
        .with_summarizer(Arc::new(summarizer_fn(|_: String, _| async {
            Ok("Earlier turns discussed the glossary.".to_owned())
        })));
    // About 6,000 tokens: over the tiny entry's threshold (0.92 × 4,000), far under the roomy
    // one's (0.92 × the 128K comfort window).
    let mut conv = service.obtain_new(
        Stamps::new(Grade::Small, Depth::Standard, OutputSize::Compact),
        true,
    );
    conv.objective_mut()
        .put(Objective::TASK, "Answer from the glossary.".to_owned());
    for i in 0..30 {
        let words =
            format!("entry {i} of the glossary, with its definition and notes; ").repeat(20);
        conv.push(Message::user_text(format!("Question {i}: {words}")));
        conv.push(Message::assistant_text(format!("Answer {i}: {words}")));
    }
    service.save(&mut conv).await.unwrap();

    let turns = ScriptedTurns::new().then_answer(json!("compacted"));
    let t = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Large, OutputSize::Compact),
        "Answer.",
    )
    .conversations(service)
    .turns(turns.clone());
    let input = ThinkerInput::query("One more?");
    assert_eq!(
        rt.run(t.resume(conv.id().clone(), input)).await.unwrap(),
        "compacted"
    );
    let seen = turns.seen();
    let first = seen[0].request.messages[0].text();
    assert!(
        first.starts_with(SUMMARY_HEADER),
        "the fit check measured against the stamped grade's entry and compacted: {first:.80}"
    );
    assert!(seen[0].request.messages.len() < 61);
    assert_eq!(seen[0].grade, Grade::Small);
}
