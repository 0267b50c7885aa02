//! The object-safe tool boundary: [`ToolProvider`] and the provider for Rust tool types.

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::ToolSpec;
use super::{Tool, ToolJob};
use crate::job::{BoxJob, Job, JobContext, Requirements, Resources, ScopeGuard};
use crate::{Error, Result};

/// A tool call's result: the JSON the model sees and the typed value for code (artifacts).
#[derive(Clone)]
pub struct ToolOutput {
    /// The output as JSON.
    pub json: Value,
    /// The typed output, for code that knows its type.
    pub typed: Arc<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for ToolOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolOutput")
            .field("json", &self.json)
            .finish_non_exhaustive()
    }
}

impl ToolOutput {
    /// The typed output, if it is a `T`.
    pub fn downcast<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.typed.downcast_ref::<T>()
    }
}

/// Where a tool call is made from: what the provider may inherit from the caller.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ToolCallContext {
    /// The caller's grade, inherited by a model-dependent tool that declares none of its own.
    pub parent_grade: Option<crate::seat::Grade>,
    /// The caller's pin, if the caller is pinned to one catalog entry.
    pub parent_pin: Option<String>,
    /// The caller's depth: a model-dependent tool works at it, lowered to the depth the tool
    /// allows, never raised.
    pub parent_depth: Option<crate::seat::Depth>,
}

impl ToolCallContext {
    /// A context whose caller works at `grade`.
    pub fn with_grade(grade: crate::seat::Grade) -> Self {
        Self {
            parent_grade: Some(grade),
            ..Self::default()
        }
    }

    /// A context whose caller works at `grade`, pinned to `pin` (if any), at `depth` (if known).
    pub fn of_caller(
        grade: crate::seat::Grade,
        pin: Option<String>,
        depth: Option<crate::seat::Depth>,
    ) -> Self {
        Self {
            parent_grade: Some(grade),
            parent_pin: pin,
            parent_depth: depth,
        }
    }
}

/// A source of one tool, at the registry boundary: describes it and turns JSON arguments into a
/// job.
pub trait ToolProvider: Send + Sync + 'static {
    /// The snake_case name.
    fn name(&self) -> &str;
    /// What the tool does.
    fn description(&self) -> &str;
    /// The JSON Schema of the arguments.
    fn input_schema(&self) -> &Value;
    /// The same schema, shared: what a palette puts on every request. The default copies
    /// [`ToolProvider::input_schema`]; a provider that holds its schema in an [`Arc`] hands out
    /// the `Arc`, so rendering a turn copies no schema.
    fn shared_input_schema(&self) -> Arc<Value> {
        Arc::new(self.input_schema().clone())
    }
    /// The palette entry for this tool: name, description and shared schema. The default copies
    /// name and description; a provider whose text is `'static` (or already shared) borrows it,
    /// so a palette rendered every turn allocates nothing for it.
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: Cow::Owned(self.name().to_owned()),
            description: Cow::Owned(self.description().to_owned()),
            parameters: self.shared_input_schema(),
        }
    }
    /// Whether the tool has no side effects. Defaults to `false`: MCP servers and dynamic tools
    /// cannot establish it, so they are never read-only. A wrapping provider forwards it.
    fn read_only(&self) -> bool {
        false
    }
    /// Whether a call repeated with the same idempotency key has no further effect (see
    /// [`super::Tool::idempotent`]). Defaults to `false`; a wrapping provider forwards it.
    fn idempotent(&self) -> bool {
        false
    }
    /// Whether a call with these arguments must wait for a person's approval (see
    /// `thinkers::durable`). Defaults to `false`; a wrapping provider forwards it.
    fn needs_approval(&self, arguments: &Value) -> bool {
        let _ = arguments;
        false
    }
    /// Build the job for one call.
    fn instantiate(&self, arguments: &Value, cx: &ToolCallContext) -> Result<BoxJob<ToolOutput>>;
}

macro_rules! forward_provider {
    ($($ty:ty),*) => {$(
        impl<P: ToolProvider + ?Sized> ToolProvider for $ty {
            fn name(&self) -> &str { (**self).name() }
            fn description(&self) -> &str { (**self).description() }
            fn input_schema(&self) -> &Value { (**self).input_schema() }
            fn shared_input_schema(&self) -> Arc<Value> { (**self).shared_input_schema() }
            fn spec(&self) -> ToolSpec { (**self).spec() }
            fn read_only(&self) -> bool { (**self).read_only() }
            fn idempotent(&self) -> bool { (**self).idempotent() }
            fn needs_approval(&self, arguments: &Value) -> bool { (**self).needs_approval(arguments) }
            fn instantiate(&self, arguments: &Value, cx: &ToolCallContext) -> Result<BoxJob<ToolOutput>> {
                (**self).instantiate(arguments, cx)
            }
        }
    )*};
}
forward_provider!(Box<P>, Arc<P>);

/// The admission check for one tool call, beside argument validation: under a read-only scope a
/// tool that is not read-only is refused, whatever the palette offered. The refusal is correctable
/// (the caller can choose another tool) and names the tool.
pub fn admit_call(provider: &dyn ToolProvider, scope: &ScopeGuard) -> Result<()> {
    admit_tool(provider.name(), provider.read_only(), scope)
}

/// The same check for a call of the tool `name` (read-only or not) made as a job in `scope`:
/// every tool job makes it when it is admitted ([`crate::job::Job::requirements`]), so a
/// read-only flow cannot start a writer whoever submits it (a thinker's call, a doer, code).
pub fn admit_tool(name: &str, read_only: bool, scope: &ScopeGuard) -> Result<()> {
    if scope.is_read_only() && !read_only {
        tracing::warn!(
            tool = name,
            "refused a non-read-only tool under a read-only scope"
        );
        return Err(Error::invalid_input(
            "tool",
            Some(name.to_owned()),
            "this tool has side effects and the current scope is read-only; use a read-only tool",
        ));
    }
    Ok(())
}

/// The provider for a Rust [`Tool`] type (the seed's class-backed provider).
pub struct TypedToolProvider<T: Tool> {
    tool: Arc<T>,
    description: Cow<'static, str>,
    schema: Arc<Value>,
}

impl<T: Tool> std::fmt::Debug for TypedToolProvider<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedToolProvider")
            .field("name", &T::NAME)
            .finish_non_exhaustive()
    }
}

impl<T: Tool> TypedToolProvider<T> {
    /// Wrap a tool. The input schema is generated once per input type and shared.
    pub fn new(tool: T) -> Self {
        let schema = crate::schema::of::<T::Input>();
        Self {
            description: tool.description(),
            tool: Arc::new(tool),
            schema,
        }
    }

    /// The wrapped tool.
    pub fn tool(&self) -> &Arc<T> {
        &self.tool
    }

    /// Decode arguments into the input type, naming the parameter that does not fit.
    pub fn decode(&self, arguments: &Value) -> Result<T::Input> {
        decode_arguments::<T::Input>(arguments)
    }
}

/// Decode tool arguments, refusing a misfit with an error that names the parameter by its
/// declared path and says what the input schema expects there. Nothing the model sent is
/// repeated — neither a value nor a key it invented (see [`crate::schema::words`]); the
/// decoder's own complaint stays on the error's source. A `null` for a property the input type's
/// schema does not require means the property is absent (a model answering in OpenAI strict mode
/// sends `null` for what it leaves out; see [`crate::schema::drop_optional_nulls`]).
#[doc(hidden)]
pub fn decode_arguments<I>(arguments: &Value) -> Result<I>
where
    I: serde::de::DeserializeOwned + schemars::JsonSchema + 'static,
{
    // Absent arguments are the empty object (an empty map does not allocate).
    let empty;
    let arguments = if arguments.is_null() {
        empty = Value::Object(serde_json::Map::new());
        &empty
    } else {
        arguments
    };
    let schema = crate::schema::of::<I>();
    let snapshot = crate::schema::nulls_as_absent(arguments, &schema);
    crate::schema::decode_tracked::<I>(&snapshot).map_err(|e| {
        let misfit = crate::schema::words::SchemaWords::new(&schema).misfit(&e);
        // A parameter is named by its declared path; the arguments as a whole, or an entry of
        // them, under `arguments`.
        let parameter = if misfit.at.is_empty()
            || misfit.at.starts_with('[')
            || misfit.at.starts_with("an entry")
        {
            misfit.name(Some("arguments"))
        } else {
            misfit.at.clone()
        };
        Error::InvalidInput {
            parameter,
            value: None,
            reason: misfit.predicate(),
            source: Some(Box::new(e)),
        }
    })
}

/// A typed tool call erased to a [`ToolOutput`].
struct ErasedToolJob<T: Tool>(ToolJob<T>);

impl<T: Tool> Job for ErasedToolJob<T> {
    type Output = ToolOutput;
    fn class(&self) -> Cow<'static, str> {
        self.0.class()
    }
    fn requirements(&mut self, req: &mut Requirements, cx: &JobContext) -> Result<()> {
        self.0.requirements(req, cx)
    }
    fn timeout(&self) -> Option<std::time::Duration> {
        self.0.timeout()
    }
    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> Result<ToolOutput> {
        let out = self.0.execute(res, cx).await?;
        let json = serde_json::to_value(&out)
            .map_err(|e| Error::system(format!("output of tool {}", T::NAME), e.to_string()))?;
        Ok(ToolOutput {
            json,
            typed: Arc::new(out),
        })
    }
}

impl<T: Tool> ToolProvider for TypedToolProvider<T> {
    fn name(&self) -> &str {
        T::NAME
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn shared_input_schema(&self) -> Arc<Value> {
        Arc::clone(&self.schema)
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: Cow::Borrowed(T::NAME),
            description: self.description.clone(),
            parameters: Arc::clone(&self.schema),
        }
    }
    fn read_only(&self) -> bool {
        self.tool.read_only()
    }
    fn idempotent(&self) -> bool {
        self.tool.idempotent()
    }
    fn needs_approval(&self, arguments: &Value) -> bool {
        // Arguments that do not decode are refused by `instantiate` before anything runs.
        self.decode(arguments)
            .is_ok_and(|input| self.tool.needs_approval(&input))
    }
    fn instantiate(&self, arguments: &Value, _cx: &ToolCallContext) -> Result<BoxJob<ToolOutput>> {
        let input = self.decode(arguments)?;
        Ok(BoxJob::new(ErasedToolJob(ToolJob::new(
            self.tool.clone(),
            input,
        ))))
    }
}
