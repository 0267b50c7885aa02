//! A toolless thinker: one model call that turns a typed input into a typed answer, checked by a
//! guardrail. The sim is scripted to route the ticket to `other` first, which the guardrail
//! refuses; the corrected answer is accepted.
//!
//! Run it with `cargo run -p thinkers --example toolless`.

use anyhow::Result;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use thinkers::Runtime;
use thinkers::model::{Grade, OutputSize};
use thinkers::thinker::{SystemPrompt, ThinkerDeclaration, ToollessThinker, Verdict};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, SimConfig};

#[path = "support/mod.rs"]
mod support;

/// A support ticket.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Ticket {
    /// What the customer wrote.
    pub text: String,
}

/// The teams a ticket can go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Team {
    /// Invoices and payments.
    Billing,
    /// Errors and outages.
    Technical,
    /// Anything else.
    Other,
}

/// Where the ticket goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Routing {
    /// The team that should handle the ticket.
    pub team: Team,
}

/// What the run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The accepted routing.
    pub routing: Routing,
    /// The exchange, rendered.
    pub transcript: String,
}

/// Route one ticket.
pub async fn run(rt: &Runtime) -> Result<Outcome> {
    let router = ToollessThinker::<Ticket, Routing>::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
        SystemPrompt::new("Route the support ticket to the team that should handle it.")?,
    )
    .guardrail(|r: &Routing| match r.team {
        Team::Other => Verdict::refuse("a ticket about money goes to a named team"),
        _ => Verdict::Accept,
    })
    .class("ticket_router");
    let observer = router.observer();
    let routing = rt
        .run(router.ask(Ticket {
            text: "My invoice shows the wrong amount.".into(),
        }))
        .await?;
    let transcript = observer.transcript();
    println!("{transcript}");
    println!("routed to {:?}", routing.team);
    Ok(Outcome {
        routing,
        transcript,
    })
}

/// The first answer is `other` (refused by the guardrail); the correction is `billing`.
pub fn tune(config: SimConfig) -> SimConfig {
    let script = Script::new(vec![
        ScriptRule::when_contains("invoice", ScriptAnswer::Json(json!({"team": "other"}))).times(1),
        ScriptRule::when_contains(
            "Revise your answer",
            ScriptAnswer::Json(json!({"team": "billing"})),
        ),
    ]);
    SimConfig {
        script: Some(script),
        ..config
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let env = support::from_args(tune).await?;
    run(&env.rt).await?;
    // Cancels what still runs and writes every record before the process exits.
    env.rt.shutdown().await?;
    Ok(())
}
