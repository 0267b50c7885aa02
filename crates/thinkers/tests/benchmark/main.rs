//! Benchmarks through the dispatcher against thinkers-sim: a job raced across its grade, the
//! blind judge (checked on the bodies the sim received, self-names included), judging that
//! overlaps the race, the failure rows and costs of a thinker's children landing on its row.
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
mod race;
mod support;
mod thinker;
