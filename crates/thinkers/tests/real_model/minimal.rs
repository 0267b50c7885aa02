//! Issue 48, item 6: the server works from a minimal catalog, one that names only the provider
//! (dialect and base URL) and the model, leaving `structured_output` and `stream_tools` unset.
//! llama-cpp-python's server refuses `json_schema` (HTTP 500, a validation error naming
//! `response_format`): the runtime finds the form it accepts on the first refusal, and later
//! calls go straight to it.

use thinkers::model::{Grade, ModelDependent, OutputSize};
use thinkers::record::{JobStatus, MemoryRecorder};
use thinkers::thinker::{SystemPrompt, ThinkerDeclaration, ToollessThinker};

use crate::support::{NATIVE, server_over};
use crate::toolless::{Ticket, Triage};

/// The provider and the model, and nothing the server needs said about itself. The output
/// ceiling keeps each call to seconds (the tiny model rambles); `native_tools` is the default.
fn minimal_catalog(base_url: &str) -> String {
    format!(
        "[providers.llama]\ndialect = \"openai-compatible\"\nbase_url = \"{base_url}\"\n\n\
         [[entries]]\nid = \"{NATIVE}\"\nprovider = \"llama\"\nmodel = \"smollm2\"\n\
         grade = \"small\"\ncontext_window = 4096\noutput_ceiling = 256\n"
    )
}

/// The attempts of the model-call jobs of `class` (the prefix of their class), in order; each
/// succeeded.
fn attempts(rec: &MemoryRecorder, class: &str) -> Vec<u32> {
    let mut jobs: Vec<_> = rec
        .jobs()
        .into_iter()
        .filter(|j| j.start.class.starts_with(class))
        .collect();
    jobs.sort_by_key(|j| j.start.started_at_ms);
    jobs.iter()
        .map(|j| {
            let end = j.end.as_ref().expect("the job ended");
            assert_eq!(
                j.status(),
                JobStatus::Succeeded,
                "{}: {:?}",
                j.start.class,
                end.error
            );
            end.attempts
        })
        .collect()
}

#[tokio::test]
async fn a_typed_stage_answers_from_a_minimal_catalog() {
    let Some(s) = server_over("minimal catalog, typed", minimal_catalog).await else {
        return;
    };
    for _ in 0..2 {
        let mut triage = ToollessThinker::<Ticket, Triage>::new(
            ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
            SystemPrompt::new(
                "Classify the support ticket: how urgent, and is the customer blocked.",
            )
            .unwrap(),
        )
        .class("minimal_triage");
        triage.pin_model(NATIVE.to_owned());
        let answer =
            s.rt.run(triage.ask(Ticket {
                text: "Since this morning every invoice export fails with a timeout.".into(),
            }))
            .await
            .unwrap_or_else(|e| panic!("a typed answer from a minimal catalog: {e}"));
        eprintln!("minimal catalog, typed: {answer:?}");
    }
    // The first call was refused once (`json_schema`) and answered in `json_object`; the
    // second went straight to `json_object`. Only the answered calls have rows.
    assert_eq!(attempts(&s.rec, "minimal_triage."), [2, 1]);
    assert_eq!(s.rec.llm_runs().len(), 2, "{:?}", s.rec.llm_runs());
}
