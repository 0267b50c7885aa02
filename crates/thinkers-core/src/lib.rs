//! # thinkers-core
//!
//! The contracts of the thinkers runtime, with nothing that talks to a network or a database:
//!
//! * [`job`]: the [`job::Job`] and [`job::Orchestrator`] contracts, the [`job::JobContext`] a
//!   job runs in (lineage, scope, step ordinals, metadata), what a job asks admission for
//!   ([`job::Requirements`], [`job::Limits`]) and what it is granted ([`job::Resources`] around
//!   admission's [`dispatch::Permit`]);
//! * [`dispatch`]: the dispatcher's kernel, the only maker of contexts and resources: the
//!   submission door, admission against the budgets ([`dispatch::BudgetStore`], in process
//!   [`dispatch::MemoryBudgets`]) and the attempt loop;
//! * [`tool`]: typed tools and tool providers;
//! * [`error`]: the error hierarchy every job and tool reports in;
//! * [`record`]: the rows the runtime records (jobs, model calls) and the [`record::Recorder`]
//!   seam;
//! * [`seat`]: the vocabulary of a model seat (grade, depth, output size).
//!
//! The rest of the runtime (model clients, thinkers, stores, budgets shared through Redis) is the
//! `thinkers` crate, which re-exports all of this under the same paths; use it through
//! `thinkers::prelude`.

// Every public item of the library carries rustdoc: the workspace warns, the library refuses.
#![deny(missing_docs)]

/// The dispatcher's kernel: the submission door, admission and the attempt loop. Defined beside
/// the job contract (it alone makes a [`job::JobContext`] or [`job::Resources`]); see
/// [`Dispatcher`](dispatch::Dispatcher).
pub mod dispatch {
    pub use crate::job::kernel::*;
}
pub mod error;
mod id;
pub mod job;
pub mod record;
#[doc(hidden)]
pub mod schema;
pub mod seat;
pub mod tool;

pub use error::{Error, ErrorKind, PendingCall, Result, RetrySignal};
