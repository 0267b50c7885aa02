//! The OpenAI Chat Completions dialect (`POST /v1/chat/completions`): request decoding and
//! checks, the `chat.completion` object, and the `chat.completion.chunk` stream.

mod decode;
mod encode;
mod stream;

pub(crate) use decode::{decode, refused_format, valid_tool_name};
pub(crate) use encode::{Envelope, completion};
pub(crate) use stream::frames;
