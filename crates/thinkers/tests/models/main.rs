//! Models and providers end to end: `LlmCall` through the dispatcher over real HTTP against
//! thinkers-sim, for both dialects and the text-tool fallback, with every fault mapped.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod calls;
mod faults;
mod support;
