//! `thinkers run`: one registered workflow (`chain`, `fanout`, `explain`, `errands`) in this
//! process, recorded in a SQLite file or a PostgreSQL database, its JSON output on stdout. With
//! `--key` it is a durable run: its tool calls are journaled under the key in the same
//! database, a call that needs a person pauses it (the command says which and how to go on), and
//! running the same command again resumes it from the journal.

use std::path::PathBuf;

use anyhow::Context as _;
use thinkers::Runtime;
use thinkers_store::RuntimeBuilderExt as _;

use crate::{lifecycle, simctl, work};

/// Options of `thinkers run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The registered workflow: `chain` (calls one after the other), `fanout` (calls at once),
    /// `explain` (a thinker) or `errands` (a thinker whose tool calls may wait for approval).
    name: String,
    /// The workflow's input as JSON.
    #[arg(long, default_value = "{}")]
    input: String,
    /// Run it as the durable run of this key: tool calls are journaled under it, a call waiting
    /// for a person pauses the run, and the same command with the same key resumes it (no
    /// finished tool call runs again, no answered model call is paid again).
    #[arg(long)]
    key: Option<String>,
    /// The database every job and model call is recorded in: a SQLite file or a
    /// `postgres://` URL.
    #[arg(long, default_value = "thinkers.db", env = "THINKERS_DB")]
    db: String,
    /// A model catalog (its providers' API keys from the variables it names); the bundled
    /// catalog when omitted.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// The simulated provider to call when the catalog points at one; without it an
    /// in-process one is started.
    #[arg(long, env = "THINKERS_SIM_URL")]
    sim_url: Option<String>,
    #[command(flatten)]
    caps: crate::caps::CapArgs,
}

pub(crate) async fn run(args: RunArgs) -> anyhow::Result<()> {
    let input: serde_json::Value = serde_json::from_str(&args.input)
        .with_context(|| format!("--input is not JSON: {}", args.input))?;
    let registry = work::registry();
    registry.check(&args.name, &input)?;
    let catalog = simctl::load_catalog(args.catalog.as_deref())?;
    let (catalog, _sim) = simctl::bind_or_use(catalog, args.sim_url.as_deref()).await?;
    let rt = args
        .caps
        .apply(Runtime::builder(catalog).database(args.db.clone()))
        .build()
        .await
        .with_context(|| format!("starting the runtime over {}", args.db))?;
    lifecycle::register(&rt);
    let (id, output) = match &args.key {
        Some(key) => registry.start_durable(&args.name, input, key, rt.dispatcher())?,
        None => registry.start(&args.name, input, rt.dispatcher())?,
    };
    eprintln!(
        "workflow {id} ({}) started; recorded in {}",
        args.name, args.db
    );
    let out = output.await;
    rt.shutdown().await?;
    if let (Err(e @ thinkers::Error::AwaitingApproval { .. }), Some(key)) = (&out, &args.key) {
        anyhow::bail!(
            "run `{key}` paused: {e}. Decide with `thinkers approvals --db {db}` and `thinkers \
             approve|deny|skip|fail ID --db {db}`, then run this command again to resume it",
            db = args.db
        );
    }
    let value = out.with_context(|| format!("workflow `{}` ({id}) failed", args.name))?;
    println!("{value}");
    Ok(())
}
