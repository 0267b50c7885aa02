//! A `ToollessThinker` whose typed answer decodes: the answer schema reaches the server as
//! constrained output, so even the tiny model's answer parses on the first call.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::model::{Grade, ModelDependent, OutputSize};
use thinkers::thinker::{SystemPrompt, ThinkerDeclaration, ToollessThinker};

use crate::support::{NATIVE, TEXT, server};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ticket {
    /// What the customer wrote.
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Urgency {
    Low,
    Normal,
    High,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Triage {
    /// How urgent the ticket is.
    pub urgency: Urgency,
    /// Whether the customer is blocked from working.
    pub blocked: bool,
}

#[tokio::test]
async fn a_typed_answer_decodes_from_schema_constrained_output() {
    let Some(s) = server("toolless").await else {
        return;
    };
    for entry in [NATIVE, TEXT] {
        let mut triage = ToollessThinker::<Ticket, Triage>::new(
            ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
            SystemPrompt::new(
                "Classify the support ticket: how urgent, and is the customer blocked.",
            )
            .unwrap(),
        )
        .class("real_triage");
        triage.pin_model(entry.to_owned());
        let before = s.rec.llm_runs().len();
        let answer =
            s.rt.run(triage.ask(Ticket {
                text: "Since this morning every invoice export fails with a timeout.".into(),
            }))
            .await
            .unwrap_or_else(|e| panic!("{entry}: {e}"));
        eprintln!("toolless over {entry}: {answer:?}");
        // Constrained decoding: the first answer already fits the schema, no correction.
        let calls = s.rec.llm_runs().len() - before;
        assert_eq!(calls, 1, "{entry}: {calls} calls for one typed answer");
    }
    s.assert_every_job_succeeded("real_triage");
}
