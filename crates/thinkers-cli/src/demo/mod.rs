//! `thinkers demo`: the main job. Runs offline against an in-process simulated provider (or
//! against the providers of a given catalog) and shows the runtime at work.

mod dispatch_stage;
mod thinker_stage;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use thinkers::Runtime;
use thinkers::job::JobId;
use thinkers::record::trajectory::Trajectory;
use thinkers::store::SqliteStore;

use crate::simctl;

/// Options of `thinkers demo`.
#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// The database file every job and model call is recorded in.
    #[arg(long, default_value = "thinkers.db", env = "THINKERS_DB")]
    db: PathBuf,
    /// A model catalog to run against (its providers' API keys from the variables it names);
    /// the bundled catalog, served by an in-process simulated provider, when omitted.
    #[arg(long)]
    catalog: Option<PathBuf>,
}

/// One spinner line for the whole demo, so progress shows while a stage runs.
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    fn new() -> Self {
        let bar = ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(80));
        Self { bar }
    }

    /// Say what is running now.
    pub(crate) fn set(&self, message: impl Into<std::borrow::Cow<'static, str>>) {
        self.bar.set_message(message);
    }

    fn clear(&self) {
        self.bar.finish_and_clear();
    }
}

pub(crate) async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let wall = Instant::now();
    let catalog = simctl::load_catalog(args.catalog.as_deref())?;
    let (catalog, sim) = simctl::bind(catalog).await?;
    let db = args.db.to_string_lossy().into_owned();
    let rt = Runtime::builder(catalog)
        .database(db.clone())
        .build()
        .await
        .with_context(|| format!("starting the runtime over {}", args.db.display()))?;
    match &sim {
        Some(sim) => println!(
            "thinkers demo — offline against the simulated provider at {}, recorded in {}\n",
            sim.base_url(),
            args.db.display()
        ),
        None => println!(
            "thinkers demo — against the providers of {}, recorded in {}\n",
            args.catalog
                .as_deref()
                .map_or_else(|| "the catalog".into(), |p| p.display().to_string()),
            args.db.display()
        ),
    }

    let progress = Progress::new();
    progress.set("dispatcher: fan-out, throttling, correction, failure");
    let dispatch = dispatch_stage::run(rt.dispatcher()).await;
    let thinkers = match &dispatch {
        Ok(_) => Some(thinker_stage::run(&rt, &progress).await),
        Err(_) => None,
    };
    progress.clear();
    let dispatch = dispatch?;
    dispatch.print();
    let thinkers = thinkers.context("the thinker stage did not run")??;
    println!();
    thinkers.print();
    rt.flush().await?;

    let store = rt
        .store()
        .context("the runtime was built without its database")?;
    for workflow in [dispatch.workflow, thinkers.workflow] {
        print_trajectory(store, workflow).await?;
    }

    println!(
        "\nDone in {:.1} s. Explore what was stored:",
        wall.elapsed().as_secs_f64()
    );
    let db = args.db.display();
    println!("  cargo run -p thinkers-cli -- trace --list --db {db}");
    println!(
        "  cargo run -p thinkers-cli -- trace {} --db {db}",
        thinkers.workflow
    );
    println!("  cargo run -p thinkers-cli -- cost --db {db}");
    if let Some(sim) = sim {
        sim.shutdown().await.ok();
    }
    Ok(())
}

async fn print_trajectory(store: &SqliteStore, workflow: JobId) -> anyhow::Result<()> {
    println!("\nTrajectory of workflow {workflow}:");
    let jobs = store.workflow_jobs(workflow).await?;
    print!("{}", Trajectory::build(jobs).render());
    Ok(())
}
