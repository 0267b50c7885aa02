//! The answer-shape boundary: the one place a model's final answer becomes a typed value.
//!
//! A thinker asks for its answer natively (the request's answer schema) inside a small envelope,
//! `{"reasoning": …, "answer": …}`. [`AnswerShape::judge`] performs exactly one conversion, the
//! envelope's `answer` JSON into the declared answer type, and refuses anything the type cannot
//! hold with a correctable [`Error::InvalidInput`] on the parameter `answer` whose reason is
//! composed from the schema — the declared type's name, an enum's accepted values, a field's path
//! — and never from the value the model sent. The decoder's own complaint (which may quote that
//! value) is kept only on the error's source. A null or absent answer is no answer yet, not a
//! wrong shape.
//!
//! Under native thinking the envelope's reasoning field and the answer's own `reasoning`
//! property are left out of the schema and filled from the thinking block instead: as prose for a
//! string field, split into approach and steps for an [`AnalysisReasoning`] field. A reasoning
//! property of another shape is always asked for. An answer type with its own `reasoning`
//! property is asked for its reasoning there only: the envelope is then `{"answer": …}`, and the
//! answer's reasoning (its text, or its approach and steps) is the run's.
//!
//! Thinkers without a loop (the toolless and decision families) ask for the answer type itself
//! instead of the envelope: [`AnswerShape::bare_request_schema`] and [`AnswerShape::judge_bare`]
//! are the same boundary without the envelope (a type that is not an object travels as
//! `{"answer": …}`, since providers want an object at the root).

use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::artifacts::REF_TITLE;
use super::reasoning::AnalysisReasoning;
use super::schema_text::strip_fences;
use crate::Error;
use crate::llm::ResponseSchema;
use crate::schema::words::SchemaWords;

/// The description every reasoning field carries: a justification a reader can check.
pub const REASONING_DESCRIPTION: &str = "A justification a reader can check: your approach and \
its steps, citing the tool results used.";

/// What the boundary made of one final answer.
#[derive(Debug)]
pub enum Judgement<A> {
    /// The model gave no answer yet (nothing, null, or no `answer` field).
    NoAnswer,
    /// A typed answer.
    Answer {
        /// The typed value.
        value: A,
        /// The answer as JSON (after any reasoning was filled in).
        json: Value,
        /// The envelope's reasoning (from the thinking block under native thinking).
        reasoning: String,
    },
    /// A wrong shape, refused with a correctable error composed from the schema.
    Refused(Error),
}

/// The declared answer type of a thinker, as a schema and a decoder. Cheap to create and to
/// clone: what it knows of a type is derived once per process and shared.
#[derive(Debug)]
pub struct AnswerShape<A> {
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
    type_name: String,
    schema: Value,
    kind: Kind,
    reasoning: OwnReasoning,
    uses_refs: bool,
    envelope: [OnceLock<Arc<Value>>; 2],
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

    /// Whether the property is a justification the run's reasoning can be read from, so the
    /// envelope does not ask for one of its own.
    fn justifies(self) -> bool {
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

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl<A: DeserializeOwned + JsonSchema + 'static> AnswerShape<A> {
    /// The shape of `A`, derived once per process.
    pub fn new() -> Self {
        Self {
            data: crate::schema::per_type::<A, ShapeData>(ShapeData::of::<A>),
            _answer: PhantomData,
        }
    }
}

impl ShapeData {
    fn of<A: JsonSchema + 'static>() -> Self {
        let schema = (*crate::schema::of::<A>()).clone();
        let type_name = schema
            .get("title")
            .and_then(Value::as_str)
            .map_or_else(|| A::schema_name().into_owned(), str::to_owned);
        let kind = Kind::of(&schema);
        let words = SchemaWords::new(&schema);
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
        Self {
            type_name,
            schema,
            kind,
            reasoning,
            uses_refs,
            envelope: Default::default(),
            bare: Default::default(),
        }
    }
}

impl<A: DeserializeOwned + JsonSchema + 'static> Default for AnswerShape<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: DeserializeOwned> AnswerShape<A> {
    /// The declared type's name, as the schema titles it.
    pub fn type_name(&self) -> &str {
        &self.data.type_name
    }

    /// Whether the answer schema names artifact refs (so the `@` legend is rendered).
    pub fn uses_refs(&self) -> bool {
        self.data.uses_refs
    }

    /// Whether the answer type carries its own `reasoning` property.
    pub fn has_reasoning(&self) -> bool {
        self.data.reasoning != OwnReasoning::None
    }

    /// Whether native thinking leaves the answer's own reasoning out of the schema: a prose or
    /// [`AnalysisReasoning`] field is then filled from the thinking block.
    fn strip_own(&self, native_thinking: bool) -> bool {
        native_thinking && self.data.reasoning.filled_by_thinking()
    }

    /// The envelope schema requested from the model. Under `native_thinking` the reasoning
    /// fields are left out (the thinking block supplies them).
    pub fn request_schema(&self, native_thinking: bool) -> ResponseSchema {
        let schema = self.data.envelope[usize::from(native_thinking)]
            .get_or_init(|| Arc::new(self.envelope_schema(native_thinking)));
        ResponseSchema {
            name: "final_answer".into(),
            schema: Arc::clone(schema),
        }
    }

    fn envelope_schema(&self, native_thinking: bool) -> Value {
        let mut answer = self.data.schema.clone();
        let defs = answer
            .as_object_mut()
            .and_then(|m| {
                m.remove("$schema");
                m.remove("title");
                m.remove("$defs")
            })
            .unwrap_or_else(|| Value::Object(Map::new()));
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
        let mut props = Map::new();
        let mut required = Vec::new();
        // An answer that carries its own reasoning is asked for it once, inside the answer: the
        // envelope's reasoning would be the same text written twice.
        if !native_thinking && !self.data.reasoning.justifies() {
            props.insert(
                "reasoning".into(),
                json!({"type": "string", "description": REASONING_DESCRIPTION}),
            );
            required.push(json!("reasoning"));
        }
        props.insert("answer".into(), answer);
        required.push(json!("answer"));
        let mut envelope = json!({
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": false,
        });
        if defs.as_object().is_some_and(|d| !d.is_empty())
            && let Some(m) = envelope.as_object_mut()
        {
            m.insert("$defs".into(), defs);
        }
        envelope
    }

    /// The envelope as the refusals show it.
    fn envelope_text(&self) -> &'static str {
        if self.data.reasoning.justifies() {
            r#"{"answer": …}"#
        } else {
            r#"{"reasoning": …, "answer": …}"#
        }
    }

    /// Judge one final answer: the text the model wrote and, under native thinking, the text of
    /// its thinking block.
    pub fn judge(&self, text: &str, thinking: Option<&str>) -> Judgement<A> {
        let trimmed = strip_fences(text.trim());
        if trimmed.is_empty() {
            return Judgement::NoAnswer;
        }
        let envelope: Value = match serde_json::from_str(trimmed) {
            Ok(v) => v,
            Err(e) => {
                return Judgement::Refused(self.refusal(
                    format!(
                        "the final answer was not valid JSON; answer with one JSON object \
                         {} whose answer is {} of type {}",
                        self.envelope_text(),
                        self.data.kind.article(),
                        self.data.type_name
                    ),
                    Some(Box::new(e)),
                ));
            }
        };
        let mut map = match envelope {
            Value::Null => return Judgement::NoAnswer,
            Value::Object(m) => m,
            other => {
                return Judgement::Refused(self.refusal(
                    format!(
                        "expected an object {} whose answer is {} of type {}, but the final \
                         answer was {}",
                        self.envelope_text(),
                        self.data.kind.article(),
                        self.data.type_name,
                        json_kind(&other)
                    ),
                    None,
                ));
            }
        };
        let answer = match map.remove("answer") {
            None | Some(Value::Null) => return Judgement::NoAnswer,
            Some(a) => a,
        };
        // The envelope's reasoning, else (an answer asked for its own) the answer's.
        let envelope_reasoning = map
            .get("reasoning")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| self.data.reasoning.text_of(&answer));
        self.judge_value(
            answer,
            thinking.or(envelope_reasoning.as_deref()),
            " in `answer`",
        )
    }

    /// Whether the bare answer travels inside a one-field object `{"answer": …}`: providers'
    /// structured-answer modes need an object at the root, so a declared type that is not an
    /// object (a string, an enum, a list) is wrapped. An object type is asked for as itself.
    pub fn bare_is_wrapped(&self) -> bool {
        self.data.kind != Kind::Object
    }

    /// The schema of the answer type itself, without the loop's envelope: what a thinker that
    /// asks for the answer directly (one call per candidate answer) requests. The reasoning
    /// property, when the type has one, is treated as in [`AnswerShape::request_schema`]: left
    /// out under `native_thinking` (filled from the thinking block), described otherwise. A
    /// non-object type is wrapped (see [`AnswerShape::bare_is_wrapped`]).
    pub fn bare_request_schema(&self, native_thinking: bool) -> ResponseSchema {
        let schema = self.data.bare[usize::from(native_thinking)]
            .get_or_init(|| Arc::new(self.bare_schema(native_thinking)));
        ResponseSchema {
            name: "answer".into(),
            schema: Arc::clone(schema),
        }
    }

    fn bare_schema(&self, native_thinking: bool) -> Value {
        let mut answer = self.data.schema.clone();
        let defs = answer.as_object_mut().and_then(|m| {
            m.remove("$schema");
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

    /// Judge an answer requested with [`AnswerShape::bare_request_schema`]: the same one
    /// conversion and the same refusals as [`AnswerShape::judge`], without the envelope. The
    /// reasoning returned is the thinking block's under native thinking, else the answer's own
    /// `reasoning` field, else empty.
    pub fn judge_bare(&self, text: &str, thinking: Option<&str>) -> Judgement<A> {
        let trimmed = strip_fences(text.trim());
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
                        self.data.type_name
                    )
                } else {
                    format!("one JSON object of type {}", self.data.type_name)
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
                            self.data.type_name,
                            json_kind(&other)
                        ),
                        None,
                    ));
                }
            }
        } else if value.is_null() {
            return Judgement::NoAnswer;
        } else {
            value
        };
        let own = answer
            .get("reasoning")
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.judge_value(answer, thinking.or(own.as_deref()), "")
    }

    /// The one conversion: `answer` into `A`, its reasoning field filled from `reasoning` when
    /// the type has one and the answer lacks it. `at` says where the answer sat, for messages.
    fn judge_value(&self, mut answer: Value, reasoning: Option<&str>, at: &str) -> Judgement<A> {
        if !self.data.kind.fits(&answer) {
            return Judgement::Refused(self.refusal(
                format!(
                    "expected {} of type {}{at}, but it was {}",
                    self.data.kind.article(),
                    self.data.type_name,
                    json_kind(&answer)
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
        // `null` for an optional field is its absence (OpenAI strict mode writes it).
        crate::schema::drop_optional_nulls(&mut answer, &self.data.schema);
        match crate::schema::decode_tracked::<A>(&answer) {
            Ok(value) => Judgement::Answer {
                value,
                json: answer,
                reasoning,
            },
            Err(e) => {
                let reason = self.explain(&e);
                Judgement::Refused(self.refusal(reason, Some(Box::new(e))))
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

    /// Compose the reason for a decoder failure from the schema at the failing path: the
    /// shared wording of every boundary, which names only what the schema declares (a key the
    /// model invented is never repeated).
    fn explain(&self, e: &serde_path_to_error::Error<serde_json::Error>) -> String {
        let misfit = SchemaWords::new(&self.data.schema).misfit(e);
        format!(
            "{} (answer type {})",
            misfit.sentence(Some("answer")),
            self.data.type_name
        )
    }
}
