//! `thinkers approvals`, `thinkers approve ID`, `thinkers deny ID --reason …`, `thinkers skip ID
//! --result …`, `thinkers fail ID --reason …`: the tool calls waiting for a person (for an
//! approval, or because their outcome is unknown), and the decisions on them (see
//! `thinkers::durable`). Each decision is made here, on the stored call: it covers that call's
//! arguments and no other.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use thinkers::durable::{Approval, Decision};

/// Where the approvals are.
#[derive(Debug, Args)]
pub(crate) struct DbArg {
    /// The database file, or a `postgres://` URL (the workflows' database, for workers).
    #[arg(long, default_value = "thinkers.db", env = "THINKERS_DB")]
    db: PathBuf,
}

/// `thinkers approvals`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    db: DbArg,
    /// List decided calls too.
    #[arg(long)]
    all: bool,
    /// Print JSON (one array) instead of a table.
    #[arg(long)]
    json: bool,
}

/// `thinkers approve`.
#[derive(Debug, Args)]
pub(crate) struct ApproveArgs {
    /// The approval's id, as `thinkers approvals` lists it.
    id: String,
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    restate: crate::work::RestateArgs,
}

/// `thinkers deny`.
#[derive(Debug, Args)]
pub(crate) struct DenyArgs {
    /// The approval's id, as `thinkers approvals` lists it.
    id: String,
    /// Why, for the model (it reads this and goes on without the call).
    #[arg(long)]
    reason: String,
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    restate: crate::work::RestateArgs,
}

/// `thinkers skip`.
#[derive(Debug, Args)]
pub(crate) struct SkipArgs {
    /// The approval's id, as `thinkers approvals` lists it.
    id: String,
    /// What the model reads as the call's result (for a call whose outcome was unknown: what
    /// you found its effect to be).
    #[arg(long)]
    result: String,
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    restate: crate::work::RestateArgs,
}

/// `thinkers fail`.
#[derive(Debug, Args)]
pub(crate) struct FailArgs {
    /// The approval's id, as `thinkers approvals` lists it.
    id: String,
    /// Why the run fails, for the record.
    #[arg(long)]
    reason: String,
    #[command(flatten)]
    db: DbArg,
    #[command(flatten)]
    restate: crate::work::RestateArgs,
}

async fn open(db: &DbArg) -> anyhow::Result<std::sync::Arc<dyn thinkers::durable::StepStore>> {
    let target = db.db.to_string_lossy().into_owned();
    if !target.starts_with("postgres") && !db.db.exists() {
        anyhow::bail!(
            "no database at {}: approvals live in the store the runs recorded to (--db)",
            db.db.display()
        );
    }
    let store = thinkers_store::open(&target)
        .await
        .context("opening the store (--db)")?;
    Ok(store.steps())
}

pub(crate) async fn list(args: ListArgs) -> anyhow::Result<()> {
    let steps = open(&args.db).await?;
    let approvals = steps.approvals(!args.all).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&approvals)?);
        return Ok(());
    }
    if approvals.is_empty() {
        println!("no {}approvals", if args.all { "" } else { "pending " });
        return Ok(());
    }
    for a in &approvals {
        print_one(a);
    }
    Ok(())
}

fn print_one(a: &Approval) {
    let mut args = a.arguments.to_string();
    if args.chars().count() > 200 {
        args = args.chars().take(200).collect::<String>() + "…";
    }
    let kind = match a.kind {
        thinkers::durable::ApprovalKind::Approval => "",
        thinkers::durable::ApprovalKind::OutcomeUnknown => {
            "  OUTCOME UNKNOWN (started, never finished)"
        }
    };
    let hash = a.arguments_hash.get(..12).unwrap_or("none");
    println!(
        "{}  {}{}  tool {}  run {}  job {}\n    arguments {} (sha256 {}…){}",
        a.id,
        a.status.as_str(),
        kind,
        a.tool,
        a.run,
        a.job,
        args,
        hash,
        a.reason
            .as_deref()
            .map(|r| format!("\n    reason {r}"))
            .unwrap_or_default()
    );
}

pub(crate) async fn approve(args: ApproveArgs) -> anyhow::Result<()> {
    let a = decide(&args.db, &args.restate, &args.id, Decision::Approve).await?;
    println!(
        "approved {} (tool {}); run {} goes on when it runs again",
        a.id, a.tool, a.run
    );
    Ok(())
}

pub(crate) async fn deny(args: DenyArgs) -> anyhow::Result<()> {
    if args.reason.trim().is_empty() {
        anyhow::bail!("--reason must say why: the model reads it");
    }
    let decision = Decision::Deny {
        reason: args.reason,
    };
    let a = decide(&args.db, &args.restate, &args.id, decision).await?;
    println!(
        "denied {} (tool {}); run {} goes on without it when it runs again",
        a.id, a.tool, a.run
    );
    Ok(())
}

pub(crate) async fn skip(args: SkipArgs) -> anyhow::Result<()> {
    if args.result.trim().is_empty() {
        anyhow::bail!("--result must say what the call's result is: the model reads it");
    }
    let decision = Decision::Skip {
        result: args.result,
    };
    let a = decide(&args.db, &args.restate, &args.id, decision).await?;
    println!(
        "skipped {} (tool {}); run {} goes on with the stated result when it runs again",
        a.id, a.tool, a.run
    );
    Ok(())
}

pub(crate) async fn fail(args: FailArgs) -> anyhow::Result<()> {
    if args.reason.trim().is_empty() {
        anyhow::bail!("--reason must say why the run fails");
    }
    let decision = Decision::Fail {
        reason: args.reason,
    };
    let a = decide(&args.db, &args.restate, &args.id, decision).await?;
    println!(
        "failed {} (tool {}); run {} fails on it when it runs again",
        a.id, a.tool, a.run
    );
    Ok(())
}

/// Store `decision` on the call `id`, then tell the workflow's engine (Restate) it was decided.
async fn decide(
    db: &DbArg,
    restate: &crate::work::RestateArgs,
    id: &str,
    decision: Decision,
) -> anyhow::Result<Approval> {
    let steps = open(db).await?;
    let a = steps.decide(id, &decision).await?;
    resume(&db.db, restate, &a).await?;
    Ok(a)
}

/// A decided call of a workflow (which runs on Restate): resolve the durable promise it waits
/// on (the decision is stored first, so deciding again the same way resolves it again
/// harmlessly). A call of a run that is no workflow (`thinkers run`, a chat) needs nothing more.
pub(crate) async fn resume(
    db: &std::path::Path,
    restate: &crate::work::RestateArgs,
    approval: &Approval,
) -> anyhow::Result<()> {
    let target = db.to_string_lossy().into_owned();
    if !target.starts_with("postgres") {
        return Ok(());
    }
    let Ok(id) = thinkers_workflows::WorkflowId::parse(&approval.run) else {
        return Ok(());
    };
    let store = thinkers_store::PgStore::open(&target)
        .await
        .context("opening the store (--db)")?;
    match thinkers_workflows::Workflows::new(&store).status(id).await {
        Ok(_) => {}
        // Not in the record: a run of `thinkers run --key` or of a program, not a workflow.
        Err(e) if e.kind() == thinkers::ErrorKind::InvalidInput => return Ok(()),
        Err(e) => return Err(e).context("reading the workflow's record (--db)"),
    }
    restate
        .ingress()?
        .decide(approval)
        .await
        .context("resolving the decision's promise on Restate")?;
    Ok(())
}
