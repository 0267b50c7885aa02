//! Conversation store figures on a SQLite file: append-and-save throughput (one message per
//! save, and a ten-message turn per save), the time to load a 1,000-message conversation, and
//! the time of a full rewrite of it.
//!
//! Run with `cargo bench -p thinkers-store --bench conversation`. Figures are printed.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use thinkers::conversation::{ContentBlock, ConversationService, Message, Objective, Stamps};
use thinkers::model::{Depth, Grade, OutputSize};
use thinkers_store::{SqliteConversationStore, SqliteStore};

const MESSAGES: usize = 1_000;
const LOADS: usize = 20;

/// A realistic mix: questions, answers, and every fifth message a tool round.
fn message(i: usize) -> Message {
    let prose = "The quarterly ledger shows a steady rise in north-region revenue, with two \
                 outliers worth a closer look before the report goes out. ";
    match i % 5 {
        0 => Message::user_text(format!("Question {i}: {prose}")),
        1 => Message::assistant(vec![
            ContentBlock::Thinking {
                thinking: format!("Turn {i}: look it up. {prose}"),
                signature: "EqQBCkYIBxgCKkDq+/Zz0u9Hk3+Q1rJ0y5v/8mX2T+AbC4dEfGhIjKlMnOpQ==".into(),
            },
            ContentBlock::tool_call(
                format!("call_{i}"),
                "search",
                json!({"q": "ledger", "n": i}),
            ),
        ]),
        2 => Message::tool_results(vec![ContentBlock::tool_result(
            format!("call_{}", i - 1),
            "search",
            prose.repeat(3),
        )]),
        _ => Message::assistant_text(format!("Answer {i}: {prose}")),
    }
}

fn stamps() -> Stamps {
    Stamps::new(Grade::Medium, Depth::Standard, OutputSize::Standard)
}

async fn run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench.db");
    let store = SqliteStore::open(path.to_str().unwrap()).await.unwrap();
    let svc = ConversationService::new(Arc::new(SqliteConversationStore::new(&store)));

    // One message per save.
    let mut c = svc.obtain_new(stamps(), true);
    c.objective_mut()
        .put(Objective::TASK, "Review the ledger and report outliers.");
    svc.save(&mut c).await.unwrap();
    let started = Instant::now();
    for i in 0..MESSAGES {
        c.push(message(i));
        svc.save(&mut c).await.unwrap();
    }
    let single = started.elapsed();
    println!(
        "append-and-save, 1 message per save:   {:>8.0} messages/s  ({:.1} µs per save, {MESSAGES} saves)",
        MESSAGES as f64 / single.as_secs_f64(),
        single.as_secs_f64() * 1e6 / MESSAGES as f64,
    );

    // A ten-message turn per save.
    let mut turns = svc.obtain_new(stamps(), true);
    svc.save(&mut turns).await.unwrap();
    let started = Instant::now();
    for turn in 0..MESSAGES / 10 {
        turns.extend((0..10).map(|k| message(turn * 10 + k)));
        svc.save(&mut turns).await.unwrap();
    }
    let batched = started.elapsed();
    println!(
        "append-and-save, 10 messages per save: {:>8.0} messages/s  ({:.1} µs per save)",
        MESSAGES as f64 / batched.as_secs_f64(),
        batched.as_secs_f64() * 1e6 / (MESSAGES / 10) as f64,
    );

    // Loading the 1,000-message conversation.
    let mut times = Vec::with_capacity(LOADS);
    for _ in 0..LOADS {
        let started = Instant::now();
        let back = svc.resume(c.id()).await.unwrap();
        times.push(started.elapsed());
        assert_eq!(back.messages().len(), MESSAGES);
    }
    times.sort();
    let mean = times.iter().sum::<Duration>() / LOADS as u32;
    println!(
        "load of a {MESSAGES}-message conversation:   mean {:.2} ms, min {:.2} ms, max {:.2} ms ({LOADS} loads)",
        mean.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[LOADS - 1].as_secs_f64() * 1e3,
    );

    // A full rewrite (what a compaction or an in-place edit costs).
    let started = Instant::now();
    let _ = c.messages_mut();
    svc.save(&mut c).await.unwrap();
    println!(
        "full rewrite of {MESSAGES} messages:          {:.2} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        + std::fs::metadata(path.with_extension("db-wal"))
            .map(|m| m.len())
            .unwrap_or(0);
    println!(
        "database + WAL size:                    {:.1} MiB",
        bytes as f64 / (1024.0 * 1024.0)
    );
    store.close().await;
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run());
}
