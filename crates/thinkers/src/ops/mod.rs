//! Operations: what the recorded history says about sizing, spend and latency.
//!
//! Everything here works on rows already fetched from a store (through
//! the `thinkers-store` crate's `RecordStore`), so the same reports run on SQLite, PostgreSQL
//! or rows held in memory:
//!
//! * [`sizing`] — per job class, how much answer the model calls really produced, which output
//!   rung the class declared, and the rung the history recommends;
//! * [`cost`] — tokens, calls, latency percentiles and spend, grouped by class, catalog entry or
//!   workflow, one row per currency; plus the spend of any job's subtree;
//! * [`caps`] — where each spending cap stands by the recorded costs, and what is left;
//! * [`since`] — the `--since` window (`24h`, `7d`, an RFC 3339 date);
//! * [`trajectory`] — a workflow's jobs as a tree in the order they ran, rendered as text;
//! * [`CostLedger`] — live totals of the model calls of watched workflows, per subtree of jobs,
//!   fed by [`LedgerRecorder`] (every runtime wires one; benchmarks read their rows from it).
//!
//! **API boundary:** no database access here (the ledger keeps rows it is handed); reports are plain data for a caller to render.

pub mod caps;
pub mod cost;
mod ledger;
pub mod since;
pub mod sizing;
mod stats;
pub mod trajectory;

pub use cost::SubtreeCost;
pub use cost::{CostReport, CostRow, GroupBy, Latency, rollup_by_ancestor};
pub use ledger::{CostLedger, LedgerRecorder, LedgerWatch, SubtreeTotals};
pub use since::parse_since;
pub use sizing::{ClassSizing, Declared, SizeChange, SizingReport};
pub use stats::percentile;
pub use trajectory::{Trajectory, TrajectoryEntry};
