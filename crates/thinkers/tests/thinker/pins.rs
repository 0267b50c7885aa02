//! What a thinker's pin does to a one-call tool that declares its own grade (issue 30, point 4):
//! the pin wins. A tool called by a pinned thinker runs on the thinker's entry whatever grade it
//! declares (its grade chooses a rung only when no pin is in force); a provider pinned to an
//! entry of its own keeps it under any caller. Turns are scripted; the tool's call goes over
//! HTTP to the sim.

use std::sync::Arc;

use serde_json::json;
use thinkers::model::{Grade, ModelDependent, OutputSize};
use thinkers::onecall::ModelToolProvider;
use thinkers::onecall::tools::Summarization;
use thinkers::thinker::{ScriptedTurns, Thinker, ThinkerDeclaration, ThinkerInput};

use crate::support::setup;

/// The thinker's pin: a Medium entry, which `summarization` (declaring Small) never gets from
/// the picker.
const PIN: &str = "sim-medium-a";

/// A thinker (declared Medium, pinned to [`PIN`] when `pinned`) that calls `summarization`
/// once through `provider` and answers.
fn thinker(provider: ModelToolProvider<Summarization>, pinned: bool) -> Thinker<String> {
    let turns = ScriptedTurns::new()
        .then_calls(&[(
            "c1",
            "summarization",
            json!({"text": "A seat reserves tokens at a model. Admission waits until the \
                            whole reservation fits.", "target_words": 12}),
        )])
        .then_answer(json!("done"));
    let mut t = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Medium, OutputSize::Compact),
        "Summarise what you are given.",
    )
    .provider(Arc::new(provider))
    .turns(turns);
    if pinned {
        t.pin_model(PIN.to_owned());
    }
    t
}

async fn tool_entries(provider: ModelToolProvider<Summarization>, pinned: bool) -> Vec<String> {
    let s = setup().await;
    let t = thinker(provider, pinned);
    s.rt.run(t.ask(ThinkerInput::query("Summarise.")))
        .await
        .unwrap();
    let entries: Vec<String> = s
        .rec
        .llm_runs()
        .into_iter()
        .filter(|r| r.class == "summarization")
        .map(|r| r.entry)
        .collect();
    assert!(!entries.is_empty(), "the tool called its model");
    entries
}

#[tokio::test]
async fn a_thinkers_pin_outranks_the_grade_a_one_call_tool_declares() {
    let pinned = tool_entries(ModelToolProvider::new(Summarization), true).await;
    assert!(
        pinned.iter().all(|e| e == PIN),
        "under a pinned thinker the Small tool runs on the thinker's entry: {pinned:?}"
    );
    let unpinned = tool_entries(ModelToolProvider::new(Summarization), false).await;
    assert!(
        unpinned.iter().all(|e| e.starts_with("sim-small-")),
        "unpinned, the tool's own grade picks the rung (not the Medium caller's): {unpinned:?}"
    );
}

#[tokio::test]
async fn a_providers_own_pin_outranks_the_thinkers() {
    let own = ModelToolProvider::new(Summarization).pinned("sim-small-b");
    let entries = tool_entries(own, true).await;
    assert!(
        entries.iter().all(|e| e == "sim-small-b"),
        "the provider's pin wins over the caller's: {entries:?}"
    );
}
