//! Chats: the reactive loop driven by scripted turns (messages read at the next step, a closed
//! turn refusing messages, the per-message tool budget and its forced answer, rollback with a
//! marker the next turn reads, depth) and `ChatThinker` over real HTTP against thinkers-sim
//! (answers streamed token by token in both dialects, durable conversations, a provider
//! failure rolled back).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unreachable_pub
)]

mod e2e;
mod reactive;
mod support;
