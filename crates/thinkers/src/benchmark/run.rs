//! The benchmark as an orchestrator: reference, race, judges as runs land, report.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use serde::Serialize;

use super::blinder::Blinder;
use super::judge::{JudgeInput, JudgeTool, JudgeVerdict, RunSheet};
use super::report::{BenchmarkReport, RunRole, RunRow};
use super::subject::{BenchmarkSubject, RunEvidence};
use super::{Benchmark, BenchmarkEvent, REPORT};
use crate::job::{JobContext, JobId, Orchestrator};
use crate::llm::ModelServices;
use crate::onecall::ModelToolJob;
use crate::ops::CostLedger;
use crate::record::now_ms;
use crate::{Error, Result};

/// What lands while the race runs.
enum Landed<O> {
    Run(usize, Result<O>),
    Judge(usize, Result<JudgeVerdict>),
}

/// Where the benchmark stands on one run between submission and landing.
struct Pending<S> {
    subject: S,
    job: JobId,
}

impl<S: BenchmarkSubject> Benchmark<S> {
    fn emit(&self, event: &BenchmarkEvent) {
        if let Some(hook) = &self.progress {
            hook(event);
        }
    }

    /// The entries to race: the explicit list (each must be in the catalog) or the default.
    fn entries(&self, services: &ModelServices, subject: &S) -> Result<Vec<String>> {
        let router = services.router();
        let entries = match &self.candidates {
            Some(list) => {
                for id in list {
                    router.catalog().entry(id).map_err(|_| {
                        Error::invalid_input(
                            "candidates",
                            Some(id.clone()),
                            "the benchmark's candidate list names an entry the catalog lacks",
                        )
                    })?;
                }
                list.clone()
            }
            None => super::open_candidates(router, subject.grade()),
        };
        if entries.is_empty() {
            return Err(Error::invalid_input(
                "grade",
                Some(router.rung(subject.grade()).to_string()),
                "no open, callable entry of this grade lies inside the compliance envelope, so \
                 there is nothing to race",
            ));
        }
        Ok(entries)
    }

    async fn run(&mut self, cx: &JobContext) -> Result<S::Output> {
        if self.times == 0 {
            return Err(Error::invalid_input(
                "times",
                Some("0".to_owned()),
                "a benchmark needs at least one run per entry",
            ));
        }
        let ledger = cx.services().get::<CostLedger>().ok_or_else(|| {
            Error::system(
                "benchmark",
                "no CostLedger is registered on the dispatcher; build it with Runtime::builder \
                 or register a CostLedger fed by a LedgerRecorder",
            )
        })?;
        let _watch = ledger.watch(cx.workflow());
        let services = cx.services().require::<ModelServices>()?;
        let probe = (self.factory)();
        let grade = services.router().rung(probe.grade());
        let entries = self.entries(&services, &probe)?;
        drop(probe);
        let blinder = self.self_names.iter().fold(
            Blinder::for_catalog(services.router().catalog()),
            |b, name| b.hide_self_name(name),
        );

        let mut rows: Vec<RunRow> = Vec::new();
        let mut plan = vec![(RunRole::Reference, "-".to_owned(), 0)];
        for entry in &entries {
            for n in 1..=self.times {
                plan.push((RunRole::Candidate, entry.clone(), n));
                rows.push(blank_row(RunRole::Candidate, entry, n));
            }
        }
        self.emit(&BenchmarkEvent::Planned(plan));

        // The reference: unpinned, alone, first.
        self.emit(&BenchmarkEvent::RunStarted(0));
        let mut reference_row = blank_row(RunRole::Reference, "-", 0);
        let mut subject = (self.factory)();
        let mut reference_job: Option<JobId> = None;
        let (reference, evidence) = match subject.job(self.input.clone()) {
            Ok(job) => {
                let handle = cx.submit(job);
                let id = handle.id();
                reference_job = Some(id);
                reference_row.job = id.to_string();
                let out = handle.await;
                let evidence = subject.evidence();
                settle(&mut reference_row, &out, &ledger, id, &evidence);
                (out, evidence)
            }
            Err(e) => {
                fail_unsubmitted(&mut reference_row, &e);
                (Err(e), RunEvidence::default())
            }
        };
        drop(subject);
        reference_row.model = reference_job
            .and_then(|id| ledger.subtree(id).main_entry().map(str::to_owned))
            .unwrap_or_else(|| "-".to_owned());
        self.emit(&BenchmarkEvent::RunFinished {
            index: 0,
            succeeded: reference.is_ok(),
        });
        let task = blinder.scrub(&to_json(&self.input));
        let reference_sheet = reference.as_ref().ok().map(|out| RunSheet {
            transcript: blinder.scrub(&evidence.transcript),
            answer: blinder.scrub(&to_json(out)),
        });

        // The race: every candidate run in one step.
        let race = cx.fan_out();
        let mut landing: FuturesUnordered<BoxFuture<'static, Landed<S::Output>>> =
            FuturesUnordered::new();
        let mut pending: BTreeMap<usize, Pending<S>> = BTreeMap::new();
        for (i, row) in rows.iter_mut().enumerate() {
            let mut subject = (self.factory)();
            subject.pin_model(row.model.clone());
            row.started_at_ms = now_ms();
            self.emit(&BenchmarkEvent::RunStarted(i + 1));
            match subject.job(self.input.clone()) {
                Ok(job) => {
                    let handle = race.submit(job);
                    row.job = handle.id().to_string();
                    pending.insert(
                        i,
                        Pending {
                            subject,
                            job: handle.id(),
                        },
                    );
                    landing.push(Box::pin(async move { Landed::Run(i, handle.await) }));
                }
                Err(e) => {
                    fail_unsubmitted(row, &e);
                    row.unjudged = Some("the run failed".to_owned());
                    self.emit(&BenchmarkEvent::RunFinished {
                        index: i + 1,
                        succeeded: false,
                    });
                }
            }
        }
        // Judges share one step of their own, claimed once the race is submitted.
        let judging = cx.fan_out();
        let judge = Arc::new(JudgeTool);
        let mut judge_errors: Vec<String> = Vec::new();
        let mut judged = 0_usize;
        while let Some(landed) = landing.next().await {
            match landed {
                Landed::Run(i, out) => {
                    let Some(p) = pending.remove(&i) else {
                        continue;
                    };
                    let evidence = p.subject.evidence();
                    let Some(row) = rows.get_mut(i) else {
                        continue;
                    };
                    settle(row, &out, &ledger, p.job, &evidence);
                    self.emit(&BenchmarkEvent::RunFinished {
                        index: i + 1,
                        succeeded: out.is_ok(),
                    });
                    let (Ok(candidate), Ok(reference_out), Some(reference_sheet)) =
                        (&out, &reference, &reference_sheet)
                    else {
                        row.unjudged = Some(if reference.is_err() {
                            "the reference failed".to_owned()
                        } else {
                            "the run failed".to_owned()
                        });
                        continue;
                    };
                    if let Some(scorer) = &self.scorer {
                        row.scorer_score = Some(scorer(reference_out, candidate));
                    }
                    let input = JudgeInput {
                        task: task.clone(),
                        reference: reference_sheet.clone(),
                        candidate: RunSheet {
                            transcript: blinder.scrub(&evidence.transcript),
                            answer: blinder.scrub(&to_json(candidate)),
                        },
                    };
                    row.judge_started_at_ms = Some(now_ms());
                    self.emit(&BenchmarkEvent::JudgeStarted(i + 1));
                    match ModelToolJob::new(judge.clone(), input) {
                        Ok(job) => {
                            let handle = judging.submit(job);
                            landing.push(Box::pin(async move { Landed::Judge(i, handle.await) }));
                        }
                        Err(e) => {
                            judged += 1;
                            judge_errors.push(e.to_string());
                            row.unjudged = Some(format!("the judge failed: {e}"));
                        }
                    }
                }
                Landed::Judge(i, verdict) => {
                    judged += 1;
                    let Some(row) = rows.get_mut(i) else {
                        continue;
                    };
                    row.judge_ended_at_ms = Some(now_ms());
                    match verdict {
                        Ok(v) => {
                            row.judge_score = Some(v.total());
                            row.judge_accuracy = Some(v.score_accuracy);
                            row.judge_work = Some(v.score_work);
                            row.judge_reason = Some(v.reason);
                        }
                        Err(e) => {
                            judge_errors.push(e.to_string());
                            row.unjudged = Some(format!("the judge failed: {e}"));
                        }
                    }
                    self.emit(&BenchmarkEvent::JudgeFinished {
                        index: i + 1,
                        score: row.judge_score,
                    });
                }
            }
        }

        let judge_failure = (judged > 0 && judge_errors.len() == judged)
            .then(|| judge_errors.first().cloned())
            .flatten();
        let reference_failure = reference.as_ref().err().map(ToString::to_string);
        rows.insert(0, reference_row);
        let report =
            BenchmarkReport::new(grade, self.times, rows, reference_failure, judge_failure);
        tracing::info!(
            target: "thinkers::benchmark",
            class = %self.class,
            "\n{}",
            report.table()
        );
        match serde_json::to_value(&report) {
            Ok(json) => {
                cx.set_metadata(REPORT, json.clone());
                let store = cx.services().get::<Arc<dyn crate::runtime::RuntimeStore>>();
                if let Some(store) = store
                    && let Err(e) = store
                        .save_benchmark_report(cx.workflow(), cx.id(), json)
                        .await
                {
                    tracing::warn!(error = %e, "the benchmark report could not be stored");
                }
            }
            Err(e) => tracing::warn!(error = %e, "the benchmark report could not be published"),
        }
        self.report.set(report);
        reference
    }
}

impl<S: BenchmarkSubject> Orchestrator for Benchmark<S> {
    type Output = S::Output;

    fn class(&self) -> Cow<'static, str> {
        self.class.clone()
    }

    /// A benchmark is never re-run: its runs have already happened.
    fn max_corrections(&self) -> u32 {
        0
    }

    async fn execute(&mut self, cx: &JobContext) -> Result<S::Output> {
        self.run(cx).await
    }
}

fn blank_row(role: RunRole, model: &str, run: u32) -> RunRow {
    RunRow {
        role,
        model: model.to_owned(),
        run,
        job: String::new(),
        succeeded: false,
        error: None,
        calls: 0,
        iterations: 0,
        input_tokens: 0,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        output_tokens: 0,
        latency_ms: 0,
        wall_ms: 0,
        cost: BTreeMap::new(),
        unpriced_calls: 0,
        started_at_ms: now_ms(),
        ended_at_ms: 0,
        judge_score: None,
        judge_accuracy: None,
        judge_work: None,
        judge_reason: None,
        unjudged: None,
        judge_started_at_ms: None,
        judge_ended_at_ms: None,
        scorer_score: None,
    }
}

/// Fill a row from a landed run and the ledger's totals for its subtree.
fn settle<O>(
    row: &mut RunRow,
    out: &Result<O>,
    ledger: &CostLedger,
    job: JobId,
    evidence: &RunEvidence,
) {
    row.ended_at_ms = now_ms();
    row.wall_ms = u64::try_from(row.ended_at_ms - row.started_at_ms).unwrap_or(0);
    let totals = ledger.subtree(job);
    row.calls = totals.calls;
    row.iterations = evidence.iterations.map_or(totals.calls, u64::from);
    row.input_tokens = totals.input_tokens;
    row.cache_read_tokens = totals.cache_read_tokens;
    row.cache_write_tokens = totals.cache_write_tokens;
    row.output_tokens = totals.output_tokens;
    row.latency_ms = totals.latency_ms;
    row.cost = totals.cost;
    row.unpriced_calls = totals.unpriced_calls;
    match out {
        Ok(_) => row.succeeded = true,
        Err(e) => {
            row.succeeded = false;
            row.error = Some(e.to_string());
        }
    }
}

fn fail_unsubmitted(row: &mut RunRow, e: &Error) {
    row.ended_at_ms = now_ms();
    row.succeeded = false;
    row.error = Some(e.to_string());
}

fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("(not serializable: {e})"))
}
