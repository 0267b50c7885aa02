//! `thinkers bench`: race a thinker task across every model of a grade and report.
//!
//! The task is a small single-objective question (bundled, or read from a TOML or JSON file
//! with `objective`, `query` and `answer` = `text` | `number` | `yes_no`). With the bundled
//! catalog (or any catalog pointing at the simulated provider) a thinkers-sim is started
//! in-process. One progress bar per run; the table is printed, and the report is written as
//! `bench-report.json` (everything) and `bench-runs.csv` (one line per run) in `--out`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, bail};
use comfy_table::Table;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use thinkers::Runtime;
use thinkers::benchmark::{Benchmark, BenchmarkEvent, BenchmarkReport, RunRole};
use thinkers::llm::ModelClient;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::model::{Catalog, Grade, OutputSize};
use thinkers::thinker::{Thinker, ThinkerDeclaration, ThinkerInput};
use thinkers_sim::{Sim, SimConfig};

use crate::simctl;

/// The JSON report's file name in `--out`.
pub(crate) const REPORT_JSON: &str = "bench-report.json";
/// The CSV rows' file name in `--out`.
pub(crate) const RUNS_CSV: &str = "bench-runs.csv";

/// Options of `thinkers bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// The grade to race (small, medium, large, xl, mega or ceiling).
    #[arg(long)]
    grade: Grade,
    /// Runs per entry of the grade.
    #[arg(long, default_value_t = 1)]
    times: u32,
    /// A catalog file; the bundled catalog (served by the simulated provider) when omitted.
    #[arg(long, env = "THINKERS_CATALOG")]
    catalog: Option<PathBuf>,
    /// A task file (TOML, or JSON by extension): objective, query, answer = text|number|yes_no.
    #[arg(long)]
    task: Option<PathBuf>,
    /// Where to write bench-report.json and bench-runs.csv.
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// Turn the simulated provider's random faults and latency off (reproducible runs).
    #[arg(long)]
    calm: bool,
}

/// A task: what the thinker is told and asked, and the kind of answer it must give.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Task {
    objective: String,
    query: String,
    #[serde(default)]
    answer: AnswerKind,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
enum AnswerKind {
    #[default]
    Text,
    Number,
    YesNo,
}

impl Task {
    fn bundled() -> Self {
        Self {
            objective: "Answer the question accurately. Show the steps that lead to the answer."
                .to_owned(),
            query: "A train leaves at 09:40 and arrives at 13:05. How many minutes is the \
                    journey?"
                .to_owned(),
            answer: AnswerKind::Number,
        }
    }

    fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the task file {}", path.display()))?;
        let task: Self = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text)
                .with_context(|| format!("parsing the task file {}", path.display()))?
        } else {
            toml::from_str(&text)
                .with_context(|| format!("parsing the task file {}", path.display()))?
        };
        if task.query.trim().is_empty() {
            bail!("the task file {} has an empty `query`", path.display());
        }
        Ok(task)
    }
}

/// A text answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct TextAnswer {
    /// The steps that lead to the answer.
    reasoning: String,
    /// The answer, brief.
    answer: String,
}

/// A numeric answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct NumberAnswer {
    /// The steps that lead to the answer.
    reasoning: String,
    /// The number.
    answer: f64,
}

/// A yes-or-no answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct YesNoAnswer {
    /// The steps that lead to the answer.
    reasoning: String,
    /// Yes (true) or no (false).
    answer: bool,
}

pub(crate) async fn run(args: BenchArgs) -> anyhow::Result<()> {
    if args.times == 0 {
        bail!("--times must be at least 1");
    }
    let task = match &args.task {
        Some(p) => Task::load(p)?,
        None => Task::bundled(),
    };
    let catalog = simctl::load_catalog(args.catalog.as_deref())?;
    let (catalog, sim) = bind(catalog, args.catalog.as_deref(), args.calm).await?;
    let client = ModelClient::builder()
        .request_timeout(Duration::from_secs(120))
        .build()?;
    let rt = Runtime::builder(catalog).client(client).build().await?;
    crate::lifecycle::register(&rt);

    let outcome = match task.answer {
        AnswerKind::Text => {
            race::<TextAnswer>(&rt, &args, &task, |a, b| {
                f64::from(u8::from(
                    a.answer.trim().eq_ignore_ascii_case(b.answer.trim()),
                ))
            })
            .await
        }
        AnswerKind::Number => {
            race::<NumberAnswer>(&rt, &args, &task, |a, b| {
                let scale = a.answer.abs().max(1e-9);
                (1.0 - (a.answer - b.answer).abs() / scale).max(0.0)
            })
            .await
        }
        AnswerKind::YesNo => {
            race::<YesNoAnswer>(&rt, &args, &task, |a, b| {
                f64::from(u8::from(a.answer == b.answer))
            })
            .await
        }
    };
    if let Some(sim) = sim {
        sim.shutdown().await?;
    }
    let (report, result) = outcome?;
    print_report(&report);
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let json = args.out.join(REPORT_JSON);
    std::fs::write(&json, serde_json::to_string_pretty(&report)?)
        .with_context(|| format!("writing {}", json.display()))?;
    let csv = args.out.join(RUNS_CSV);
    std::fs::write(&csv, report.rows_csv())
        .with_context(|| format!("writing {}", csv.display()))?;
    println!("\nWrote {} and {}", json.display(), csv.display());
    match result {
        Ok(answer) => {
            println!("Reference answer: {answer}");
            Ok(())
        }
        Err(e) => Err(anyhow::anyhow!("the reference run failed: {e}")),
    }
}

/// Start a simulated provider when the catalog points at one.
async fn bind(
    catalog: Catalog,
    file: Option<&Path>,
    calm: bool,
) -> anyhow::Result<(Catalog, Option<Sim>)> {
    if !catalog.needs_sim() {
        return simctl::bind(catalog).await;
    }
    let config = match file {
        Some(p) => {
            SimConfig::from_catalog_file(p).with_context(|| format!("reading {}", p.display()))?
        }
        None => SimConfig::from_catalog_toml(BUNDLED_TOML)?,
    };
    let config = if calm { config.calm() } else { config };
    let sim = Sim::start(config)
        .await
        .context("starting the simulated provider")?;
    let url = sim.base_url();
    Ok((catalog.with_sim_url(&url), Some(sim)))
}

/// Run the benchmark with one progress bar per run. Returns the report and the reference's
/// answer as JSON (or the benchmark's error).
async fn race<A>(
    rt: &Runtime,
    args: &BenchArgs,
    task: &Task,
    scorer: impl Fn(&A, &A) -> f64 + Send + Sync + 'static,
) -> anyhow::Result<(BenchmarkReport, anyhow::Result<String>)>
where
    A: DeserializeOwned + JsonSchema + Serialize + Send + Sync + 'static,
{
    let objective = task.objective.clone();
    let grade = args.grade;
    let factory = move || {
        Thinker::<A>::declared(
            ThinkerDeclaration::new(grade, OutputSize::Compact),
            objective.clone(),
        )
        .class("bench_task")
    };
    let bars = Bars::default();
    let hook = bars.clone();
    let bench = Benchmark::new(factory, ThinkerInput::query(task.query.clone()), args.times)
        .scorer(scorer)
        .on_progress(move |event| hook.on(event));
    let slot = bench.report();
    let result = rt.run(bench).await;
    bars.finish();
    let Some(report) = slot.get() else {
        return Err(match result {
            Err(e) => anyhow::anyhow!("the benchmark did not run: {e}"),
            Ok(_) => anyhow::anyhow!("the benchmark left no report"),
        });
    };
    let answer = result
        .map_err(|e| anyhow::anyhow!("{e}"))
        .and_then(|a| Ok(serde_json::to_string(&a)?));
    Ok((report, answer))
}

/// One spinner per run, driven by the benchmark's progress events.
#[derive(Clone, Default)]
struct Bars {
    multi: MultiProgress,
    bars: Arc<Mutex<Vec<ProgressBar>>>,
}

impl Bars {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ProgressBar>> {
        self.bars.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, index: usize, message: String) {
        if let Some(bar) = self.lock().get(index) {
            bar.set_message(message);
        }
    }

    fn on(&self, event: &BenchmarkEvent) {
        match event {
            BenchmarkEvent::Planned(runs) => {
                let style =
                    ProgressStyle::with_template("{spinner} {prefix:<24} {elapsed:>4} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner());
                let mut bars = self.lock();
                for (role, model, n) in runs {
                    let bar = self.multi.add(ProgressBar::new_spinner());
                    bar.set_style(style.clone());
                    bar.set_prefix(match role {
                        RunRole::Reference => "reference".to_owned(),
                        RunRole::Candidate => format!("{model} #{n}"),
                    });
                    bar.set_message("waiting");
                    bar.enable_steady_tick(Duration::from_millis(120));
                    bars.push(bar);
                }
            }
            BenchmarkEvent::RunStarted(i) => self.set(*i, "running".to_owned()),
            BenchmarkEvent::RunFinished { index, succeeded } => {
                self.set(
                    *index,
                    if *succeeded { "done" } else { "failed" }.to_owned(),
                );
                if *index == 0
                    && let Some(bar) = self.lock().first()
                {
                    bar.finish();
                }
            }
            BenchmarkEvent::JudgeStarted(i) => self.set(*i, "judging".to_owned()),
            BenchmarkEvent::JudgeFinished { index, score } => {
                let msg = score.map_or_else(|| "judge failed".to_owned(), |s| format!("{s}/10"));
                if let Some(bar) = self.lock().get(*index) {
                    bar.finish_with_message(msg);
                }
            }
            _ => {}
        }
    }

    fn finish(&self) {
        for bar in self.lock().iter() {
            if !bar.is_finished() {
                bar.finish();
            }
        }
        let _ = self.multi.clear();
    }
}

pub(crate) fn print_report(report: &BenchmarkReport) {
    println!(
        "Benchmark over grade {} ({} run(s) per entry)",
        report.grade, report.times
    );
    let mut table = Table::new();
    table.set_header([
        "run",
        "model",
        "status",
        "calls",
        "iter",
        "uncached in",
        "cache read",
        "cache write",
        "tokens out",
        "latency",
        "wall",
        "cost",
        "judge",
        "reason",
        "scorer",
    ]);
    for r in &report.rows {
        table.add_row([
            match r.role {
                RunRole::Reference => "reference".to_owned(),
                RunRole::Candidate => format!("#{}", r.run),
            },
            r.model.clone(),
            r.error
                .as_ref()
                .map_or_else(|| "ok".to_owned(), |e| format!("failed: {e}")),
            r.calls.to_string(),
            r.iterations.to_string(),
            r.uncached_input_tokens().to_string(),
            r.cache_read_tokens.to_string(),
            r.cache_write_tokens.to_string(),
            r.output_tokens.to_string(),
            format!("{} ms", r.latency_ms),
            format!("{} ms", r.wall_ms),
            r.cost_text(),
            r.judge_score
                .map_or_else(|| "-".to_owned(), |s| format!("{s}/10")),
            clip(
                r.judge_reason
                    .as_deref()
                    .or(r.unjudged.as_deref())
                    .unwrap_or_default(),
                60,
            ),
            r.scorer_score
                .map_or_else(|| "-".to_owned(), |s| format!("{s:.2}")),
        ]);
    }
    println!("{table}");
    let mut means = Table::new();
    means.set_header([
        "model",
        "runs",
        "failed",
        "calls",
        "iter",
        "uncached in",
        "cache read",
        "cache write",
        "tokens out",
        "latency",
        "wall",
        "cost",
        "judge",
        "scorer",
    ]);
    for m in &report.means {
        means.add_row([
            m.model.clone(),
            m.runs.to_string(),
            m.failed.to_string(),
            format!("{:.1}", m.calls),
            format!("{:.1}", m.iterations),
            format!("{:.0}", m.uncached_input_tokens()),
            format!("{:.0}", m.cache_read_tokens),
            format!("{:.0}", m.cache_write_tokens),
            format!("{:.0}", m.output_tokens),
            format!("{:.0} ms", m.latency_ms),
            format!("{:.0} ms", m.wall_ms),
            m.cost_text(),
            m.judge_score
                .map_or_else(|| "-".to_owned(), |s| format!("{s:.1}/10")),
            m.scorer_score
                .map_or_else(|| "-".to_owned(), |s| format!("{s:.2}")),
        ]);
    }
    println!("Means per model\n{means}");
    if let Some(f) = &report.judge_failure {
        println!("Every judge failed: {f}");
    }
    if let Some(f) = &report.reference_failure {
        println!("The reference run failed: {f}");
    }
}

/// `text` on one line, cut to `max` characters (the full text is in the JSON and CSV files).
fn clip(text: &str, max: usize) -> String {
    let line = text.replace(['\n', '\r'], " ");
    if line.chars().count() <= max {
        line
    } else {
        format!("{}…", line.chars().take(max - 1).collect::<String>())
    }
}
