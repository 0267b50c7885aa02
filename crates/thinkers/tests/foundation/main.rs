//! Foundation tests: the job contract, the dispatcher (admission, retries, cancellation, timeouts,
//! panics), scope propagation, recording, tools and the error contract.
//!
//! One test binary of topic modules, so it links once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod admission;
mod errors;
mod lifecycle;
mod ordinals;
mod retries;
mod scope;
mod support;
mod tool_macro;
mod tools;
