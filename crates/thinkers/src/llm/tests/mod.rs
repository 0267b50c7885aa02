//! Tests across the dialects: shared fixtures, request validation against the OpenAI
//! specification, what OpenAI-compatible servers are sent, and the client against throwaway
//! local HTTP servers.

pub(crate) mod fixtures;

mod client;
mod client_waits;
mod compat;
mod prompt_cache;
mod sizes;
mod spec;
mod transport;
