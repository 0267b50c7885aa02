//! `thinkers demo`: the main job. Runs offline against an in-process simulated provider (or
//! against the providers of a given catalog) and shows the runtime at work.
//!
//! The demo runs six stages in order (dispatcher, thinkers, one-call, providers, chat,
//! benchmark) and prints each one's outcome as it ends. The providers stage makes one call per
//! provider family of the catalog (offline: OpenAI Chat Completions, Anthropic, OpenAI Responses,
//! Gemini and Bedrock, all served by the sim). A stage that fails is reported with its name and
//! error and the next stage still runs. At the end the record says which entries, of which
//! family, served each stage; a closing line lists the stages that passed and failed, and the
//! command exits non-zero when any failed.

mod bench_stage;
mod chat_stage;
mod dispatch_stage;
mod families_stage;
mod providers_stage;
mod thinker_stage;

pub(crate) use thinker_stage::explainer;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use thinkers::Runtime;
use thinkers::job::JobId;
use thinkers::model::Catalog;
use thinkers::ops::Trajectory;
use thinkers::ops::cost::{self, GroupBy};
use thinkers::record::{LlmRun, now_ms};
use thinkers_sim::SimConfig;
use thinkers_store::{LlmRunFilter, SqliteStore};
use thinkers_store::{RuntimeBuilderExt as _, RuntimeExt as _};

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
            "providers",
            &progress,
            providers_stage::run(&rt, &progress),
            providers_stage::Outcome::print,
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
    println!("\nEntries that served each stage, by the record:");
    print!(
        "{}",
        stages.served_by(&runs, rt.models().router().catalog())
    );
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
    done: Vec<Stage>,
}

/// One stage that ran.
struct Stage {
    name: &'static str,
    elapsed: Duration,
    /// When it started and ended, milliseconds since the Unix epoch: its model calls are the
    /// recorded ones that ended in between (stages run one after the other).
    window: (i64, i64),
    failure: Option<String>,
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
        let from = now_ms();
        let result = stage.await;
        let elapsed = started.elapsed();
        let window = (from, now_ms());
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
        self.done.push(Stage {
            name,
            elapsed,
            window,
            failure,
        });
        result.ok()
    }

    /// One line per stage: the entries whose calls ended while it ran, each with its provider
    /// family and its number of calls, in the order they were first used.
    fn served_by(&self, runs: &[LlmRun], catalog: &Catalog) -> String {
        let mut out = String::new();
        for stage in &self.done {
            let (from, to) = stage.window;
            let mut used: Vec<(&str, usize)> = Vec::new();
            for run in runs.iter().filter(|r| (from..=to).contains(&r.at_ms)) {
                match used.iter_mut().find(|(entry, _)| *entry == run.entry) {
                    Some((_, calls)) => *calls += 1,
                    None => used.push((&run.entry, 1)),
                }
            }
            let list = if used.is_empty() {
                "no model call".to_owned()
            } else {
                used.iter()
                    .map(|(entry, calls)| {
                        let family = providers_stage::family_of(catalog, entry)
                            .unwrap_or("not in the catalog");
                        let s = if *calls == 1 { "" } else { "s" };
                        format!("{entry} ({family}, {calls} call{s})")
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            out.push_str(&format!("  {:<11} {list}\n", stage.name));
        }
        out
    }

    /// One line: the stages that passed and those that failed, each with its time.
    fn summary(&self) -> String {
        let list = |failed: bool| {
            let names: Vec<String> = self
                .done
                .iter()
                .filter(|stage| stage.failure.is_some() == failed)
                .map(|stage| format!("{} ({:.1} s)", stage.name, stage.elapsed.as_secs_f64()))
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
            .filter(|stage| stage.failure.is_some())
            .map(|stage| stage.name)
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
