//! The spending caps' test runtime and readings, shared by the `thinkers` model tests and the
//! `thinkers-redis` tests of caps kept in Redis.

use std::sync::Arc;

use thinkers::dispatch::{SpendCap, SpendStore};
use thinkers::record::MemoryRecorder;
use thinkers::{Error, Runtime};

use crate::support::{Timeouts, client, quick_retries};

/// Worst case of one `call` on the fault catalog: 4,096 output tokens at 2 per million, plus a
/// few dozen input tokens at 1 per million.
pub(crate) const WORST: f64 = 0.0082;

pub(crate) async fn capped(
    toml: &str,
    caps: Vec<SpendCap>,
    store: Option<Arc<dyn SpendStore>>,
) -> (Runtime, Arc<MemoryRecorder>) {
    let recorder = Arc::new(MemoryRecorder::new());
    let catalog = thinkers::model::Catalog::from_toml_str(toml, "spend.toml").unwrap();
    let mut b = Runtime::builder(catalog)
        .client(client(&Timeouts::default()))
        .config(quick_retries())
        .recorder(recorder.clone());
    for cap in caps {
        b = b.spend_cap(cap);
    }
    if let Some(store) = store {
        b = b.spend_store(store);
    }
    (b.build().await.unwrap(), recorder)
}

/// What the record says was spent on calls to `entry`.
pub(crate) fn spent(recorder: &MemoryRecorder, entry: &str) -> f64 {
    recorder
        .llm_runs()
        .iter()
        .filter(|r| r.entry == entry)
        .map(|r| r.cost.unwrap_or(f64::NAN))
        .sum()
}

pub(crate) fn cap_error(e: &Error) -> (String, f64, f64, f64) {
    match e {
        Error::SpendCapReached {
            cap,
            limit,
            spent,
            needed,
            ..
        } => (cap.clone(), *limit, *spent, *needed),
        other => panic!("expected a spend cap refusal, got {other}"),
    }
}
