//! [`AnswerShape`]: the declared type of a model's answer, and the one conversion from answer
//! text to that type. Every path a model's answer takes to a typed value goes through here: the
//! one-call tools and [`crate::llm::LlmCall`] directly, every thinker family through its typed
//! view (the thinker's own `AnswerShape`, which adds how a thinker asks for the answer and
//! where its reasoning comes from).
//!
//! A model is a third party, so its answer is judged before anything typed is handed on. The
//! conversion is: trim, drop one surrounding Markdown code fence, parse JSON, check the root kind,
//! deserialize into the declared type. When any step fails the result is an [`AnswerRefusal`]
//! whose text is composed **from the schema only** — the declared type's name, field names, the
//! expected kinds, an enum's accepted values, the position where JSON parsing stopped — and never
//! from the value the model sent. The decoder's own complaint (which may quote the value) is kept
//! on the refusal's source chain, where logs may see it and a prompt never does.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::BoxError;
use crate::schema::words::{Misfit, SchemaWords, is_object, join_and};
use crate::{Error, Result};

/// The parameter name an answer is known by in errors.
pub(crate) const ANSWER_PARAMETER: &str = "answer";

/// The declared type of an answer: its name and its JSON Schema.
#[derive(Debug, Clone)]
pub struct AnswerShape {
    type_name: String,
    schema: std::sync::Arc<Value>,
}

/// Why an answer could not be converted into its declared type.
#[derive(Debug)]
pub struct AnswerRefusal {
    problem: String,
    source: Option<BoxError>,
}

impl AnswerRefusal {
    /// What was wrong, composed from the schema (never quoting the answer).
    pub(crate) fn problem(&self) -> &str {
        &self.problem
    }

    /// The decoder's own complaint, if any (it may quote the answer: never for a prompt).
    pub(crate) fn into_source(self) -> Option<BoxError> {
        self.source
    }

    /// The refusal as a correctable error naming the `answer` parameter and the declared type.
    /// The value is never echoed; the decoder's complaint stays on the source chain.
    pub fn into_error(self, shape: &AnswerShape) -> Error {
        Error::InvalidInput {
            parameter: ANSWER_PARAMETER.to_owned(),
            value: None,
            reason: format!("{}; the answer must be {}", self.problem, shape.describe()),
            source: self.source,
        }
    }
}

impl AnswerShape {
    /// The shape of `T`, from its JSON Schema. The type name is the schema's title (the Rust
    /// type's name), or the short Rust type name when the schema has none.
    pub fn of<T: JsonSchema + 'static>() -> Self {
        let schema = crate::schema::of::<T>();
        let type_name = schema
            .get("title")
            .and_then(Value::as_str)
            .map_or_else(|| short_type_name::<T>(), str::to_owned);
        Self { type_name, schema }
    }

    /// The shape a response schema declares for an answer without a Rust type: named by the
    /// schema's title, else by `name` (the response contract's name).
    pub(crate) fn from_schema(name: &str, schema: std::sync::Arc<Value>) -> Self {
        let type_name = schema
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(name)
            .to_owned();
        Self { type_name, schema }
    }

    /// Convert answer text that has no Rust type: the steps of [`AnswerShape::decode`], then
    /// the schema's structure at every depth (kinds, required fields, enum values, fields an
    /// object does not admit), checked by a JSON Schema validator; a break of any of these is a
    /// refusal like a typed decoder's. The answer comes back with what else it breaks (bounds,
    /// lengths, patterns: the checks a typed answer's `validate` makes), in the schema's terms.
    pub(crate) fn decode_untyped(
        &self,
        text: &str,
    ) -> Result<(Value, Option<String>), AnswerRefusal> {
        let value = self.decode::<Value>(text)?;
        let (structure, constraints): (Vec<Misfit>, Vec<Misfit>) = self
            .words()
            .violations(&value, 8)
            .into_iter()
            .partition(Misfit::is_structural);
        let said = |found: &[Misfit]| {
            let parts: Vec<String> = found.iter().take(3).map(|m| m.sentence(None)).collect();
            (!parts.is_empty()).then(|| parts.join("; "))
        };
        match said(&structure) {
            Some(problem) => Err(AnswerRefusal {
                problem,
                source: None,
            }),
            None => Ok((value, said(&constraints))),
        }
    }

    /// The declared type's name.
    pub(crate) fn type_name(&self) -> &str {
        &self.type_name
    }

    /// The declared type's JSON Schema (the response contract sent to the model).
    pub(crate) fn schema(&self) -> &Value {
        &self.schema
    }

    /// The same schema, shared (a request carries it without copying it).
    pub(crate) fn shared_schema(&self) -> std::sync::Arc<Value> {
        std::sync::Arc::clone(&self.schema)
    }

    /// The declared shape in words, for example ``a JSON object of type `Verdict` with the
    /// fields `ok` (true or false) and `why` (a string)``.
    pub(crate) fn describe(&self) -> String {
        self.words().describe(&self.type_name)
    }

    fn words(&self) -> SchemaWords<'_> {
        SchemaWords::new(&self.schema)
    }

    /// The text of a correction turn for a refused answer: what was wrong and what is expected,
    /// in terms of the schema.
    pub(crate) fn correction_for_misfit(&self, refusal: &AnswerRefusal) -> String {
        format!(
            "Your previous answer could not be used: {}.\nThe answer must be {}.\nReply with \
             only the corrected JSON, nothing else.",
            refusal.problem,
            self.describe()
        )
    }

    /// The text of a correction turn for a well-shaped answer that failed a semantic check; the
    /// check's `reason` is written by the tool's author.
    pub(crate) fn correction_for_invalid(&self, reason: &str) -> String {
        format!(
            "Your previous answer has the right shape but was not accepted: {reason}.\nThe answer \
             must be {}.\nReply with only the corrected JSON, nothing else.",
            self.describe()
        )
    }

    /// Convert answer text into the declared type (see the module docs).
    pub(crate) fn decode<T: DeserializeOwned>(&self, text: &str) -> Result<T, AnswerRefusal> {
        let body = answer_text(text);
        if body.is_empty() {
            return Err(AnswerRefusal {
                problem: "it was empty".to_owned(),
                source: None,
            });
        }
        let value: Value = serde_json::from_str(body).map_err(|e| AnswerRefusal {
            problem: format!(
                "it was not valid JSON (parsing stopped at line {}, column {})",
                e.line(),
                e.column()
            ),
            source: Some(Box::new(e)),
        })?;
        let words = self.words();
        let root = words.resolve(&self.schema);
        if is_object(root) {
            let Some(object) = value.as_object() else {
                return Err(AnswerRefusal {
                    problem: format!("it was {}, not a JSON object", kind_of(&value)),
                    source: None,
                });
            };
            let missing = words.missing_required(root, object);
            if !missing.is_empty() {
                return Err(AnswerRefusal {
                    problem: format!(
                        "the object lacks the required {} {}",
                        if missing.len() == 1 {
                            "field"
                        } else {
                            "fields"
                        },
                        join_and(&missing)
                    ),
                    source: None,
                });
            }
        }
        self.decode_value(value, None).map(|(typed, _)| typed)
    }

    /// The last step of the conversion, for an answer already parsed: `null` for an optional
    /// field is dropped (OpenAI strict mode writes it), then the value is deserialized into `T`;
    /// a misfit is refused in the schema's words at the failing path (rooted at `root`, e.g.
    /// `answer`, when given), never quoting the value.
    pub(crate) fn decode_value<T: DeserializeOwned>(
        &self,
        mut value: Value,
        root: Option<&str>,
    ) -> Result<(T, Value), AnswerRefusal> {
        crate::schema::drop_optional_nulls(&mut value, &self.schema);
        match crate::schema::decode_tracked::<T>(&value) {
            Ok(typed) => Ok((typed, value)),
            Err(e) => Err(AnswerRefusal {
                problem: self.words().misfit(&e).sentence(root),
                source: Some(Box::new(e)),
            }),
        }
    }
}

/// The answer in a model's text: after a leading `<think>…</think>` block (see
/// [`strip_thinking`]), trimmed, without one surrounding Markdown code fence.
pub(crate) fn answer_text(text: &str) -> &str {
    strip_fence(strip_thinking(text).trim())
}

/// Where a model in thinking mode opens and closes the thinking it writes before its answer.
const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// The text after a leading `<think>…</think>` block (a model in thinking mode writes its
/// thinking first, in the answer text): what follows the block, or nothing when the block is
/// never closed (the answer was all thinking). Text without such a block is returned as it is.
pub(crate) fn strip_thinking(text: &str) -> &str {
    let Some(rest) = text.trim_start().strip_prefix(THINK_OPEN) else {
        return text;
    };
    match rest.find(THINK_CLOSE) {
        Some(end) => &rest[end + THINK_CLOSE.len()..],
        None => "",
    }
}

fn short_type_name<T>() -> String {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_owned()
}

/// The JSON kind of a value, in words, without the value.
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a JSON string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Drop one Markdown code fence around the whole text (```` ```json … ``` ````), if present.
fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // The info string (`json`) runs to the first newline.
    match body.split_once('\n') {
        Some((info, inner)) if !info.trim_start().starts_with('{') => inner.trim(),
        _ => body.trim(),
    }
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
