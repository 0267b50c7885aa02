//! One-call model tools end to end.
//!
//! * `protocol` — the correction protocol through the test seam (no transport): the correction
//!   turn's content, the same instance re-run, the bound and what comes back past it, retry
//!   signals through the broad catch, truncation escalation, the builder variant;
//! * `wire` — the same over real HTTP against thinkers-sim, with injected faults;
//! * `seats` — the reservation against the exact bytes on the wire, grade and pin inheritance,
//!   pins and the envelope, the LLM-run records;
//! * `tools` — the three built-in tools.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod protocol;
mod seats;
mod support;
mod tools;
mod wire;
