//! The OpenAI Responses dialect (`POST {base}/responses`, catalog `dialect = "openai-responses"`),
//! also served by Azure OpenAI (see `model::catalog::azure`).
//!
//! Split by direction: [`encode`] renders a request body, [`decode`] reads a whole answer,
//! [`stream`] reads the typed server-sent events.
//!
//! The runtime keeps the conversation, so every request is stateless: `store: false`, the whole
//! history as input items (messages, `function_call` items and their `function_call_output`s
//! matched by `call_id`), the system content as `instructions`. A reasoning model's reasoning
//! items come back with `encrypted_content` (asked for with `include`) and must be sent back
//! unchanged on the next turn. They are carried like Anthropic's signed thinking blocks: a
//! [`crate::llm::message::ContentBlock::Thinking`] whose `thinking` is the readable summary and
//! whose `signature` is the reasoning item's JSON exactly as the provider sent it, which the
//! encoder puts back into the input byte for byte ([`reasoning_item`](crate::llm::common::reasoning_item) recognises such a
//! signature, so other dialects never send it to their provider).

pub(crate) mod decode;
pub(crate) mod encode;
pub(crate) mod stream;

#[cfg(test)]
mod tests;
