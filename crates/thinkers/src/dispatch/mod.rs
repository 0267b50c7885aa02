//! The dispatcher: the one door every job goes through.
//!
//! The kernel (the submission door, [`Admission`] against the budgets, the attempt loop) is
//! `thinkers-core`'s, re-exported here whole: it is the only code that makes a
//! [`crate::job::JobContext`] or [`crate::job::Resources`], so neither can be built around it
//! (see [`Dispatcher`] and `tests/compile_fail/`). This module adds what needs the runtime's
//! services: spending caps ([`SpendCaps`]). Budgets shared between processes implement the kernel's
//! [`BudgetStore`] (and [`SpendStore`] for the caps' sums) in their own crate: `thinkers-redis`.

pub(crate) mod spend;

pub use thinkers_core::dispatch::*;

pub use crate::job::{JobHandle, Limits, Rate, Services};
pub use spend::CapOn;
pub use spend::{CapScope, Held, MemorySpend, SpendCap, SpendCaps, SpendStore};
