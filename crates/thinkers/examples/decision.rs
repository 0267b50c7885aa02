//! A decision thinker: the model only picks among given options. It chooses one, then ranks the
//! best two; where the provider returns log-probabilities (the OpenAI dialect) every option gets
//! a probability.
//!
//! Run it with `cargo run -p thinkers --example decision`.

use anyhow::Result;
use thinkers::Runtime;
use thinkers::model::{Grade, OutputSize};
use thinkers::thinker::{
    Choice, DecisionOption, DecisionThinker, Ranking, SystemPrompt, ThinkerDeclaration,
    ThinkerInput,
};

#[path = "support/mod.rs"]
mod support;

/// The option ids, in the order given.
pub const TEAMS: [&str; 4] = ["billing", "technical", "account", "other"];

/// What the run produced.
#[derive(Debug)]
pub struct Outcome {
    /// The choice, with a confidence per option.
    pub choice: Choice,
    /// The best two, in order.
    pub ranking: Ranking,
}

fn decider() -> Result<DecisionThinker> {
    let descriptions = [
        "Invoices, refunds, payment methods.",
        "Errors, outages, integrations.",
        "Logins, passwords, profile changes.",
        "Anything that fits no other team.",
    ];
    let options = TEAMS
        .iter()
        .zip(descriptions)
        .map(|(id, d)| DecisionOption::new(*id, d))
        .collect();
    // Option ids are checked here: unique, non-empty, safe to put in a JSON enum.
    Ok(DecisionThinker::new(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Verdict),
        SystemPrompt::new("Pick the team that should handle the ticket.")?,
        options,
    )?
    .class("ticket_decision"))
}

/// Choose, then rank.
pub async fn run(rt: &Runtime) -> Result<Outcome> {
    let thinker = decider()?;
    let question = || ThinkerInput::query("Which team handles: 'I was charged twice this month'?");
    let choice = rt.run(thinker.choose(question())).await?;
    println!(
        "chosen: {} ({:?})",
        choice.chosen.option.id, choice.chosen.confidence
    );
    for o in &choice.options {
        println!("  {:<10} {:?}", o.option.id, o.confidence);
    }
    let ranking = rt.run(thinker.rank(question(), 2)?).await?;
    let ranked: Vec<&str> = ranking
        .ranked
        .iter()
        .map(|s| s.option.id.as_str())
        .collect();
    println!("best two: {ranked:?}");
    Ok(Outcome { choice, ranking })
}

/// The sim as bundled.
pub fn tune(config: thinkers_sim::SimConfig) -> thinkers_sim::SimConfig {
    config
}

#[tokio::main]
async fn main() -> Result<()> {
    let env = support::from_args(tune).await?;
    run(&env.rt).await?;
    // Cancels what still runs and writes every record before the process exits.
    env.rt.shutdown().await?;
    Ok(())
}
