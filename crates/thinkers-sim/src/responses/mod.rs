//! The OpenAI Responses dialect (`POST /v1/responses`, and Azure OpenAI's Responses paths):
//! request decoding and checks, the `response` object, and the typed event stream.
//!
//! Errors, status codes and rate-limit headers are OpenAI's (the same as Chat Completions). A
//! reasoning model's answer opens with a `reasoning` item whose `encrypted_content` (when
//! `include` asks for it) is the sim's signature over the item's id and summary: a reasoning
//! item sent back edited, or one the sim did not issue, is refused like the real API refuses an
//! item it cannot find.

mod decode;
mod encode;
mod stream;

pub(crate) use decode::decode;
pub(crate) use encode::{Envelope, whole};
pub(crate) use stream::frames;
