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

    /// The refs held, comma-separated, or `none yet`: what an error about an unknown ref lists.
    pub(crate) fn known_refs(&self) -> String {
        if self.items.is_empty() {
            return "none yet".to_owned();
        }
        let refs: Vec<&str> = self.items.iter().map(|a| a.reference.0.as_str()).collect();
        refs.join(", ")
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

/// [`summary`] with the output's JSON shortened past `max` bytes. The JSON is written straight
/// into the summary and stops once it passes `max`, so a large output is never serialized whole.
pub(crate) fn summary_within(reference: &ArtifactRef, output: &ToolOutput, max: usize) -> String {
    const OPEN: &str = "[artifact ";
    let head = OPEN.len() + reference.0.len() + 2;
    let mut buf = Vec::with_capacity(head + max.min(256));
    buf.extend_from_slice(OPEN.as_bytes());
    buf.extend_from_slice(reference.0.as_bytes());
    buf.extend_from_slice(b"] ");
    // One byte past `max` is written, so a cut can check the byte after it for a character
    // boundary; what lies beyond is cut below.
    write_within(&mut buf, &output.json, head + max + 1);
    if buf.len() > head + max {
        let mut end = head + max;
        // Back up to the start of a character (a UTF-8 continuation byte is 0b10xx_xxxx).
        while end > head && buf.get(end).is_some_and(|b| b & 0xC0 == 0x80) {
            end -= 1;
        }
        buf.truncate(end);
        buf.extend_from_slice("… (shortened; cite ".as_bytes());
        buf.extend_from_slice(reference.0.as_bytes());
        buf.extend_from_slice(b" for the whole)");
    }
    String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Write `value`'s compact JSON into `buf` until `buf` holds `limit` bytes: serde_json writes
/// into a writer that refuses more, so a large value is never serialised whole.
fn write_within(buf: &mut Vec<u8>, value: &serde_json::Value, limit: usize) {
    struct Bounded<'a> {
        buf: &'a mut Vec<u8>,
        limit: usize,
    }
    impl std::io::Write for Bounded<'_> {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let room = self.limit.saturating_sub(self.buf.len());
            if room == 0 {
                return Err(std::io::Error::other("the preview is full"));
            }
            let n = bytes.len().min(room);
            self.buf.extend_from_slice(&bytes[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // Stopping at the limit is the writer failing on purpose: the error carries nothing.
    let _ = serde_json::to_writer(Bounded { buf, limit }, value);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn output(json: serde_json::Value) -> ToolOutput {
        ToolOutput {
            typed: Arc::new(json.clone()),
            json,
        }
    }

    /// What the summary was before it was written through `Bounded`: the whole JSON, then cut.
    fn cut_whole(reference: &ArtifactRef, json: &serde_json::Value, max: usize) -> String {
        let json = json.to_string();
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

    #[test]
    fn a_summary_is_the_json_cut_at_a_character_boundary_past_its_limit() {
        let r = ArtifactRef("@a7".into());
        let values = [
            serde_json::json!({"term": "x", "meaning": "short"}),
            serde_json::json!({"text": "é".repeat(300), "n": [1, 2, 3]}),
            serde_json::json!("quote \" and \\ and \n"),
            serde_json::json!(null),
        ];
        for v in &values {
            let len = v.to_string().len();
            // Every limit around the JSON's own length, and some well inside it.
            for max in [0, 1, 2, 5, 17, 100, len - 1, len, len + 1, 2_000] {
                assert_eq!(
                    summary_within(&r, &output(v.clone()), max),
                    cut_whole(&r, v, max),
                    "max {max} for {v}"
                );
            }
        }
    }
}
