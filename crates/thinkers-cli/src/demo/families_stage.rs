//! The one-call stage of the demo: a toolless classification (a typed answer from one call,
//! checked by a guardrail) and a decision among options (with a confidence per option where the
//! provider returns log-probabilities).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::Runtime;
use thinkers::model::{Grade, ModelDependent, OutputSize};
use thinkers::thinker::{
    Choice, Confidence, DecisionOption, DecisionThinker, SystemPrompt, ThinkerDeclaration,
    ThinkerInput, ToollessThinker, Verdict,
};

use super::Progress;

/// A support ticket.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Ticket {
    /// What the customer wrote.
    text: String,
}

/// How urgent a ticket is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Urgency {
    Low,
    Normal,
    High,
}

/// A classification of a ticket.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Triage {
    /// How urgent the ticket is.
    urgency: Urgency,
    /// The product area, in one or two words.
    area: String,
}

const TICKET: &str = "Since this morning every invoice export fails with a timeout.";

/// What the stage prints.
pub(crate) struct Outcome {
    triage: Triage,
    choice: Choice,
}

impl Outcome {
    pub(crate) fn print(&self) {
        println!("One-call thinkers");
        println!("  ticket: {TICKET:?}");
        println!(
            "  toolless classification: urgency {:?}, area {:?}",
            self.triage.urgency, self.triage.area
        );
        println!("  decision: route to `{}`", self.choice.chosen.option.id);
        // Every option, in the order given, with how sure the model was of it.
        for scored in &self.choice.options {
            let confidence = match &scored.confidence {
                Confidence::Measured { probability } => format!("{:.0} %", probability * 100.0),
                Confidence::Unlisted => "below the listed alternatives".to_owned(),
                Confidence::Unavailable { reason } => format!("unavailable ({reason})"),
            };
            println!("    {:<10} {confidence}", scored.option.id);
        }
    }
}

pub(crate) async fn run(rt: &Runtime, progress: &Progress) -> anyhow::Result<Outcome> {
    progress.set("one-call thinkers: a toolless classification and a decision");
    let triage = ToollessThinker::<Ticket, Triage>::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
        SystemPrompt::new(
            "Classify the support ticket: how urgent it is and which product area it concerns.",
        )?,
    )
    .guardrail(|t: &Triage| {
        if t.area.trim().is_empty() {
            Verdict::Refuse("name the product area".into())
        } else {
            Verdict::Accept
        }
    })
    .class("triage");
    let triage = rt
        .run(triage.ask(Ticket {
            text: TICKET.to_owned(),
        }))
        .await?;

    let mut router = DecisionThinker::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
        SystemPrompt::new("Pick the team that should handle the support ticket.")?,
        vec![
            DecisionOption::new("billing", "Invoices, refunds, payment methods."),
            DecisionOption::new("technical", "Errors, outages, integrations."),
            DecisionOption::new("account", "Logins, passwords, profile changes."),
            DecisionOption::new("sales", "Quotes, upgrades, new contracts."),
        ],
    )?
    .class("route_ticket");
    // The OpenAI dialect returns log-probabilities, so the confidences are measured.
    if rt.models().router().catalog().entry("sim-small-a").is_ok() {
        router.pin_model("sim-small-a".to_owned());
    }
    let choice = rt.run(router.choose(ThinkerInput::query(TICKET))).await?;
    Ok(Outcome { triage, choice })
}
