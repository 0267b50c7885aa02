//! Conversations: what a thinker says to a model and what the model says back.
//!
//! This module currently holds the provider-agnostic message types ([`Message`],
//! [`ContentBlock`]). They carry everything a turn can contain — text, tool calls and their
//! results, native thinking blocks, images and files — without knowing any provider's wire format;
//! only the `llm` dialects translate them.

pub mod message;

pub use message::{ContentBlock, MediaSource, Message, Role};
