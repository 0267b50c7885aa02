//! [`ModelToolProvider`]: a [`ModelTool`] at the registry boundary.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use super::seam::{Answerer, ExchangeHook};
use super::{AnswerShape, ModelTool, ModelToolJob};
use crate::job::{BoxJob, Job, JobContext, Requirements, Resources};
use crate::model::ModelDependent;
use crate::tool::{ToolCallContext, ToolOutput, ToolProvider, decode_arguments};
use crate::{Error, Result};

/// Offers a [`ModelTool`] to callers (a thinker's palette, a registry): describes it, decodes a
/// model's arguments into its input, and creates a [`ModelToolJob`] that inherits the caller's
/// grade (when the tool declares none) and pin (when the provider sets none).
///
/// Read-only is the tool's own [`ModelTool::read_only`], `false` unless it says so.
pub struct ModelToolProvider<T: ModelTool> {
    tool: Arc<T>,
    description: Cow<'static, str>,
    input_schema: Arc<Value>,
    shape: Arc<AnswerShape>,
    pin: Option<String>,
    answerer: Option<Arc<dyn Answerer>>,
    hook: Option<ExchangeHook>,
}

impl<T: ModelTool> std::fmt::Debug for ModelToolProvider<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelToolProvider")
            .field("name", &T::NAME)
            .field("pin", &self.pin)
            .finish_non_exhaustive()
    }
}

impl<T: ModelTool> ModelToolProvider<T> {
    /// Offer `tool`. The input schema and the answer shape are generated once here.
    pub fn new(tool: T) -> Self {
        Self {
            description: tool.description(),
            input_schema: crate::schema::of::<T::Input>(),
            shape: Arc::new(AnswerShape::of::<T::Output>()),
            tool: Arc::new(tool),
            pin: None,
            answerer: None,
            hook: None,
        }
    }

    /// Pin every call this provider creates to one catalog entry (a caller's pin is then
    /// ignored).
    #[must_use]
    pub fn pinned(mut self, entry: impl Into<String>) -> Self {
        self.pin = Some(entry.into());
        self
    }

    /// Answer every call through `answerer` (the test seam; see [`Answerer`]).
    #[must_use]
    pub fn answer_with(mut self, answerer: Arc<dyn Answerer>) -> Self {
        self.answerer = Some(answerer);
        self
    }

    /// Report every exchange of every call to `hook`.
    #[must_use]
    pub fn on_exchange(mut self, hook: ExchangeHook) -> Self {
        self.hook = Some(hook);
        self
    }

    /// The tool.
    pub fn tool(&self) -> &Arc<T> {
        &self.tool
    }

    /// The answer shape (the output type's schema and name).
    pub fn shape(&self) -> &Arc<AnswerShape> {
        &self.shape
    }

    /// The typed job for one call with an already decoded input.
    pub(crate) fn job(&self, input: T::Input, cx: &ToolCallContext) -> Result<ModelToolJob<T>> {
        let mut job = ModelToolJob::assemble(self.tool.clone(), input, cx, self.shape.clone())?;
        if let Some(pin) = &self.pin {
            job.pin_model(pin.clone());
        }
        if let Some(a) = &self.answerer {
            job = job.answer_with(a.clone());
        }
        if let Some(h) = &self.hook {
            job = job.on_exchange(h.clone());
        }
        Ok(job)
    }
}

impl<T: ModelTool> ToolProvider for ModelToolProvider<T> {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    fn shared_input_schema(&self) -> Arc<Value> {
        Arc::clone(&self.input_schema)
    }

    fn read_only(&self) -> bool {
        self.tool.read_only()
    }

    /// A one-call tool's effect is one model call, which a durable run's response cache answers
    /// when the call runs again.
    fn idempotent(&self) -> bool {
        true
    }

    fn instantiate(&self, arguments: &Value, cx: &ToolCallContext) -> Result<BoxJob<ToolOutput>> {
        let input = decode_arguments::<T::Input>(arguments)?;
        Ok(BoxJob::new(Erased(self.job(input, cx)?)))
    }
}

/// A typed model-tool call erased to a [`ToolOutput`]; forwards the whole job contract.
struct Erased<T: ModelTool>(ModelToolJob<T>);

impl<T: ModelTool> Job for Erased<T> {
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

    fn max_corrections(&self) -> u32 {
        self.0.max_corrections()
    }

    async fn execute(&mut self, res: &Resources, cx: &JobContext) -> Result<ToolOutput> {
        let out = self.0.execute(res, cx).await?;
        let json = serde_json::to_value(&out).map_err(|e| {
            Error::system(format!("output of tool {}", T::NAME), e.to_string()).with_source(e)
        })?;
        Ok(ToolOutput {
            json,
            typed: Arc::new(out),
        })
    }
}
