//! A `SingleObjectiveThinker` with one tool, over native tool calls (`smol`) and over text tools
//! (`smol-text`): every turn is answered by the server, every call parsed and answered by its
//! id, and the run ends by a typed answer or by its iteration limit with an error that says so.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::error::ErrorKind;
use thinkers::model::{Depth, Grade, ModelDependent, OutputSize};
use thinkers::thinker::{
    LoopThinkerBuilder, SingleObjectiveThinker, ThinkerBuilder, ThinkerDeclaration, ThinkerInput,
    ThinkerLimits,
};

use crate::support::{Lookup, NATIVE, TEXT, assert_calls_paired_with_results, server};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Explanation {
    /// The explanation in a sentence.
    pub summary: String,
}

/// Four turns at most. The answer-correction bound is as high, so a run that finds no answer
/// ends at the iteration limit, whatever the model sends.
const TURNS: u32 = 4;

async fn runs_turns_with_one_tool(entry: &str) {
    let test = format!("thinker over {entry}");
    let Some(s) = server(&test).await else {
        return;
    };
    let mut thinker = SingleObjectiveThinker::<Explanation>::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "Explain a term of an agent runtime. Look the term up with glossary_lookup first, then \
         answer.",
    )
    .tool(Lookup)
    .limits(ThinkerLimits {
        max_iterations: TURNS,
        max_answer_corrections: TURNS,
        ..ThinkerLimits::default()
    })
    .class("real_thinker");
    thinker.pin_model(entry.to_owned());
    let observer = thinker.observer();
    // Quick: below the delegation threshold, so the palette is the one tool.
    let outcome =
        s.rt.run(thinker.ask(ThinkerInput::query("What is a seat?").with_depth(Depth::Quick)))
            .await;
    let transcript = observer.transcript();
    match &outcome {
        Ok(answer) => eprintln!("{test}: answered {answer:?}"),
        Err(e) if e.kind() == ErrorKind::AttemptsExhausted => {
            let message = e.to_string();
            assert!(
                message.contains(&format!("iteration limit of {TURNS} turns")),
                "{test}: {message}"
            );
            eprintln!("{test}: reached the iteration limit");
        }
        Err(e) => panic!("{test}: neither an answer nor the iteration limit: {e}\n{transcript}"),
    }
    let turns = s.assert_every_job_succeeded("real_thinker.turn");
    assert!(turns as u32 <= TURNS, "{test}: {turns} turns");
    let calls = assert_calls_paired_with_results(&observer.messages());
    eprintln!("{test}: {turns} turns, {calls} tool calls paired with their results");
    for run in s.rec.llm_runs() {
        assert_eq!(run.entry, entry, "{test}: the pin decides");
        assert!(run.output_tokens > 0, "{test}: an empty answer: {run:?}");
    }
}

#[tokio::test]
async fn native_tool_calls_are_parsed_and_answered_by_id() {
    runs_turns_with_one_tool(NATIVE).await;
}

#[tokio::test]
async fn text_tool_calls_are_parsed_and_answered_by_id() {
    runs_turns_with_one_tool(TEXT).await;
}
