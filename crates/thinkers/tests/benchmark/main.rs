//! Benchmarks through the dispatcher against thinkers-sim: a job raced across its grade, the
//! blind judge (checked on the bodies the sim received, self-names included), judging that
//! overlaps the race, the failure rows, costs of a thinker's children landing on its row, and
//! every family (toolless, decision, chat turn) as a subject.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

#[path = "../common/offline.rs"]
mod offline;

mod blind;
mod failures;
mod families;
mod race;
mod support;
mod thinker;
