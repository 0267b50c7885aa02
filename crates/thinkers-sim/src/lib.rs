//! thinkers-sim: a simulated LLM provider.
#![allow(missing_docs)]

pub mod catalog;
pub mod config;
pub mod error;
pub mod fault;
pub mod limits;
pub mod schema;
pub mod script;
pub mod stats;
