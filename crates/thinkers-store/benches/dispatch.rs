//! Dispatcher overhead: CPU time per no-op job (submit to completion) with 1 and with 10,000 jobs
//! in flight, with the recorder off and with the SQLite recorder on, and memory per pending job.
//!
//! Run with `cargo bench -p thinkers-store --bench dispatch`. Figures are printed; the targets are
//! under 10 µs CPU per no-op job with the recorder off, under 50 µs with it on, and under 4 KiB
//! per pending job.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::Instant;

use cpu_time::ProcessTime;
use thinkers::Dispatcher;
use thinkers::dispatch::Limits;
use thinkers::job::{Job, JobContext, Requirements, Resources};
use thinkers::record::{NoopRecorder, Recorder};

struct Noop;
impl Job for Noop {
    type Output = ();
    fn class(&self) -> std::borrow::Cow<'static, str> {
        "noop".into()
    }
    async fn execute(&mut self, _: &Resources, _: &JobContext) -> thinkers::Result<()> {
        Ok(())
    }
}

/// A job that waits for a slot of a budget that is full, so it stays pending.
struct Pending;
impl Job for Pending {
    type Output = ();
    fn class(&self) -> std::borrow::Cow<'static, str> {
        "pending".into()
    }
    fn requirements(&mut self, req: &mut Requirements, _: &JobContext) -> thinkers::Result<()> {
        req.resource("service:gate", None);
        Ok(())
    }
    async fn execute(&mut self, _: &Resources, _: &JobContext) -> thinkers::Result<()> {
        Ok(())
    }
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

async fn sequential(d: &Dispatcher, n: usize) -> f64 {
    let cpu = ProcessTime::now();
    for _ in 0..n {
        d.run(Noop).await.unwrap();
    }
    d.recorder().flush().await.unwrap();
    cpu.elapsed().as_secs_f64() * 1e6 / n as f64
}

async fn in_flight(d: &Dispatcher, batch: usize, rounds: usize) -> f64 {
    let cpu = ProcessTime::now();
    for _ in 0..rounds {
        let handles: Vec<_> = (0..batch).map(|_| d.submit(Noop)).collect();
        for h in handles {
            h.await.unwrap();
        }
    }
    d.recorder().flush().await.unwrap();
    cpu.elapsed().as_secs_f64() * 1e6 / (batch * rounds) as f64
}

async fn pending_memory(n: usize) -> f64 {
    let d = Dispatcher::builder()
        .budget(
            "service:gate",
            Limits {
                concurrency: Some(1),
                ..Limits::default()
            },
        )
        .build();
    // Hold the only slot so every other job stays pending in admission.
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let holder = d.submit(Holder(Some(rx)));
    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    let before = rss_bytes();
    let handles: Vec<_> = (0..n).map(|_| d.submit(Pending)).collect();
    // Let every job reach its admission wait.
    for _ in 0..20 {
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let after = rss_bytes();
    drop(tx);
    holder.await.unwrap();
    for h in handles {
        h.await.unwrap();
    }
    (after.saturating_sub(before)) as f64 / n as f64
}

/// Holds the gate's only slot until told to let go.
struct Holder(Option<tokio::sync::oneshot::Receiver<()>>);
impl Job for Holder {
    type Output = ();
    fn class(&self) -> std::borrow::Cow<'static, str> {
        "holder".into()
    }
    fn requirements(&mut self, req: &mut Requirements, _: &JobContext) -> thinkers::Result<()> {
        req.resource("service:gate", None);
        Ok(())
    }
    async fn execute(&mut self, _: &Resources, _: &JobContext) -> thinkers::Result<()> {
        if let Some(rx) = self.0.take() {
            let _ = rx.await;
        }
        Ok(())
    }
}

fn dispatcher(recorder: Arc<dyn Recorder>) -> Dispatcher {
    Dispatcher::builder().recorder(recorder).build()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let wall = Instant::now();
        println!("dispatcher overhead (CPU µs per no-op job, submit to completion)");
        println!(
            "{:<34} {:>12} {:>16}",
            "recorder", "1 in flight", "10,000 in flight"
        );
        let off = dispatcher(Arc::new(NoopRecorder));
        // Warm up.
        sequential(&off, 2_000).await;
        let seq_off = sequential(&off, 20_000).await;
        let par_off = in_flight(&off, 10_000, 5).await;
        println!("{:<34} {:>12.2} {:>16.2}", "off", seq_off, par_off);
        for (name, rec) in sqlite_recorders().await {
            let on = dispatcher(rec);
            let seq_on = sequential(&on, 20_000).await;
            let par_on = in_flight(&on, 10_000, 5).await;
            println!("{name:<34} {seq_on:>12.2} {par_on:>16.2}");
        }
        let per_pending = pending_memory(100_000).await;
        println!("memory per pending job (100,000 waiting in admission): {per_pending:.0} bytes");
        println!("targets: < 10 µs off, < 50 µs on, < 4096 bytes per pending job");
        println!("wall time {:.1} s", wall.elapsed().as_secs_f64());
    });
}

async fn sqlite_recorders() -> Vec<(&'static str, Arc<dyn Recorder>)> {
    let dir = std::env::temp_dir().join(format!("thinkers-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("bench.db");
    let store = thinkers_store::SqliteStore::open(&path.to_string_lossy())
        .await
        .unwrap();
    let rec = thinkers_store::SqliteRecorder::new(&store).unwrap();
    vec![("sqlite (batched, flushed at the end)", Arc::new(rec))]
}
