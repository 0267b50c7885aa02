//! `as_tool`: a thinker or a doer offered to another thinker's model as a tool, by name.
//!
//! [`Thinker::as_tool`](crate::thinker::Thinker::as_tool) and [`DoerToolExt::as_tool`] (on a
//! function that makes a doer from its input) give a [`JobTool`], a [`ToolProvider`] to put on
//! a looping thinker's palette with `.provider(...)`. What a `JobTool` guarantees:
//!
//! * **Schema and arguments.** The model sees the JSON Schema of the job's input type, and its
//!   arguments are decoded into that type as every tool's are: a misfit is a correctable
//!   [`Error::InvalidInput`] naming the parameter by its path in the schema. A thinker's input is
//!   [`ThinkerInput`] without `artifact_refs` (a fresh run cannot read the caller's artifacts, so
//!   that property is not offered, and a call that sends refs anyway is refused naming it).
//! * **Read-only.** A `JobTool` is not read-only unless declared so with [`JobTool::read_only`].
//!   The flag is what a palette reads: under a read-only scope a thinker withholds a tool that is
//!   not read-only and refuses a call of it. The call's job checks [`admit_tool`] when it is
//!   admitted, as every tool job does, so code that submits it directly under a read-only scope
//!   is refused too. Declaring a job read-only lifts nothing: the scope stays sealed on
//!   everything it starts, so a writer it tries is still refused.
//! * **Lineage.** A call is one job, recorded under the tool's name, that the calling thinker's
//!   tool round runs as its child through the submission door, which seals the caller's scope
//!   (identity axes and the read-only binding) onto it and onto everything it starts. The thinker
//!   or doer runs inside that job: its own children (model turns, tool calls) are that job's.
//! * **Runs.** Each call of a thinker's tool is a fresh run: a new conversation (nothing an
//!   earlier call said is in it) with an empty artifact registry, at the thinker's own seat and
//!   at the depth asked for, clamped to the caller's. Its answer's JSON is the tool result and
//!   the typed answer the artifact's value. Each call of a doer's tool makes a new doer from the
//!   decoded input; its output's JSON is the tool result and the typed output the artifact's.

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::job::{BoxJob, Doer, Job, JobContext, Orchestrator, Requirements, Resources};
use crate::llm::ToolSpec;
use crate::thinker::declaration::ThinkerInput;
use crate::thinker::doors::{REQUEST_SKILL, REQUEST_TOOLS};
use crate::thinker::subthinker::SUB_THINKER;
use crate::tool::{
    ToolCallContext, ToolOutput, ToolProvider, admit_tool, decode_arguments, is_snake_case,
};
use crate::{Error, Result};

/// The property of [`ThinkerInput`] a thinker's tool does not offer.
const ARTIFACT_REFS: &str = "artifact_refs";

/// Builds the job of one call from the model's arguments.
type Make = dyn Fn(&Value, &CallOf) -> Result<BoxJob<ToolOutput>> + Send + Sync;

/// A thinker or a doer offered as a tool: made by
/// [`Thinker::as_tool`](crate::thinker::Thinker::as_tool) or [`DoerToolExt::as_tool`], put on a
/// palette with `.provider(...)` (`.provider(tool.into())`). What it guarantees:
///
/// * **Schema and arguments.** The model sees the JSON Schema of the job's input type, and its
///   arguments are decoded into that type as every tool's are: a misfit is a correctable
///   [`Error::InvalidInput`] naming the parameter by its path in the schema. A thinker's input is
///   [`ThinkerInput`] without `artifact_refs` (a fresh run cannot read the caller's artifacts, so
///   that property is not offered, and a call that sends refs anyway is refused naming it).
/// * **Read-only.** A `JobTool` is not read-only unless declared so with [`JobTool::read_only`].
///   The flag is what a palette reads: under a read-only scope a thinker withholds a tool that is
///   not read-only and refuses a call of it. The call's job checks [`admit_tool`] when it is
///   admitted, as every tool job does, so code that submits it directly under a read-only scope
///   is refused too. Declaring a job read-only lifts nothing: the scope stays sealed on
///   everything it starts, so a writer it tries is still refused.
/// * **Lineage.** A call is one job, recorded under the tool's name, that the calling thinker's
///   tool round runs as its child through the submission door, which seals the caller's scope
///   (identity axes and the read-only binding) onto it and onto everything it starts. The thinker
///   or doer runs inside that job: its own children (model turns, tool calls) are that job's.
/// * **Runs.** Each call of a thinker's tool is a fresh run: a new conversation (nothing an
///   earlier call said is in it) with an empty artifact registry, at the thinker's own seat and
///   at the depth asked for, clamped to the caller's. Its answer's JSON is the tool result and
///   the typed answer the artifact's value. Each call of a doer's tool makes a new doer from the
///   decoded input; its output's JSON is the tool result and the typed output the artifact's.
pub struct JobTool {
    call: CallOf,
    description: String,
    schema: Arc<Value>,
    idempotent: bool,
    make: Box<Make>,
}

/// What each call's job knows of its tool: the name it is recorded under and whether it was
/// declared read-only.
#[derive(Debug, Clone)]
struct CallOf {
    name: Arc<str>,
    read_only: bool,
}

impl std::fmt::Debug for JobTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobTool")
            .field("name", &self.call.name)
            .field("read_only", &self.call.read_only)
            .finish_non_exhaustive()
    }
}

impl JobTool {
    /// A tool over `make`, whose input type `I` the model's arguments are decoded into. Refuses
    /// a name that is not snake_case or that a built-in orchestrator uses, and an empty
    /// description, naming the field.
    fn new<I, J, F>(
        name: String,
        description: &str,
        schema: Arc<Value>,
        idempotent: bool,
        make: F,
    ) -> Result<Self>
    where
        I: DeserializeOwned + JsonSchema + 'static,
        J: Orchestrator,
        J::Output: Serialize + Send + Sync + 'static,
        F: Fn(I) -> Result<J> + Send + Sync + 'static,
    {
        if !is_snake_case(&name) {
            return Err(Error::invalid_input(
                "tool.name",
                Some(name),
                "tool names are snake_case: lower-case letters, digits and `_`, starting with a \
                 letter",
            ));
        }
        if [SUB_THINKER, REQUEST_TOOLS, REQUEST_SKILL].contains(&name.as_str()) {
            return Err(Error::invalid_input(
                "tool.name",
                Some(name),
                "this name belongs to a built-in orchestrator of every thinker",
            ));
        }
        if description.trim().is_empty() {
            return Err(Error::invalid_input(
                "tool.description",
                Some(name),
                "the description is empty; say what the tool does, for the model",
            ));
        }
        let make = move |arguments: &Value, call: &CallOf| {
            let input = decode_arguments::<I>(arguments)?;
            let job = make(input)?;
            Ok(BoxJob::new(AsToolJob {
                call: call.clone(),
                job,
            }))
        };
        let description = description.trim().to_owned();
        Ok(Self {
            call: CallOf {
                name: name.into(),
                read_only: false,
            },
            description,
            schema,
            idempotent,
            make: Box::new(make),
        })
    }

    /// Declare the job read-only: nothing it does or starts has side effects. It is then offered
    /// (and admitted) under a read-only scope; without it, it is withheld from that palette and
    /// refused. The declaration is the caller's word, as a [`crate::tool::Tool`]'s is; the scope
    /// stays sealed on everything the job starts, so a writer it tries is refused all the same.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.call.read_only = true;
        self
    }

    /// Whether the job was declared read-only ([`JobTool::read_only`]); the same as
    /// [`ToolProvider::read_only`], which the builder method shadows on a `JobTool` value.
    pub fn is_read_only(&self) -> bool {
        self.call.read_only
    }
}

impl From<JobTool> for Arc<dyn ToolProvider> {
    /// The tool as a palette entry, for `.provider(...)`.
    fn from(tool: JobTool) -> Self {
        Arc::new(tool)
    }
}

impl ToolProvider for JobTool {
    fn name(&self) -> &str {
        &self.call.name
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
            name: Cow::Owned(self.call.name.to_string()),
            description: Cow::Owned(self.description.clone()),
            parameters: Arc::clone(&self.schema),
        }
    }
    fn read_only(&self) -> bool {
        self.call.read_only
    }
    /// A thinker's call replays its run, each of whose own effects is journaled apart (as a
    /// `sub_thinker`'s); a doer's is not known to be repeatable, so `false`.
    fn idempotent(&self) -> bool {
        self.idempotent
    }
    fn instantiate(&self, arguments: &Value, _cx: &ToolCallContext) -> Result<BoxJob<ToolOutput>> {
        (self.make)(arguments, &self.call)
    }
}

/// Offer a doer as a tool: implemented for every function that makes a doer from its input, so
/// `(|topic: Topic| research(topic)).as_tool("research", "…")` is the tool whose arguments are
/// a `Topic` (its JSON Schema is what the model sees) and each of whose calls runs the doer made
/// from them. See [`JobTool`].
// `as_tool` consumes the function into the tool; the name matches `Thinker::as_tool`, which
// borrows (a thinker stays usable), so both read the same at the call site.
#[allow(clippy::wrong_self_convention)]
pub trait DoerToolExt<I>: Sized {
    /// This doer offered to another thinker's model as the tool `name` (snake_case; not a
    /// built-in orchestrator's) with `description`. Refuses a misfit name or an empty
    /// description with [`Error::InvalidInput`] naming the field.
    fn as_tool(self, name: impl Into<String>, description: impl Into<String>) -> Result<JobTool>;
}

impl<F, I, D> DoerToolExt<I> for F
where
    F: Fn(I) -> D + Send + Sync + 'static,
    I: DeserializeOwned + JsonSchema + Send + 'static,
    D: Doer,
    D::Output: Serialize + Send + Sync + 'static,
{
    fn as_tool(self, name: impl Into<String>, description: impl Into<String>) -> Result<JobTool> {
        JobTool::new(
            name.into(),
            &description.into(),
            crate::schema::of::<I>(),
            false,
            move |input: I| Ok(self(input)),
        )
    }
}

/// The tool of a thinker whose runs `make` builds (`Thinker::as_tool`): arguments are a
/// [`ThinkerInput`] without artifact refs and with a query.
pub(crate) fn thinker<J, F>(name: String, description: &str, make: F) -> Result<JobTool>
where
    J: Orchestrator,
    J::Output: Serialize + Send + Sync + 'static,
    F: Fn(ThinkerInput) -> J + Send + Sync + 'static,
{
    JobTool::new(
        name,
        description,
        Arc::clone(thinker_schema()),
        true,
        move |input: ThinkerInput| {
            if input.query.trim().is_empty() {
                return Err(Error::invalid_input(
                    "query",
                    None,
                    "the query is empty; say what to find out or do",
                ));
            }
            if !input.artifact_refs.is_empty() {
                return Err(Error::invalid_input(
                    ARTIFACT_REFS,
                    None,
                    "this tool starts a fresh run that cannot read your artifacts; leave \
                     artifact_refs out and put what it needs in the query",
                ));
            }
            Ok(make(input))
        },
    )
}

/// The schema of a thinker's tool: [`ThinkerInput`]'s without `artifact_refs`, generated once.
fn thinker_schema() -> &'static Arc<Value> {
    static SCHEMA: LazyLock<Arc<Value>> = LazyLock::new(|| {
        let mut schema = (*crate::schema::of::<ThinkerInput>()).clone();
        without_property(&mut schema, ARTIFACT_REFS);
        Arc::new(schema)
    });
    &SCHEMA
}

/// Remove the top-level property `name` from an object schema (from `properties` and
/// `required`), then every definition nothing refers to any more.
fn without_property(schema: &mut Value, name: &str) {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.remove(name);
    }
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| r.as_str() != Some(name));
    }
    // Removing one definition may leave another unused: prune until none goes.
    loop {
        let Some(defs) = schema.get("$defs").and_then(Value::as_object) else {
            return;
        };
        if defs.is_empty() {
            if let Some(schema) = schema.as_object_mut() {
                schema.remove("$defs");
            }
            return;
        }
        let unused = defs.keys().find(|def| {
            // A definition referred to only from within itself is as unused as one never
            // referred to.
            let pointer = format!("#/$defs/{def}");
            let mut rest = schema.clone();
            if let Some(defs) = rest.get_mut("$defs").and_then(Value::as_object_mut) {
                defs.remove(def.as_str());
            }
            !refers_to(&rest, &pointer)
        });
        let Some(unused) = unused.cloned() else {
            return;
        };
        if let Some(defs) = schema.get_mut("$defs").and_then(Value::as_object_mut) {
            defs.remove(&unused);
        }
    }
}

/// Whether `node` holds a `$ref` to `pointer` anywhere.
fn refers_to(node: &Value, pointer: &str) -> bool {
    match node {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| (k == "$ref" && v.as_str() == Some(pointer)) || refers_to(v, pointer)),
        Value::Array(items) => items.iter().any(|v| refers_to(v, pointer)),
        _ => false,
    }
}

/// One call of a [`JobTool`]: the thinker's or doer's job, run inside a job of the tool's name
/// that is admitted like every tool job.
struct AsToolJob<J> {
    call: CallOf,
    job: J,
}

impl<J> Job for AsToolJob<J>
where
    J: Orchestrator,
    J::Output: Serialize + Send + Sync + 'static,
{
    type Output = ToolOutput;

    fn class(&self) -> Cow<'static, str> {
        Cow::Owned(self.call.name.to_string())
    }

    /// Refused under a read-only scope unless declared read-only ([`admit_tool`]); asks for
    /// nothing else: the job it runs holds no resources.
    fn requirements(&mut self, _req: &mut Requirements, cx: &JobContext) -> Result<()> {
        admit_tool(&self.call.name, self.call.read_only, cx.scope())
    }

    fn max_corrections(&self) -> u32 {
        Orchestrator::max_corrections(&self.job)
    }

    async fn execute(&mut self, _res: &Resources, cx: &JobContext) -> Result<ToolOutput> {
        let out = Orchestrator::execute(&mut self.job, cx).await?;
        let json = serde_json::to_value(&out).map_err(|e| {
            Error::system(format!("output of tool {}", self.call.name), e.to_string())
        })?;
        Ok(ToolOutput {
            json,
            typed: Arc::new(out),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thinker_schema_is_thinker_input_s_without_artifact_refs() {
        let full = crate::schema::of::<ThinkerInput>();
        let trimmed = thinker_schema();
        assert!(full["properties"].get(ARTIFACT_REFS).is_some(), "{full}");
        assert!(
            trimmed["properties"].get(ARTIFACT_REFS).is_none(),
            "{trimmed}"
        );
        assert_eq!(trimmed["properties"]["query"], full["properties"]["query"]);
        assert_eq!(trimmed["properties"]["depth"], full["properties"]["depth"]);
        assert!(!trimmed.to_string().contains("ArtifactRef"), "{trimmed}");
    }

    #[test]
    fn unused_definitions_go_and_used_ones_stay() {
        let mut schema = serde_json::json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/$defs/B"}},
            "required": ["a", "b"],
            "$defs": {"A": {"type": "string"}, "B": {"items": {"$ref": "#/$defs/B"}}}
        });
        without_property(&mut schema, "b");
        assert_eq!(schema["required"], serde_json::json!(["a"]));
        assert!(schema["$defs"].get("A").is_some());
        assert!(schema["$defs"].get("B").is_none());
    }
}
