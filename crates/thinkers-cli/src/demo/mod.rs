//! `thinkers demo`: the main job. Runs offline against an in-process simulated provider (or
//! against the providers of a given catalog) and shows the runtime at work.
//!
//! The demo runs five stages in order (dispatcher, thinkers, one-call, chat, benchmark) and
//! prints each one's outcome as it ends. A stage that fails is reported with its name and error
//! and the next stage still runs; a closing line lists the stages that passed and failed, and the
//! command exits non-zero when any failed.

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
    #[command(flatten)]
    caps: crate::caps::CapArgs,
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
    let rt = args
        .caps
        .apply(Runtime::builder(catalog).database(db.clone()))
        .build()
        .await
        .with_context(|| format!("starting the runtime over {}", args.db.display()))?;
    crate::lifecycle::register(&rt);
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
    let mut stages = Stages::default();
    progress.set("dispatcher: fan-out, throttling, correction, failure");
    let dispatch = stages
        .run(
            "dispatcher",
            &progress,
            dispatch_stage::run(rt.dispatcher()),
            dispatch_stage::Outcome::print,
        )
        .await;
    let thinkers = stages
        .run(
            "thinkers",
            &progress,
            thinker_stage::run(&rt, &progress),
            thinker_stage::Outcome::print,
        )
        .await;
    stages
        .run(
            "one-call",
            &progress,
            families_stage::run(&rt, &progress),
            families_stage::Outcome::print,
        )
        .await;
    stages
        .run(
            "chat",
            &progress,
            chat_stage::run(&rt, &progress),
            chat_stage::Outcome::print,
        )
        .await;
    let bench = stages
        .run(
            "benchmark",
            &progress,
            bench_stage::run(&rt, &progress),
            bench_stage::Outcome::print,
        )
        .await;
    progress.clear();
    // Nothing of a stage runs on, and every row is written, before the record is read back.
    rt.shutdown().await?;

    let store = rt
        .store()
        .context("the runtime was built without its database")?;
    let workflows = [
        dispatch.as_ref().map(|d| d.workflow),
        thinkers.as_ref().map(|t| t.workflow),
    ];
    for workflow in workflows.into_iter().flatten() {
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
    if let Some(thinkers) = &thinkers {
        println!(
            "  cargo run -p thinkers-cli -- trace {} --db {db}",
            thinkers.workflow
        );
    }
    println!("  cargo run -p thinkers-cli -- cost --by workflow --db {db}");
    println!("  cargo run -p thinkers-cli -- serve --db {db}   # the chat host and its web page");
    if let Some(bench) = &bench {
        println!(
            "  cargo run -p thinkers-cli -- trace {} --db {db}   # the benchmark",
            bench.workflow
        );
    }
    if let Some(sim) = sim {
        sim.shutdown().await.ok();
    }
    println!("\n{}", stages.summary());
    stages.verdict()
}

/// The stages run so far: each one's name, how long it took and, when it failed, why.
///
/// A stage's failure does not stop the demo: it is reported under the stage's name and the next
/// stage runs. The demo fails (a non-zero exit) when any stage failed.
#[derive(Default)]
struct Stages {
    done: Vec<(&'static str, Duration, Option<String>)>,
}

impl Stages {
    /// Run one stage, print its outcome (or its failure) as soon as it ends, and record it.
    async fn run<T>(
        &mut self,
        name: &'static str,
        progress: &Progress,
        stage: impl Future<Output = anyhow::Result<T>>,
        print: impl FnOnce(&T),
    ) -> Option<T> {
        let started = Instant::now();
        let result = stage.await;
        let elapsed = started.elapsed();
        progress.bar().suspend(|| match &result {
            Ok(outcome) => {
                print(outcome);
                println!();
            }
            Err(e) => println!(
                "Stage `{name}` failed after {:.1} s: {e:#}\n",
                elapsed.as_secs_f64()
            ),
        });
        let failure = result.as_ref().err().map(|e| format!("{e:#}"));
        self.done.push((name, elapsed, failure));
        result.ok()
    }

    /// One line: the stages that passed and those that failed, each with its time.
    fn summary(&self) -> String {
        let list = |failed: bool| {
            let names: Vec<String> = self
                .done
                .iter()
                .filter(|(_, _, failure)| failure.is_some() == failed)
                .map(|(name, elapsed, _)| format!("{name} ({:.1} s)", elapsed.as_secs_f64()))
                .collect();
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        };
        format!("Stages passed: {}; failed: {}", list(false), list(true))
    }

    /// `Ok` when every stage passed; otherwise an error naming the failed stages.
    fn verdict(&self) -> anyhow::Result<()> {
        let failed: Vec<&str> = self
            .done
            .iter()
            .filter(|(_, _, failure)| failure.is_some())
            .map(|(name, _, _)| *name)
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            anyhow::bail!(
                "{} of {} demo stages failed: {}",
                failed.len(),
                self.done.len(),
                failed.join(", ")
            )
        }
    }
}

async fn print_trajectory(store: &SqliteStore, workflow: JobId) -> anyhow::Result<()> {
    println!("\nTrajectory of workflow {workflow}:");
    let jobs = store.workflow_jobs(workflow).await?;
    print!("{}", Trajectory::build(jobs).render());
    Ok(())
}
