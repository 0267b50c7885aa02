//! A runtime keeping its record in a real store: durable thinkers (journaled effects, approvals,
//! resume by id in a second process), the record a dropped runtime leaves, no API key in any
//! stored row, and the approval example.
//!
//! One test binary of topic modules, so it links once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod approval;
mod approval_example;
mod effects;
mod lifecycle;
mod resume;
mod secrets;

/// The tools of the `thinkers` tests (a glossary lookup and a delete), shared rather than copied.
#[path = "../../../thinkers/tests/common/glossary.rs"]
mod glossary;
/// The fault sims, runtimes and log capture of the `thinkers` model tests.
#[allow(dead_code)]
#[path = "../../../thinkers/tests/models/support.rs"]
mod support;
