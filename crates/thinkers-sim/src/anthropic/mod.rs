//! The Anthropic Messages dialect (`POST /v1/messages`): request decoding and checks (thinking
//! signatures included), the `message` object, and the event stream.

mod decode;
mod encode;
mod stream;

pub(crate) use decode::{decode, text_of};
pub(crate) use encode::{Envelope, message};
pub(crate) use stream::frames;
