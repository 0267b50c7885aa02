//! The answer-shape boundary of the thinker families: their typed view of the one conversion
//! of a model's answer ([`crate::onecall::AnswerShape`], which the one-call tools use directly),
//! with what a thinker adds: how the answer is asked for and where the run's reasoning comes
//! from.
//!
//! A looping thinker asks for its answer in one of two ways, decided once per answer type:
//!
//! * **A text answer** — a type whose schema is a plain string (`String`): the request carries no
//!   answer schema, as every agent framework asks for text. The model's turn with text and no
//!   tool calls is the answer: its text with a leading `<think>…</think>` block and the
//!   surrounding whitespace removed.
//! * **A typed answer** — any other type: the request carries the type's own schema and nothing
//!   else ([`AnswerShape::request_schema`]): an object type as itself, any other type inside a
//!   one-field object `{"answer": …}` (providers want an object at the root). No field the type
//!   lacks is asked for.
//!
//! [`AnswerShape::judge`] performs exactly one conversion, the answer JSON (or the text) into the
//! declared answer type, and refuses anything the type cannot hold with a correctable
//! [`Error::InvalidInput`] on the parameter `answer` whose reason is composed from the schema —
//! the declared type's name, an enum's accepted values, a field's path — and never from the value
//! the model sent. The decoder's own complaint (which may quote that value) is kept only on the
//! error's source. An empty, null or absent answer is no answer yet, not a wrong shape.
//!
//! **Reasoning.** The run's reasoning is the thinking block under native thinking, else the
//! answer type's own `reasoning` field (its text, or the approach and steps of an
//! [`AnalysisReasoning`]), else empty: a type without such a field is never asked for one. Under
//! native thinking the answer's own prose or [`AnalysisReasoning`] `reasoning` property is left
//! out of the schema and filled from the thinking block; a reasoning property of another shape
//! is always asked for.
//!
//! The loopless families use the same boundary: the toolless family through
//! [`AnswerShape::request_schema`] and [`AnswerShape::judge`], the decision family (whose
//! answers are always JSON) through [`AnswerShape::bare_request_schema`] and
//! [`AnswerShape::judge_bare`].

use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::artifacts::REF_TITLE;
use super::reasoning::AnalysisReasoning;
use crate::Error;
use crate::llm::ResponseSchema;
use crate::llm::shape::{self, answer_text, kind_of, strip_thinking};
use crate::model::OutputSize;
use crate::schema::words::SchemaWords;

/// The description every reasoning field carries: a justification a reader can check.
pub(super) const REASONING_DESCRIPTION: &str = "A justification a reader can check: your approach and \
its steps, citing the tool results used.";

/// What the boundary made of one final answer.
#[derive(Debug)]
pub(crate) enum Judgement<A> {
    /// The model gave no answer yet (nothing, null, or no `answer` field).
    NoAnswer,
    /// A typed answer.
    Answer {
        /// The typed value.
        value: A,
        /// The answer as JSON (after any reasoning was filled in; a text answer is a string).
        json: Value,
        /// The run's reasoning: the thinking block under native thinking, else the answer's own
        /// `reasoning` field, else empty.
        reasoning: String,
    },
    /// A wrong shape, refused with a correctable error composed from the schema.
    Refused(Error),
}

/// The declared answer type of a thinker, as a schema and a decoder. Cheap to create and to
/// clone: what it knows of a type is derived once per process and shared.
#[derive(Debug)]
pub(crate) struct AnswerShape<A> {
    data: Arc<ShapeData>,
    _answer: PhantomData<fn() -> A>,
}

impl<A> Clone for AnswerShape<A> {
    fn clone(&self) -> Self {
        Self {
            data: Arc::clone(&self.data),
            _answer: PhantomData,
        }
    }
}

/// What the boundary knows of one answer type, and the request schemas derived from it (each
/// built on first use: `[without native thinking, with native thinking]`).
#[derive(Debug)]
struct ShapeData {
    /// The declared type's name and schema: the conversion every answer goes through.
    core: shape::AnswerShape,
    kind: Kind,
    /// A plain string: asked for as text, without a schema.
    text: bool,
    /// The type has an `answer` property of its own.
    own_answer: bool,
    reasoning: OwnReasoning,
    uses_refs: bool,
    bare: [OnceLock<Arc<Value>>; 2],
}

/// The answer type's own `reasoning` property, if it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnReasoning {
    /// None.
    None,
    /// Prose (a string): filled from the thinking block under native thinking.
    Text,
    /// An [`AnalysisReasoning`]: filled from the thinking block, split into approach and steps.
    Structured,
    /// Some other shape: always asked of the model.
    Other,
}

impl OwnReasoning {
    /// Whether native thinking leaves the property out of the schema (and fills it).
    fn filled_by_thinking(self) -> bool {
        matches!(self, Self::Text | Self::Structured)
    }

    /// The run's reasoning as text, read from an answer's own property.
    fn text_of(self, answer: &Value) -> Option<String> {
        let own = answer.get("reasoning")?;
        match self {
            Self::Text => own.as_str().map(str::to_owned),
            Self::Structured => serde_json::from_value::<AnalysisReasoning>(own.clone())
                .ok()
                .map(|r| r.to_text()),
            Self::None | Self::Other => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Object,
    String,
    Number,
    Integer,
    Boolean,
    Array,
    Any,
}

impl Kind {
    pub(super) fn of(schema: &Value) -> Self {
        let t = match schema.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or(""),
            _ if schema.get("properties").is_some() => "object",
            _ => "",
        };
        match t {
            "object" => Self::Object,
            "string" => Self::String,
            "number" => Self::Number,
            "integer" => Self::Integer,
            "boolean" => Self::Boolean,
            "array" => Self::Array,
            _ => Self::Any,
        }
    }

    fn fits(self, v: &Value) -> bool {
        match self {
            Self::Object => v.is_object(),
            Self::String => v.is_string(),
            Self::Number => v.is_number(),
            Self::Integer => v.is_i64() || v.is_u64(),
            Self::Boolean => v.is_boolean(),
            Self::Array => v.is_array(),
            Self::Any => true,
        }
    }

    pub(super) fn article(self) -> &'static str {
        match self {
            Self::Object => "an object",
            Self::String => "a string",
            Self::Number => "a number",
            Self::Integer => "an integer",
            Self::Boolean => "a boolean",
            Self::Array => "an array",
            Self::Any => "a value",
        }
    }
}

impl<A: DeserializeOwned + JsonSchema + 'static> AnswerShape<A> {
    /// The shape of `A`, derived once per process.
    pub(crate) fn new() -> Self {
        Self {
            data: crate::schema::per_type::<A, ShapeData>(ShapeData::of::<A>),
            _answer: PhantomData,
        }
    }
}

impl ShapeData {
    fn of<A: JsonSchema + 'static>() -> Self {
        let core = shape::AnswerShape::from_schema(&A::schema_name(), crate::schema::of::<A>());
        let schema = core.schema();
        let kind = Kind::of(schema);
        let words = SchemaWords::new(schema);
        let reasoning = match schema.get("properties").and_then(|p| p.get("reasoning")) {
            None => OwnReasoning::None,
            Some(node) => {
                let node = words.resolve(node);
                if Kind::of(node) == Kind::String {
                    OwnReasoning::Text
                } else if AnalysisReasoning::is_shape(node) {
                    OwnReasoning::Structured
                } else {
                    OwnReasoning::Other
                }
            }
        };
        let uses_refs = schema.to_string().contains(REF_TITLE);
        let text = is_plain_string(schema);
        let own_answer = schema
            .get("properties")
            .is_some_and(|p| p.get("answer").is_some());
        Self {
            core,
            text,
            own_answer,
            kind,
            reasoning,
            uses_refs,
            bare: Default::default(),
        }
    }
}

/// Whether a schema is a plain string: `"type": "string"` and nothing that constrains it (no
/// enum, pattern, format or length), so any text the model writes is a value of the type.
fn is_plain_string(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return false;
    };
    map.get("type").and_then(Value::as_str) == Some("string")
        && map
            .keys()
            .all(|k| matches!(k.as_str(), "type" | "$schema" | "title" | "description"))
}

impl<A: DeserializeOwned + JsonSchema + 'static> Default for AnswerShape<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: DeserializeOwned> AnswerShape<A> {
    /// The declared type's name, as the schema titles it.
    pub(crate) fn type_name(&self) -> &str {
        self.data.core.type_name()
    }

    /// The output size a thinker answering this type declares when none is given: a
    /// [`Verdict`](OutputSize::Verdict) for a boolean, a number or a string held to a list of
    /// values; [`Compact`](OutputSize::Compact) for an object; [`Standard`](OutputSize::Standard)
    /// for free text, a list, or a shape that names no type.
    pub(crate) fn default_output(&self) -> OutputSize {
        let schema = self.data.core.schema();
        match self.data.kind {
            Kind::Boolean | Kind::Number | Kind::Integer => OutputSize::Verdict,
            Kind::String if schema.get("enum").is_some() || schema.get("const").is_some() => {
                OutputSize::Verdict
            }
            Kind::Any if schema.get("enum").is_some() => OutputSize::Verdict,
            Kind::Object => OutputSize::Compact,
            Kind::String | Kind::Array | Kind::Any => OutputSize::Standard,
        }
    }

    /// Whether the answer schema names artifact refs (so the `@` legend is rendered).
    pub(crate) fn uses_refs(&self) -> bool {
        self.data.uses_refs
    }

    /// Whether native thinking leaves the answer's own reasoning out of the schema: a prose or
    /// [`AnalysisReasoning`] field is then filled from the thinking block.
    fn strip_own(&self, native_thinking: bool) -> bool {
        native_thinking && self.data.reasoning.filled_by_thinking()
    }

    /// Whether the answer is asked for as text: the type's schema is a plain string (a
    /// `String`), so the request carries no answer schema and the model's text is the answer.
    pub(crate) fn is_text(&self) -> bool {
        self.data.text
    }

    /// The answer schema a request carries: none for a text answer ([`AnswerShape::is_text`]),
    /// else the type's own schema as [`AnswerShape::bare_request_schema`] makes it (no field the
    /// type lacks; under `native_thinking` without the reasoning the thinking block supplies).
    pub(crate) fn request_schema(&self, native_thinking: bool) -> Option<ResponseSchema> {
        (!self.data.text).then(|| self.bare_request_schema(native_thinking))
    }

    /// Judge one final answer: the text the model wrote and, under native thinking, the text of
    /// its thinking block. A text answer is the text itself (see [`AnswerShape::is_text`]);
    /// a typed one is judged as [`AnswerShape::judge_bare`] judges it.
    pub(crate) fn judge(&self, text: &str, thinking: Option<&str>) -> Judgement<A> {
        if !self.data.text {
            return self.judge_bare(text, thinking);
        }
        let answer = strip_thinking(text).trim();
        if answer.is_empty() {
            return Judgement::NoAnswer;
        }
        self.judge_value(Value::String(answer.to_owned()), thinking)
    }

    /// Whether the bare answer travels inside a one-field object `{"answer": …}`: providers'
    /// structured-answer modes need an object at the root, so a declared type that is not an
    /// object (a string, an enum, a list) is wrapped. An object type is asked for as itself.
    pub(crate) fn bare_is_wrapped(&self) -> bool {
        self.data.kind != Kind::Object
    }

    /// The schema of the answer type itself, always JSON (a text answer too: see
    /// [`AnswerShape::request_schema`] for what a request carries). The reasoning property, when
    /// the type has one, is left out under `native_thinking` (filled from the thinking block)
    /// and described as [`REASONING_DESCRIPTION`] otherwise. A non-object type is wrapped (see
    /// [`AnswerShape::bare_is_wrapped`]); nothing else is added.
    pub(crate) fn bare_request_schema(&self, native_thinking: bool) -> ResponseSchema {
        let schema = self.data.bare[usize::from(native_thinking)]
            .get_or_init(|| Arc::new(self.bare_schema(native_thinking)));
        ResponseSchema {
            name: "answer".into(),
            schema: Arc::clone(schema),
        }
    }

    fn bare_schema(&self, native_thinking: bool) -> Value {
        let mut answer = self.data.core.schema().clone();
        // The Rust type's name (`title`) and the draft URI are not the model's business.
        let defs = answer.as_object_mut().and_then(|m| {
            m.remove("$schema");
            m.remove("title");
            m.remove("$defs")
        });
        let strip = self.strip_own(native_thinking);
        if let Some(props) = answer.get_mut("properties").and_then(Value::as_object_mut) {
            if strip {
                props.remove("reasoning");
            } else if let Some(r) = props.get_mut("reasoning").and_then(Value::as_object_mut) {
                r.insert("description".into(), json!(REASONING_DESCRIPTION));
            }
        }
        if strip && let Some(req) = answer.get_mut("required").and_then(Value::as_array_mut) {
            req.retain(|r| r != "reasoning");
        }
        let mut root = if self.bare_is_wrapped() {
            json!({
                "type": "object",
                "properties": {"answer": answer},
                "required": ["answer"],
                "additionalProperties": false,
            })
        } else {
            answer
        };
        if let Some(defs) = defs.filter(|d| d.as_object().is_some_and(|d| !d.is_empty()))
            && let Some(m) = root.as_object_mut()
        {
            m.insert("$defs".into(), defs);
        }
        root
    }

    /// Judge an answer requested with [`AnswerShape::bare_request_schema`]: a leading
    /// `<think>…</think>` block and one Markdown code fence are dropped, then the one conversion.
    /// An object answer wrapped in `{"answer": …}` is unwrapped when the type has no `answer`
    /// field (`{"answer": null}` is then no answer yet).
    /// The reasoning returned is the thinking block's under native thinking, else the answer's
    /// own `reasoning` field, else empty.
    pub(crate) fn judge_bare(&self, text: &str, thinking: Option<&str>) -> Judgement<A> {
        let trimmed = answer_text(text);
        if trimmed.is_empty() {
            return Judgement::NoAnswer;
        }
        let value: Value = match serde_json::from_str(trimmed) {
            Ok(v) => v,
            Err(e) => {
                let wanted = if self.bare_is_wrapped() {
                    format!(
                        "one JSON object {{\"answer\": …}} whose answer is {} of type {}",
                        self.data.kind.article(),
                        self.type_name()
                    )
                } else {
                    format!("one JSON object of type {}", self.type_name())
                };
                return Judgement::Refused(self.refusal(
                    format!("the answer was not valid JSON; answer with {wanted}"),
                    Some(Box::new(e)),
                ));
            }
        };
        let answer = if self.bare_is_wrapped() {
            match value {
                Value::Null => return Judgement::NoAnswer,
                Value::Object(mut m) => match m.remove("answer") {
                    None | Some(Value::Null) => return Judgement::NoAnswer,
                    Some(a) => a,
                },
                other => {
                    return Judgement::Refused(self.refusal(
                        format!(
                            "expected an object {{\"answer\": …}} whose answer is {} of type \
                             {}, but the answer was {}",
                            self.data.kind.article(),
                            self.type_name(),
                            kind_of(&other)
                        ),
                        None,
                    ));
                }
            }
        } else {
            match value {
                Value::Null => return Judgement::NoAnswer,
                // An object answer wrapped in `{"answer": …}` (the envelope other agent
                // frameworks ask for) is understood, when the type has no `answer` field.
                Value::Object(mut m) if !self.data.own_answer && m.contains_key("answer") => {
                    match m.remove("answer") {
                        None | Some(Value::Null) => return Judgement::NoAnswer,
                        Some(inner @ Value::Object(_)) => inner,
                        Some(other) => {
                            m.insert("answer".into(), other);
                            Value::Object(m)
                        }
                    }
                }
                other => other,
            }
        };
        let own = self.data.reasoning.text_of(&answer);
        self.judge_value(answer, thinking.or(own.as_deref()))
    }

    /// The one conversion: `answer` into `A`, its reasoning field filled from `reasoning` when
    /// the type has one and the answer lacks it.
    fn judge_value(&self, mut answer: Value, reasoning: Option<&str>) -> Judgement<A> {
        if !self.data.kind.fits(&answer) {
            return Judgement::Refused(self.refusal(
                format!(
                    "expected {} of type {}, but it was {}",
                    self.data.kind.article(),
                    self.type_name(),
                    kind_of(&answer)
                ),
                None,
            ));
        }
        let reasoning = reasoning.unwrap_or_default().to_owned();
        if let Value::Object(fields) = &mut answer {
            let given = fields.get("reasoning");
            let fill = match self.data.reasoning {
                OwnReasoning::Text if !given.is_some_and(Value::is_string) => {
                    Some(Value::String(reasoning.clone()))
                }
                OwnReasoning::Structured if !given.is_some_and(Value::is_object) => {
                    serde_json::to_value(AnalysisReasoning::from_text(&reasoning)).ok()
                }
                _ => None,
            };
            if let Some(fill) = fill {
                fields.insert("reasoning".into(), fill);
            }
        }
        match self.data.core.decode_value::<A>(answer, Some("answer")) {
            Ok((value, json)) => Judgement::Answer {
                value,
                json,
                reasoning,
            },
            Err(refused) => {
                let reason = format!("{} (answer type {})", refused.problem(), self.type_name());
                Judgement::Refused(self.refusal(reason, refused.into_source()))
            }
        }
    }

    fn refusal(&self, reason: String, source: Option<crate::error::BoxError>) -> Error {
        Error::InvalidInput {
            parameter: "answer".into(),
            value: None,
            reason,
            source,
        }
    }
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "answer_bare_tests.rs"]
mod bare_tests;
