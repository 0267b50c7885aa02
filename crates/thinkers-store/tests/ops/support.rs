//! A temporary store and model-call rows to seed it with.

use anyhow::{Context as _, Result};
use tempfile::TempDir;
use thinkers::job::JobId;
use thinkers::record::{LlmRun, Recorder as _};
use thinkers_store::{SqliteRecorder, SqliteStore};

/// A SQLite file in a temporary directory, with a recorder writing to it.
pub struct TempStore {
    pub store: SqliteStore,
    pub recorder: SqliteRecorder,
    _dir: TempDir,
}

impl TempStore {
    pub async fn new() -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("ops.db");
        let store = SqliteStore::open(path.to_str().context("utf-8 temp path")?).await?;
        let recorder = SqliteRecorder::new(&store)?;
        Ok(Self {
            store,
            recorder,
            _dir: dir,
        })
    }

    /// Queue `rows` through the recorder and wait until they are stored.
    pub async fn record(&self, rows: impl IntoIterator<Item = LlmRun>) -> Result<()> {
        for row in rows {
            self.recorder.llm_run(row);
        }
        self.recorder.flush().await?;
        Ok(())
    }
}

/// One model call of `class` on `entry` that produced `output` of a `budget`.
pub fn call(class: &str, entry: &str, output: u64, budget: u64, at_ms: i64) -> LlmRun {
    let workflow = JobId::new();
    LlmRun {
        job: workflow,
        workflow,
        class: class.to_owned(),
        entry: entry.to_owned(),
        model: format!("{entry}-model"),
        input_tokens: 2_000,
        output_tokens: output,
        reasoning_tokens: 0,
        cached_tokens: 500,
        cache_write_tokens: 0,
        output_budget: budget,
        latency_ms: 400 + output / 10,
        stop_reason: "end_turn".to_owned(),
        cost: Some(0.001),
        currency: "USD".to_owned(),
        at_ms,
        escalated: false,
    }
}
