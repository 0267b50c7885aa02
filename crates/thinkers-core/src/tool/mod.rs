//! Tools: typed jobs a model (or code) can call by name.
//!
//! Authors implement [`Tool`]: a snake_case name, a description, an input type whose JSON Schema
//! the model sees, an output type, and whether the tool is read-only. At the registry boundary a
//! tool is an object-safe [`ToolProvider`], which turns a model's JSON arguments into a job. The
//! provider for a Rust tool type is [`TypedToolProvider`]; MCP servers and dynamic tools implement
//! [`ToolProvider`] directly.
//!
//! **Read-only.** [`ToolProvider::read_only`] defaults to `false`: nothing is assumed read-only
//! unless it says so. A provider that wraps another must forward the flag (the blanket impls for
//! `&P`, `Box<P>` and `Arc<P>` do); [`admit_call`] is the check that refuses a non-read-only tool
//! under a read-only scope, whatever a palette says.
//!
//! **Arguments.** Arguments that do not fit the input type are refused with
//! [`crate::Error::InvalidInput`] naming the parameter by its path in the schema (`query`,
//! `filters.year`, `ids[2]`) and what is wrong, never with a panic.

mod provider;
mod registry;
mod spec;

#[doc(hidden)]
pub use provider::decode_arguments;
pub use provider::{
    ToolCallContext, ToolOutput, ToolProvider, TypedToolProvider, admit_call, admit_tool,
};
pub use registry::ToolRegistry;
pub use spec::ToolSpec;

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Result;
use crate::job::{Job, JobContext, Requirements, Resources};

/// A typed tool.
pub trait Tool: Send + Sync + 'static {
    /// The snake_case name the model calls the tool by.
    const NAME: &'static str;
    /// The input; its JSON Schema is what the model sees.
    type Input: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// The output, serialised back to the model.
    type Output: Serialize + JsonSchema + Send + Sync + 'static;

    /// What the tool does, for the model.
    fn description(&self) -> Cow<'static, str>;

    /// Whether the tool has no side effects. Defaults to `false`.
    fn read_only(&self) -> bool {
        false
    }

    /// Whether running a call again with the same [`ToolContext::idempotency_key`] has no
    /// further effect (the service it calls takes the key and answers a repeat with the first
    /// result). Defaults to `false`. A durable run whose process died while a call of this tool
    /// was in flight runs the call again with the same key when the tool says `true`; otherwise
    /// the call's outcome is unknown and the run waits for a person to decide (see
    /// `thinkers::durable`).
    fn idempotent(&self) -> bool {
        false
    }

    /// Whether this call must wait for a person's approval before it runs (see
    /// `thinkers::durable`). Defaults to `false`; the answer may depend on the arguments (a refund
    /// above some amount, a mail to someone outside the company).
    fn needs_approval(&self, input: &Self::Input) -> bool {
        let _ = input;
        false
    }

    /// What a call needs admitted (for example a slot of `service:pubmed`).
    fn requirements(&self, input: &Self::Input, req: &mut Requirements) -> Result<()> {
        let _ = (input, req);
        Ok(())
    }

    /// A bound on one attempt of a call.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Run the tool.
    fn call(
        &self,
        input: &Self::Input,
        cx: &ToolContext<'_>,
    ) -> impl Future<Output = Result<Self::Output>> + Send;
}

/// What a tool call runs with.
#[derive(Debug, Clone, Copy)]
pub struct ToolContext<'a> {
    /// The job context of the call (lineage, scope, services, child submission).
    pub job: &'a JobContext,
    /// The resources admitted for this attempt.
    pub resources: &'a Resources,
}

/// The metadata key under which the runtime publishes a tool call's idempotency key on the
/// call's job (see [`ToolContext::idempotency_key`]).
pub const META_IDEMPOTENCY_KEY: &str = "idempotency_key";

impl ToolContext<'_> {
    /// A key that names this effect: the same on every attempt and every replay of the call (it
    /// is derived from the run, the call's place in it and the call's id), different for every
    /// other call. Hand it to a service that takes one (payment and mail APIs do), so a repeat
    /// of the call is answered, not done again.
    ///
    /// `Some` for every call a thinker makes; `None` for a tool job code submitted directly,
    /// unless that code published one under [`META_IDEMPOTENCY_KEY`].
    pub fn idempotency_key(&self) -> Option<String> {
        match self.job.metadata(META_IDEMPOTENCY_KEY)? {
            serde_json::Value::String(key) => Some(key),
            _ => None,
        }
    }
}

/// One call of a [`Tool`] as a job.
pub struct ToolJob<T: Tool> {
    tool: Arc<T>,
    input: T::Input,
}

impl<T: Tool> std::fmt::Debug for ToolJob<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolJob")
            .field("tool", &T::NAME)
            .finish_non_exhaustive()
    }
}

impl<T: Tool> ToolJob<T> {
    /// A call of `tool` with `input`.
    pub fn new(tool: Arc<T>, input: T::Input) -> Self {
        Self { tool, input }
    }
}

impl<T: Tool> Job for ToolJob<T> {
    type Output = T::Output;

    fn class(&self) -> Cow<'static, str> {
        Cow::Borrowed(T::NAME)
    }

    /// Refused under a read-only scope unless the tool is read-only ([`admit_tool`]).
    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()> {
        admit_tool(T::NAME, self.tool.read_only(), cx.scope())?;
        self.tool.requirements(&self.input, req)
    }

    fn timeout(&self) -> Option<Duration> {
        self.tool.timeout()
    }

    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> Result<T::Output> {
        let tcx = ToolContext {
            job: cx,
            resources: res,
        };
        self.tool.call(&self.input, &tcx).await
    }
}

/// Whether `name` is snake_case (lowercase ASCII letters, digits and underscores, starting with a
/// letter), the spelling tool names have on the wire.
pub fn is_snake_case(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}
