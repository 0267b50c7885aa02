//! The loopless thinker families over real HTTP against thinkers-sim: `ToollessThinker` (one
//! call per candidate answer, guardrail corrections, no tools) and `DecisionThinker` (a choice or
//! ranking among options, confidences from log-probabilities), plus snapshots of their request
//! bodies, which carry no tool definitions; and the canary matrix of every family that refuses
//! what a model sent (`canaries`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod canaries;
mod decision;
mod support;
mod toolless;
mod wire;
