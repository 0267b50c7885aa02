//! Artifacts: typed tool outputs kept by the runtime and named to the model by short refs.
//!
//! When a tool call succeeds its output is registered under the next ref (`@a1`, `@a2`, …). The
//! model reads a summary of the output labelled with the ref; an answer names the refs it relies
//! on, and the runtime resolves them back to the typed values.

use std::fmt;
use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::tool::ToolOutput;

/// The longest summary of one output a model reads, in bytes.
const SUMMARY_BYTES: usize = 2_000;

/// A short name of an artifact, such as `@a3`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ArtifactRef(pub String);

impl ArtifactRef {
    /// The ref as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ArtifactRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The title schemas carry for a ref: how the answer boundary knows a schema uses refs.
pub(crate) const REF_TITLE: &str = "ArtifactRef";

impl JsonSchema for ArtifactRef {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        REF_TITLE.into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "title": REF_TITLE,
            "type": "string",
            "pattern": "^@a[0-9]+$",
            "description": "The ref of an artifact a tool result named, such as @a1."
        })
    }
}

/// One registered artifact.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// Its ref.
    pub reference: ArtifactRef,
    /// The tool that produced it.
    pub tool: String,
    /// The output, as JSON and typed.
    pub output: ToolOutput,
}

impl Artifact {
    /// The typed value, if it is a `T`.
    pub fn downcast<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.output.downcast::<T>()
    }
}

/// The artifacts of one thinker, in registration order.
#[derive(Debug, Clone, Default)]
pub struct Artifacts {
    items: Vec<Arc<Artifact>>,
}

impl Artifacts {
    /// Register a tool output and return its ref.
    pub fn register(&mut self, tool: &str, output: ToolOutput) -> ArtifactRef {
        // Past the highest ref held, so a registry seeded with a parent's refs never reuses one.
        let next = self
            .items
            .iter()
            .filter_map(|a| a.reference.0.strip_prefix("@a")?.parse::<usize>().ok())
            .max()
            .unwrap_or(0)
            .max(self.items.len())
            + 1;
        let reference = ArtifactRef(format!("@a{next}"));
        self.items.push(Arc::new(Artifact {
            reference: reference.clone(),
            tool: tool.to_owned(),
            output,
        }));
        reference
    }

    /// Hand an artifact over under its own ref (a sub-thinker's registry is seeded this way);
    /// one already held under that ref is kept.
    pub(crate) fn seed(&mut self, artifact: Arc<Artifact>) {
        if self.get(&artifact.reference).is_none() {
            self.items.push(artifact);
        }
    }

    /// An artifact by ref.
    pub fn get(&self, reference: &ArtifactRef) -> Option<&Arc<Artifact>> {
        self.items.iter().find(|a| a.reference == *reference)
    }

    /// The typed value behind a ref, if the ref is known and the value is a `T`.
    pub fn resolve<T: Send + Sync + 'static>(&self, reference: &ArtifactRef) -> Option<&T> {
        self.get(reference).and_then(|a| a.downcast::<T>())
    }

    /// Every artifact.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Artifact>> {
        self.items.iter()
    }

    /// How many are registered.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether none is registered.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// What the model reads for a tool output registered as `reference`: the ref, then the output
/// as JSON, shortened when long.
pub(crate) fn summary(reference: &ArtifactRef, output: &ToolOutput) -> String {
    summary_within(reference, output, SUMMARY_BYTES)
}

/// [`summary`] with the output's JSON shortened past `max` bytes.
pub(crate) fn summary_within(reference: &ArtifactRef, output: &ToolOutput, max: usize) -> String {
    let json = output.json.to_string();
    let body = if json.len() > max {
        let mut end = max;
        while !json.is_char_boundary(end) {
            end -= 1;
        }
        format!(
            "{}… (shortened; cite {reference} for the whole)",
            &json[..end]
        )
    } else {
        json
    };
    format!("[artifact {reference}] {body}")
}

/// The legend rendered into the system content when the answer schema uses refs.
pub(crate) const LEGEND: &str = "Artifacts: every successful tool result is labelled with a \
ref such as @a1. To rely on a result in your answer, list its ref in the answer's artifact \
fields exactly as written; do not invent refs.";

/// Every string under an `artifacts` property anywhere in an answer, in order.
pub(crate) fn refs_in(answer: &serde_json::Value) -> Vec<ArtifactRef> {
    let mut out = Vec::new();
    collect(answer, &mut out);
    out
}

fn collect(v: &serde_json::Value, out: &mut Vec<ArtifactRef>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, child) in map {
                if k == "artifacts" || k == "artifact_refs" {
                    if let serde_json::Value::Array(items) = child {
                        out.extend(
                            items
                                .iter()
                                .filter_map(|i| i.as_str().map(|s| ArtifactRef(s.to_owned()))),
                        );
                    }
                } else {
                    collect(child, out);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
        _ => {}
    }
}
