//! Tests across the dialects: shared fixtures, request validation against the OpenAI
//! specification, and the client against throwaway local HTTP servers.

pub(crate) mod fixtures;

mod client;
mod sizes;
mod spec;
mod transport;
