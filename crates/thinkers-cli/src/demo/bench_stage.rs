//! The benchmark stage of the demo: the explainer raced across every open entry of its grade,
//! each run judged blind at the ceiling grade while the race goes on.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use thinkers::Runtime;
use thinkers::benchmark::{Benchmark, BenchmarkEvent, BenchmarkReport};
use thinkers::job::JobId;
use thinkers::thinker::ThinkerInput;

use super::Progress;
use super::thinker_stage;

/// What the stage prints.
pub(crate) struct Outcome {
    pub(crate) workflow: JobId,
    report: BenchmarkReport,
}

impl Outcome {
    pub(crate) fn print(&self) {
        crate::bench::print_report(&self.report);
    }
}

pub(crate) async fn run(rt: &Runtime, progress: &Progress) -> anyhow::Result<Outcome> {
    progress.set("benchmark: the explainer raced across its grade, judged blind");
    let bench = Benchmark::new(
        thinker_stage::explainer,
        ThinkerInput::query("What is admission?"),
        1,
    )
    .on_progress({
        let bar = progress.bar();
        let (runs, judged) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let planned = Arc::new(AtomicUsize::new(0));
        move |event: &BenchmarkEvent| {
            match event {
                BenchmarkEvent::Planned(all) => planned.store(all.len(), Ordering::Relaxed),
                BenchmarkEvent::RunFinished { .. } => {
                    runs.fetch_add(1, Ordering::Relaxed);
                }
                BenchmarkEvent::JudgeFinished { .. } => {
                    judged.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
            bar.set_message(format!(
                "benchmark: {}/{} runs done, {} judged",
                runs.load(Ordering::Relaxed),
                planned.load(Ordering::Relaxed),
                judged.load(Ordering::Relaxed)
            ));
        }
    });
    let slot = bench.report();
    let handle = rt.dispatcher().submit(bench);
    let workflow = handle.id();
    handle.await?;
    let report = slot
        .get()
        .ok_or_else(|| anyhow::anyhow!("the benchmark published no report"))?;
    Ok(Outcome { workflow, report })
}
