//! Human approval and durable steps: a refund above 100 waits for a person. The run stops with
//! `Error::AwaitingApproval` and holds nothing; the person approves (here in code, in production
//! with `thinkers approve ID` or the chat page); running the same durable run again goes on from
//! the journal and the response cache: the refund runs once and the model's first turn is not
//! asked again.
//!
//! Run it with `cargo run -p thinkers-store --example approval`.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Result, bail};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use thinkers::durable::ApprovalPolicy;
use thinkers::model::{Catalog, Grade, ModelDependent as _, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput, ThinkerJob};
use thinkers::tool::{Tool, ToolContext};
use thinkers::{Error, Runtime};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, ScriptToolCall, SimConfig};
use thinkers_store::RuntimeBuilderExt as _;

#[path = "../../thinkers/examples/support/mod.rs"]
mod support;

/// A refund.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct RefundInput {
    /// The order to refund.
    pub order: String,
    /// How much, in the order's currency.
    pub amount: f64,
}

/// Refunds an order: a side effect, counted.
#[derive(Default)]
pub struct Refund {
    /// How many refunds really ran.
    pub paid: Arc<AtomicUsize>,
}

impl Tool for Refund {
    const NAME: &'static str = "refund";
    type Input = RefundInput;
    type Output = String;
    fn description(&self) -> Cow<'static, str> {
        "Refund an order.".into()
    }
    // Refunds above 100 wait for a person; smaller ones run at once.
    fn needs_approval(&self, input: &RefundInput) -> bool {
        input.amount > 100.0
    }
    async fn call(&self, input: &RefundInput, _cx: &ToolContext<'_>) -> thinkers::Result<String> {
        self.paid.fetch_add(1, Ordering::SeqCst);
        Ok(format!(
            "refunded {} on order {}",
            input.amount, input.order
        ))
    }
}

/// What happened.
#[derive(Debug)]
pub struct Outcome {
    /// The tool the run waited on.
    pub waited_on: String,
    /// The thinker's answer after the approval.
    pub answer: String,
    /// How many refunds ran (one).
    pub refunds: usize,
}

fn ask(refund: &Refund) -> ThinkerJob<String> {
    let thinker = Thinker::<String>::declared(
        ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
        "You handle refunds for the support team.",
    )
    .tool(Refund {
        paid: refund.paid.clone(),
    })
    .class("refunds");
    let mut job = thinker.ask(ThinkerInput::query(
        "Refund order 1234: 250 for a broken lamp.",
    ));
    job.pin_model("sim-small-a".to_owned());
    job
}

/// Run the refund as the durable run `order-1234` on a runtime over `catalog` recording to `db`.
pub async fn run(catalog: Catalog, db: &Path) -> Result<Outcome> {
    let rt = Runtime::builder(catalog)
        .database(db.to_string_lossy())
        .approval_policy(ApprovalPolicy::new().tool("send_mail"))
        .build()
        .await?;
    let refund = Refund::default();
    let first = rt.run_durable("order-1234", ask(&refund)).await;
    let Err(Error::AwaitingApproval { pending }) = first else {
        bail!("the refund of 250 should wait for a person: {first:?}");
    };
    for p in &pending {
        println!("waiting for a person: {} (approval {})", p.tool, p.id);
        rt.approve(&p.id).await?;
    }
    let answer = rt.run_durable("order-1234", ask(&refund)).await?;
    println!("answer: {answer}");
    let refunds = refund.paid.load(Ordering::SeqCst);
    println!("refunds that ran: {refunds}");
    rt.shutdown().await?;
    Ok(Outcome {
        waited_on: pending.first().map(|p| p.tool.clone()).unwrap_or_default(),
        answer,
        refunds,
    })
}

/// The sim asks for the refund, then answers once it ran.
pub fn tune(config: SimConfig) -> SimConfig {
    let script = Script::new(vec![
        ScriptRule::when_contains(
            "refunded 250",
            ScriptAnswer::Text("Refunded 250 on order 1234.".into()),
        ),
        ScriptRule::when_contains(
            "Refund order 1234",
            ScriptAnswer::ToolCalls(vec![ScriptToolCall {
                name: "refund".into(),
                arguments: json!({"order": "1234", "amount": 250.0}),
            }]),
        ),
    ]);
    SimConfig {
        script: Some(script),
        ..config
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let env = support::offline(tune).await?;
    let sim = env.sim.as_ref().map(thinkers_sim::Sim::base_url);
    let catalog = match sim {
        Some(url) => Catalog::bundled().with_sim_url(&url),
        None => bail!("the example runs offline"),
    };
    let dir = tempfile::tempdir()?;
    run(catalog, &dir.path().join("approval.db")).await?;
    Ok(())
}
