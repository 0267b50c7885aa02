//! The service tools against loopback fakes of their services: the failure contract (which error
//! names what, which failure is retried), PubMed's and EPO's parsers and budgets, and
//! `web_fetch`'s address guard over IPv4 and IPv6.
//!
//! One test binary of topic modules, so it links once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod contract;
mod epo;
mod fakes;
mod nulls;
mod pubmed;
mod support;
mod web_fetch;
mod web_fetch_ipv6;
