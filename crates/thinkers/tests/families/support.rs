//! Shared types and setup for the family tests.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thinkers::model::{Grade, ModelDependent, OutputSize};
use thinkers::record::JobRow;
use thinkers::thinker::{
    DecisionOption, DecisionThinker, SystemPrompt, ThinkerDeclaration, ToollessThinker,
};
use thinkers_sim::{Script, SimConfig};

#[path = "../common/offline.rs"]
mod offline;

pub use offline::Setup;

/// A calm sim serving the bundled catalog (bodies logged), and a runtime bound to it.
pub async fn setup_with(tune: impl FnOnce(SimConfig) -> SimConfig) -> Setup {
    offline::start(Duration::from_secs(5), tune).await
}

pub async fn setup() -> Setup {
    setup_with(|c| c).await
}

/// A sim answering from `script` first.
pub async fn scripted(script: Script) -> Setup {
    setup_with(|c| SimConfig {
        script: Some(script),
        ..c
    })
    .await
}

/// A support ticket to classify.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ticket {
    /// What the customer wrote.
    pub text: String,
}

/// The team a ticket goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Team {
    Billing,
    Technical,
    Other,
}

/// A classification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Routing {
    /// The team that should handle the ticket.
    pub team: Team,
}

pub fn decl() -> ThinkerDeclaration {
    ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict)
}

/// A ticket router pinned to `entry`.
pub fn router(entry: &str) -> ToollessThinker<Ticket, Routing> {
    let mut t = ToollessThinker::<Ticket, Routing>::new(
        decl(),
        SystemPrompt::new("Route the support ticket to the team that should handle it.").unwrap(),
    )
    .class("ticket_router");
    t.pin_model(entry.to_owned());
    t
}

pub fn five_options() -> Vec<DecisionOption> {
    vec![
        DecisionOption::new("billing", "Invoices, refunds, payment methods."),
        DecisionOption::new("technical", "Errors, outages, integrations."),
        DecisionOption::new("account", "Logins, passwords, profile changes."),
        DecisionOption::new("sales", "Quotes, upgrades, new contracts."),
        DecisionOption::new("other", "Anything that fits no other team."),
    ]
}

/// A decision among the five teams, pinned to `entry`.
pub fn dispatcher_of_tickets(entry: &str) -> DecisionThinker {
    let mut t = DecisionThinker::new(
        decl(),
        SystemPrompt::new("Pick the team that should handle the ticket.").unwrap(),
        five_options(),
    )
    .unwrap()
    .class("ticket_decision");
    t.pin_model(entry.to_owned());
    t
}

/// The jobs recorded after the first `before`, of class `class`.
pub fn jobs_of(s: &Setup, before: usize, class: &str) -> Vec<JobRow> {
    s.rec
        .jobs()
        .into_iter()
        .skip(before)
        .filter(|j| j.start.class == class)
        .collect()
}
