//! `thinkers demo`: the main job. Runs offline against an in-process simulated provider (or
//! against the providers of a given catalog) and shows the runtime at work.

mod bench_stage;
mod chat_stage;
mod dispatch_stage;
mod families_stage;
mod thinker_stage;

pub(crate) use thinker_stage::explainer;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use thinkers::Runtime;
use thinkers::job::JobId;
use thinkers::ops::cost::{self, GroupBy};
use thinkers::record::now_ms;
use thinkers::record::trajectory::Trajectory;
use thinkers::store::{LlmRunFilter, SqliteStore};
use thinkers_sim::SimConfig;

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

    /// The spinner, for stages that report their own progress.
    pub(crate) fn bar(&self) -> ProgressBar {
        self.bar.clone()
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
    // The simulated provider runs calm (no random faults: the dispatcher stage shows throttling
    // and corrections on purpose) and follows the researcher's script.
    let (catalog, sim) = simctl::bind_with(catalog, |c| SimConfig {
        script: Some(thinker_stage::script()),
        ..c.calm()
    })
    .await?;
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

    let since = now_ms();
    let progress = Progress::new();
    progress.set("dispatcher: fan-out, throttling, correction, failure");
    let outcome = stages(&rt, &progress).await;
    progress.clear();
    let (dispatch, thinkers, families, chat, bench) = outcome?;
    dispatch.print();
    println!();
    thinkers.print();
    println!();
    families.print();
    println!();
    chat.print();
    println!();
    bench.print();
    rt.flush().await?;

    let store = rt
        .store()
        .context("the runtime was built without its database")?;
    for workflow in [dispatch.workflow, thinkers.workflow] {
        print_trajectory(store, workflow).await?;
    }
    let runs = store.llm_runs(&LlmRunFilter::new().since_ms(since)).await?;
    println!("\nModel calls and spend of this demo, by catalog entry:");
    print!(
        "{}",
        crate::cost::render(&cost::report(&runs, GroupBy::Entry), &HashMap::new())
    );

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
    println!("  cargo run -p thinkers-cli -- cost --by workflow --db {db}");
    println!("  cargo run -p thinkers-cli -- serve --db {db}   # the chat host and its web page");
    println!(
        "  cargo run -p thinkers-cli -- trace {} --db {db}   # the benchmark",
        bench.workflow
    );
    if let Some(sim) = sim {
        sim.shutdown().await.ok();
    }
    Ok(())
}

type Outcomes = (
    dispatch_stage::Outcome,
    thinker_stage::Outcome,
    families_stage::Outcome,
    chat_stage::Outcome,
    bench_stage::Outcome,
);

/// Every stage in order; the first failure stops the demo.
async fn stages(rt: &Runtime, progress: &Progress) -> anyhow::Result<Outcomes> {
    let dispatch = dispatch_stage::run(rt.dispatcher()).await?;
    let thinkers = thinker_stage::run(rt, progress).await?;
    let families = families_stage::run(rt, progress).await?;
    let chat = chat_stage::run(rt, progress).await?;
    let bench = bench_stage::run(rt, progress).await?;
    Ok((dispatch, thinkers, families, chat, bench))
}

async fn print_trajectory(store: &SqliteStore, workflow: JobId) -> anyhow::Result<()> {
    println!("\nTrajectory of workflow {workflow}:");
    let jobs = store.workflow_jobs(workflow).await?;
    print!("{}", Trajectory::build(jobs).render());
    Ok(())
}
