//! # thinkers
//!
//! A runtime for LLM-driven software built from three kinds of job:
//!
//! * **tools** — typed input, typed output; may hold resources such as a model seat
//!   ([`tool`](mod@tool));
//! * **doers** — coded orchestration: Rust code that submits jobs, waits, branches and loops
//!   ([`job::Doer`]);
//! * **thinkers** — model-driven orchestration: a model, an objective and a palette of tools,
//!   run in a loop until it gives a typed answer ([`thinker`]).
//!
//! All of them run under one [`Dispatcher`], which admits work against real provider limits
//! ([`dispatch::Admission`]), retries what is retryable, records every job ([`record`]) and
//! carries scope — identity axes and the read-only binding — from parent to child
//! ([`job::ScopeGuard`]).
//!
//! Every job attempt and every model call is a tracing span ([`telemetry`]; exported over OTLP
//! with the `otel` feature), and the recorded history answers operational questions
//! ([`ops`]): which output size each job class should declare, and what each class, entry or
//! workflow spent.
//!
//! Built-in service tools (`web_fetch`, `pubmed_fetch`, `epo_claims`) are the `thinkers-tools`
//! crate; the `thinkers-mcp` crate makes the tools of any MCP server tool providers. A
//! deployment's tools and skills can be gathered in a [`hub::ToolHub`], from which thinkers discover tools
//! (`request_tools`), load skills (`request_skill`) and delegate (`sub_thinker`).
//!
//! ## A first doer
//!
//! ```no_run
//! use thinkers::prelude::*;
//!
//! # async fn demo() -> thinkers::Result<()> {
//! let dispatcher = Dispatcher::builder().build();
//! let total = dispatcher
//!     .run(doer("sum", |cx| async move {
//!         let a = cx.submit(doer("one", |_| async { Ok(1) })).await?;
//!         let b = cx.submit(doer("two", |_| async { Ok(2) })).await?;
//!         Ok(a + b)
//!     }))
//!     .await?;
//! assert_eq!(total, 3);
//! # Ok(()) }
//! ```
//!
//! ## Feature flags
//!
//! * `test-utils` — test doubles for downstream tests ([`thinker::ScriptedTurns`]; with `otel`,
//!   the SDK's in-memory span exporter).
//! * `otel` — export the runtime's spans over OTLP ([`telemetry::otel`]).
//! * `full` — everything.
//!
//! The durable record (SQLite or PostgreSQL, through sqlx) is the `thinkers-store` crate: its
//! `RuntimeBuilderExt::database` gives a [`Runtime`] a store. Admission budgets and spending caps
//! shared across processes through Redis are the `thinkers-redis` crate.

// Every public item of the library carries rustdoc: the workspace warns, the library refuses.
#![deny(missing_docs)]

pub mod benchmark;
pub mod conversation;
pub mod dispatch;
pub mod durable;
pub mod hub;
pub mod llm;
pub mod model;
pub mod onecall;
pub mod ops;
pub mod runtime;
pub mod telemetry;
pub mod thinker;

/// The job and tool contracts, errors, scope and the record rows, from the `thinkers-core` crate
/// (which depends on no HTTP, SQL or server crate): their paths here are the ones to use.
pub use thinkers_core::{error, job, record, tool};
pub(crate) use thinkers_core::{schema, seat};

#[cfg(test)]
mod tool_null_tests;

pub use dispatch::{Dispatcher, JobHandle};
/// `#[thinkers::tool]`: a tool written as an `async fn` (see [`tool`](mod@tool) for the trait it
/// implements). The doc comment is the description, the parameters are the input schema.
pub use thinkers_macros::tool;

/// What `#[thinkers::tool]` expands to refers to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use schemars;
    pub use serde;
}
pub use error::{Error, ErrorKind, PendingCall, Result, RetrySignal};
pub use runtime::{Runtime, RuntimeBuilder};
pub use thinker::Thinker;

/// The names most programs need.
pub mod prelude {
    pub use crate::dispatch::{Dispatcher, JobHandle, Limits, Rate};
    pub use crate::error::{Error, Result};
    pub use crate::job::{
        Doer, Job, JobContext, Orchestrator, Requirements, Resources, ScopeGuard, doer,
    };
    pub use crate::model::{Catalog, Depth, Grade, ModelDependent, OutputSize};
    pub use crate::runtime::Runtime;
    pub use crate::thinker::{
        ArtifactRef, ContentStream, ContentStreamEvent, DoerToolExt, Thinker, ThinkerDeclaration,
        ThinkerInput, ThinkerOutput, Verdict,
    };
}
