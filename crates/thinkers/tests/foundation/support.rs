//! Jobs and helpers shared by the foundation tests.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use thinkers::dispatch::Limits;
use thinkers::job::{Job, JobContext, Requirements, Resources, Seat};
use thinkers::record::MemoryRecorder;
use thinkers::{Dispatcher, Error, Result};

/// A dispatcher with a memory recorder.
pub fn dispatcher() -> (Dispatcher, MemoryRecorder) {
    let rec = MemoryRecorder::new();
    let d = Dispatcher::builder()
        .recorder(Arc::new(rec.clone()))
        .build();
    (d, rec)
}

/// A dispatcher with one configured budget.
pub fn dispatcher_with(budget: &str, limits: Limits) -> (Dispatcher, MemoryRecorder) {
    let rec = MemoryRecorder::new();
    let d = Dispatcher::builder()
        .recorder(Arc::new(rec.clone()))
        .budget(budget, limits)
        .build();
    (d, rec)
}

/// A job that asks for a model seat of `reserve` tokens, holds it for `hold`, and reports `used`.
pub struct SeatJob {
    pub budget: String,
    pub reserve: u64,
    pub used: Option<u64>,
    pub hold: Duration,
    pub on_grant: Option<Arc<dyn Fn(u64) + Send + Sync>>,
}

impl SeatJob {
    pub fn new(budget: &str, reserve: u64) -> Self {
        Self {
            budget: budget.to_owned(),
            reserve,
            used: None,
            hold: Duration::ZERO,
            on_grant: None,
        }
    }
}

impl Job for SeatJob {
    type Output = tokio::time::Instant;
    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed("seat_job")
    }
    fn requirements(&mut self, req: &mut Requirements, _cx: &JobContext) -> Result<()> {
        req.seat(Seat {
            entry: "e".into(),
            budget: self.budget.as_str().into(),
            input_tokens: self.reserve,
            output_tokens: 0,
            reasoning_tokens: 0,
        });
        Ok(())
    }
    async fn execute(&mut self, res: &Resources, _cx: &JobContext) -> Result<tokio::time::Instant> {
        let at = tokio::time::Instant::now();
        if let Some(f) = &self.on_grant {
            f(self.used.unwrap_or(self.reserve));
        }
        tokio::time::sleep(self.hold).await;
        if let Some(u) = self.used {
            res.report_seat_usage(thinkers::job::SeatUse {
                input: u,
                output: 0,
            });
        }
        Ok(at)
    }
}

/// A job that emits the given errors on its first runs, then succeeds with the number of runs.
/// Its run counter lives on the instance, so the count proves the same instance was re-run.
pub struct Scripted {
    pub script: Vec<Error>,
    pub runs: u32,
    pub observed: Arc<AtomicU32>,
    pub max_corrections: u32,
}

impl Scripted {
    pub fn new(script: Vec<Error>) -> (Self, Arc<AtomicU32>) {
        let observed = Arc::new(AtomicU32::new(0));
        (
            Self {
                script,
                runs: 0,
                observed: observed.clone(),
                max_corrections: 3,
            },
            observed,
        )
    }
}

impl Job for Scripted {
    type Output = u32;
    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed("scripted")
    }
    fn max_corrections(&self) -> u32 {
        self.max_corrections
    }
    async fn execute(&mut self, res: &Resources, _cx: &JobContext) -> Result<u32> {
        self.runs += 1;
        self.observed.store(self.runs, Ordering::SeqCst);
        assert_eq!(
            res.attempt().number,
            self.runs,
            "attempt number tracks runs"
        );
        if self.script.is_empty() {
            Ok(self.runs)
        } else {
            Err(self.script.remove(0))
        }
    }
}
