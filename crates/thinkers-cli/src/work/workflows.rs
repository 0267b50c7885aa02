//! The workflows `thinkers worker` runs and `thinkers submit` accepts, by name.
//!
//! * `chain` — a doer: `steps` model calls one after the other, each given the previous answer
//!   (input `{"topic": "…", "steps": 3, "entry": "sim-small-a", "pause_ms": 0}`; `entry`
//!   optional, pins the calls to one catalog entry; `pause_ms` optional, a wait between calls
//!   standing in for other work).
//! * `fanout` — a doer: `calls` model calls at once in one step (input `{"topic": "…",
//!   "calls": 4, "entries": ["sim-small-a", "sim-small-b"]}`; `entries` optional, pins call
//!   `i` to `entries[i % len]`); the first that fails fails the workflow, and the calls still
//!   running are cancelled.
//! * `errands` — a thinker with a side-effecting tool that may need a person's approval (see
//!   `errands.rs`).
//! * `explain` — a thinker: the demo's explainer looks terms up in the glossary tool and answers
//!   (input `{"question": "What is a seat?", "entry": "sim-small-a"}`; `entry` optional).
//!
//! Without `entry` the picker chooses among the grade's entries by live headroom, so a replay on
//! another worker may choose another entry and miss the response cache; pinned calls replay
//! byte for byte.

use serde::{Deserialize, Serialize};
use thinkers::Error;
use thinkers::conversation::Message;
use thinkers::job::doer;
use thinkers::llm::{ChatRequest, LlmCall};
use thinkers::model::{Grade, ModelDependent as _, OutputSize};
use thinkers::thinker::ThinkerInput;
use thinkers_workflows::WorkflowRegistry;

use crate::demo::explainer;

/// The most steps a `chain` may take.
const MAX_STEPS: u32 = 50;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChainInput {
    /// What the calls are about.
    topic: String,
    /// How many calls, one after the other.
    steps: u32,
    /// Pin every call to this catalog entry.
    #[serde(default)]
    entry: Option<String>,
    /// Milliseconds of other work between two calls (a stand-in for tools).
    #[serde(default)]
    pause_ms: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FanoutInput {
    /// What the calls are about.
    topic: String,
    /// How many calls, all at once.
    calls: u32,
    /// Pin call `i` to `entries[i % len]`.
    #[serde(default)]
    entries: Vec<String>,
}

#[derive(Debug, Serialize)]
struct ChainOutput {
    answers: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExplainInput {
    /// The question for the explainer.
    question: String,
    /// Pin the thinker's calls to this catalog entry.
    #[serde(default)]
    entry: Option<String>,
}

/// Every workflow the CLI knows.
pub(crate) fn registry() -> WorkflowRegistry {
    let mut r = WorkflowRegistry::new();
    r.register("chain", |input: ChainInput| {
        if input.steps == 0 || input.steps > MAX_STEPS {
            return Err(Error::invalid_input(
                "input.steps",
                Some(input.steps.to_string()),
                format!("workflow `chain`: steps must be 1 to {MAX_STEPS}"),
            ));
        }
        Ok(doer("chain", move |cx| {
            let (topic, steps, entry, pause_ms) = (
                input.topic.clone(),
                input.steps,
                input.entry.clone(),
                input.pause_ms,
            );
            async move {
                let mut answers: Vec<String> = Vec::new();
                for step in 1..=steps {
                    if step > 1 && pause_ms > 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(pause_ms)).await;
                    }
                    let previous = answers.last().map_or("none yet", String::as_str);
                    let request = ChatRequest::new(
                        "You continue a chain of short notes. Answer in one or two sentences.",
                        vec![Message::user_text(format!(
                            "Topic: {topic}. Note {step} of {steps}. The previous note: {previous}"
                        ))],
                    );
                    let mut call = LlmCall::new(Grade::Small, OutputSize::Verdict, request)
                        .class("chain_step");
                    if let Some(e) = &entry {
                        call = call.pinned(e.clone());
                    }
                    let outcome = cx.submit(call).await?;
                    answers.push(outcome.response.text());
                }
                Ok(ChainOutput { answers })
            }
        }))
    });
    r.register("fanout", |input: FanoutInput| {
        if input.calls == 0 || input.calls > MAX_STEPS {
            return Err(Error::invalid_input(
                "input.calls",
                Some(input.calls.to_string()),
                format!("workflow `fanout`: calls must be 1 to {MAX_STEPS}"),
            ));
        }
        Ok(doer("fanout", move |cx| {
            let (topic, calls, entries) = (input.topic.clone(), input.calls, input.entries.clone());
            async move {
                let step = cx.fan_out();
                let handles: Vec<_> = (1..=calls)
                    .map(|n| {
                        let request = ChatRequest::new(
                            "You write one short note. Answer in one sentence.",
                            vec![Message::user_text(format!(
                                "Topic: {topic}. Note {n} of {calls}."
                            ))],
                        );
                        let mut call = LlmCall::new(Grade::Small, OutputSize::Verdict, request)
                            .class("fanout_call");
                        if !entries.is_empty() {
                            let e = &entries[(n as usize - 1) % entries.len()];
                            call = call.pinned(e.clone());
                        }
                        step.submit(call)
                    })
                    .collect();
                let outcomes = futures::future::try_join_all(handles).await?;
                Ok(ChainOutput {
                    answers: outcomes.iter().map(|o| o.response.text()).collect(),
                })
            }
        }))
    });
    r.register("errands", super::errands::errands);
    r.register("explain", |input: ExplainInput| {
        let mut job = explainer().ask(ThinkerInput::query(input.question));
        if let Some(entry) = input.entry {
            job.pin_model(entry);
        }
        Ok(job)
    });
    r
}
