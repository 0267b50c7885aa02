//! Chat hosting: [`host::ChatHost`] exposes [`crate::thinker::ChatThinker`]s over HTTP — a JSON
//! API, server-sent events for each chat's turns, and a web page — with the chat list kept in
//! the runtime's database (SQLite, or PostgreSQL shared by several hosts) so chats survive a
//! restart. Behind the `chat-host` feature.

pub mod host;

pub use host::{
    ChatFactory, ChatHistory, ChatHost, DecisionHook, HostConfig, HostToken, RunningHost,
    TOKEN_COOKIE,
};
