//! [`AnswerShape`]: the declared type of a model's answer, and the one conversion from answer
//! text to that type.
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
use serde_json::{Map, Value};
use serde_path_to_error::Segment;

use crate::error::BoxError;
use crate::{Error, Result};

/// How deep descriptions of nested schemas go before they stop naming inner parts.
const MAX_DEPTH: usize = 4;

/// The parameter name an answer is known by in errors.
pub const ANSWER_PARAMETER: &str = "answer";

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
    pub fn problem(&self) -> &str {
        &self.problem
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

    /// The declared type's name.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// The declared type's JSON Schema (the response contract sent to the model).
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The same schema, shared (a request carries it without copying it).
    pub fn shared_schema(&self) -> std::sync::Arc<Value> {
        std::sync::Arc::clone(&self.schema)
    }

    /// The declared shape in words, for example ``a JSON object of type `Verdict` with the
    /// fields `ok` (true or false) and `why` (a string)``.
    pub fn describe(&self) -> String {
        let root = self.resolve(&self.schema);
        if is_object(root) {
            let fields = self.field_list(root, 0);
            if fields.is_empty() {
                format!("a JSON object of type `{}`", self.type_name)
            } else {
                format!(
                    "a JSON object of type `{}` with the fields {fields}",
                    self.type_name
                )
            }
        } else {
            format!(
                "{} (the declared type `{}`)",
                self.phrase(root, false, 0),
                self.type_name
            )
        }
    }

    /// The text of a correction turn for a refused answer: what was wrong and what is expected,
    /// in terms of the schema.
    pub fn correction_for_misfit(&self, refusal: &AnswerRefusal) -> String {
        format!(
            "Your previous answer could not be used: {}.\nThe answer must be {}.\nReply with \
             only the corrected JSON, nothing else.",
            refusal.problem,
            self.describe()
        )
    }

    /// The text of a correction turn for a well-shaped answer that failed a semantic check; the
    /// check's `reason` is written by the tool's author.
    pub fn correction_for_invalid(&self, reason: &str) -> String {
        format!(
            "Your previous answer has the right shape but was not accepted: {reason}.\nThe answer \
             must be {}.\nReply with only the corrected JSON, nothing else.",
            self.describe()
        )
    }

    /// Convert answer text into the declared type (see the module docs).
    pub fn decode<T: DeserializeOwned>(&self, text: &str) -> Result<T, AnswerRefusal> {
        let body = strip_fence(text.trim());
        if body.is_empty() {
            return Err(AnswerRefusal {
                problem: "it was empty".to_owned(),
                source: None,
            });
        }
        let mut value: Value = serde_json::from_str(body).map_err(|e| AnswerRefusal {
            problem: format!(
                "it was not valid JSON (parsing stopped at line {}, column {})",
                e.line(),
                e.column()
            ),
            source: Some(Box::new(e)),
        })?;
        // `null` for an optional field is its absence (OpenAI strict mode writes it).
        crate::schema::drop_optional_nulls(&mut value, &self.schema);
        let root = self.resolve(&self.schema);
        if is_object(root) {
            let Some(object) = value.as_object() else {
                return Err(AnswerRefusal {
                    problem: format!("it was {}, not a JSON object", kind_of(&value)),
                    source: None,
                });
            };
            let missing = self.missing_required(root, object);
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
        crate::schema::decode_tracked::<T>(&value).map_err(|e| {
            let problem = self.misfit_at(e.path(), &e.inner().to_string());
            AnswerRefusal {
                problem,
                source: Some(Box::new(e)),
            }
        })
    }

    /// What is wrong at a decoder path, from the schema. `inner` is consulted only for the name
    /// of a missing field (a name from the declared type, never a value).
    fn misfit_at(&self, path: &serde_path_to_error::Path, inner: &str) -> String {
        let (node, shown) = self.node_at(path);
        let missing = inner
            .strip_prefix("missing field `")
            .and_then(|s| s.split('`').next());
        match (missing, node) {
            (Some(field), Some(parent)) => {
                let parent = self.non_null(parent);
                let name = if shown.is_empty() {
                    field.to_owned()
                } else {
                    format!("{shown}.{field}")
                };
                match self.property(parent, field) {
                    Some(prop) => format!(
                        "the required field `{name}` is missing; it must be {}",
                        self.phrase(prop, false, 1)
                    ),
                    None => format!("the required field `{name}` is missing"),
                }
            }
            (_, Some(node)) if shown.is_empty() => {
                format!("the answer must be {}", self.phrase(node, false, 0))
            }
            (_, Some(node)) => {
                format!("field `{shown}` must be {}", self.phrase(node, false, 1))
            }
            (_, None) if shown.is_empty() => "it does not fit the declared type".to_owned(),
            (_, None) => format!("field `{shown}` does not fit the declared type"),
        }
    }

    /// The schema node a decoder path points at, and the path as it may be shown: only keys the
    /// schema declares are named (a key the model invented is never repeated).
    fn node_at<'a>(&'a self, path: &serde_path_to_error::Path) -> (Option<&'a Value>, String) {
        let mut node = Some(self.resolve(&self.schema));
        let mut shown = String::new();
        for seg in path.iter() {
            let Some(cur) = node else { break };
            let cur = self.non_null(cur);
            match seg {
                Segment::Map { key } => match self.property(cur, key) {
                    Some(prop) => {
                        if !shown.is_empty() {
                            shown.push('.');
                        }
                        shown.push_str(key);
                        node = Some(prop);
                    }
                    None => {
                        shown.push_str(if shown.is_empty() {
                            "an entry"
                        } else {
                            " entry"
                        });
                        node = cur.get("additionalProperties").map(|v| self.resolve(v));
                    }
                },
                Segment::Seq { index } => {
                    shown.push_str(&format!("[{index}]"));
                    node = cur.get("items").map(|v| self.resolve(v));
                }
                Segment::Enum { .. } | Segment::Unknown => {}
            }
        }
        (node, shown)
    }

    fn property<'a>(&'a self, object: &'a Value, name: &str) -> Option<&'a Value> {
        object
            .get("properties")
            .and_then(|p| p.get(name))
            .map(|v| self.resolve(v))
    }

    fn missing_required(&self, object_schema: &Value, object: &Map<String, Value>) -> Vec<String> {
        required(object_schema)
            .into_iter()
            .filter(|name| !object.contains_key(*name))
            .map(|name| format!("`{name}`"))
            .collect()
    }

    /// Follow `$ref`s into the schema's `$defs` (a bounded number of hops).
    fn resolve<'a>(&'a self, mut node: &'a Value) -> &'a Value {
        for _ in 0..16 {
            let Some(target) = node.get("$ref").and_then(Value::as_str) else {
                return node;
            };
            let found = target
                .strip_prefix("#/$defs/")
                .and_then(|name| self.schema.get("$defs").and_then(|d| d.get(name)))
                .or_else(|| (target == "#").then_some(&self.schema));
            match found {
                Some(next) => node = next,
                None => return node,
            }
        }
        node
    }

    /// The non-null branch of a nullable `anyOf`/`oneOf`, resolved; the node itself otherwise.
    fn non_null<'a>(&'a self, node: &'a Value) -> &'a Value {
        let node = self.resolve(node);
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = node.get(key) {
                let rest: Vec<&Value> = branches.iter().filter(|b| !is_null_type(b)).collect();
                if rest.len() == 1 && rest.len() < branches.len() {
                    return self.resolve(rest[0]);
                }
            }
        }
        node
    }

    /// The fields of an object schema in words: `` `a` (a string), `b` (optional; an integer) ``.
    /// Required fields come first, in the order the schema lists them (the declaration order),
    /// then the optional ones.
    fn field_list(&self, object: &Value, depth: usize) -> String {
        let Some(Value::Object(props)) = object.get("properties") else {
            return String::new();
        };
        let req = required(object);
        let required_first = req
            .iter()
            .filter_map(|name| props.get_key_value(*name))
            .map(|(name, prop)| (name, prop, true));
        let optional = props
            .iter()
            .filter(|(name, _)| !req.contains(&name.as_str()))
            .map(|(name, prop)| (name, prop, false));
        let parts: Vec<String> = required_first
            .chain(optional)
            .map(|(name, prop, is_required)| {
                let optional = if is_required { "" } else { "optional; " };
                format!(
                    "`{name}` ({optional}{})",
                    self.phrase(prop, false, depth + 1)
                )
            })
            .collect();
        join_and(&parts)
    }

    /// A schema node in words, singular (`a string`) or plural (`strings`).
    fn phrase(&self, node: &Value, plural: bool, depth: usize) -> String {
        let title = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.rsplit('/').next())
            .map(str::to_owned);
        let node = self.resolve(node);
        let title = title.or_else(|| node.get("title").and_then(Value::as_str).map(str::to_owned));
        if let Some(values) = enum_values(node) {
            return format!("one of {}", values.join(", "));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = node.get(key) {
                let non_null: Vec<&Value> = branches.iter().filter(|b| !is_null_type(b)).collect();
                let nullable = non_null.len() < branches.len();
                let inner: Vec<String> = non_null
                    .iter()
                    .map(|b| self.phrase(b, plural, depth + 1))
                    .collect();
                let mut text = inner.join(" or ");
                if nullable {
                    text.push_str(" or null");
                }
                return text;
            }
        }
        let types: Vec<&str> = match node.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if node.get("properties").is_some() => vec!["object"],
            _ => Vec::new(),
        };
        let nullable = types.contains(&"null");
        let mut words: Vec<String> = types
            .iter()
            .filter(|t| **t != "null")
            .map(|t| self.type_phrase(t, node, title.as_deref(), plural, depth))
            .collect();
        if words.is_empty() {
            words.push(
                if plural {
                    "JSON values"
                } else {
                    "any JSON value"
                }
                .to_owned(),
            );
        }
        let mut text = words.join(" or ");
        if nullable {
            text.push_str(" or null");
        }
        text
    }

    fn type_phrase(
        &self,
        ty: &str,
        node: &Value,
        title: Option<&str>,
        plural: bool,
        depth: usize,
    ) -> String {
        let pick = |one: &str, many: &str| if plural { many } else { one }.to_owned();
        match ty {
            "string" => pick("a string", "strings"),
            "integer" => {
                let mut s = pick("an integer", "integers");
                if let Some(min) = node.get("minimum").and_then(Value::as_i64)
                    && min > 0
                {
                    s.push_str(&format!(" of at least {min}"));
                }
                s
            }
            "number" => pick("a number", "numbers"),
            "boolean" => pick("true or false", "booleans (true or false)"),
            "array" => {
                if depth >= MAX_DEPTH {
                    return pick("an array", "arrays");
                }
                let items = node
                    .get("items")
                    .map(|i| self.phrase(i, true, depth + 1))
                    .unwrap_or_else(|| "JSON values".to_owned());
                if plural {
                    format!("arrays of {items}")
                } else {
                    format!("an array of {items}")
                }
            }
            "object" => {
                let mut s = pick("an object", "objects");
                if let Some(t) = title {
                    s.push_str(&format!(" of type `{t}`"));
                }
                if depth < MAX_DEPTH {
                    let fields = self.field_list(node, depth + 1);
                    if !fields.is_empty() {
                        s.push_str(&format!(" with the fields {fields}"));
                    }
                }
                s
            }
            other => format!("of JSON type {other}"),
        }
    }
}

fn short_type_name<T>() -> String {
    let full = std::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_owned()
}

fn is_object(node: &Value) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => {
            ts.iter().any(|t| t == "object") && !ts.iter().any(|t| t == "null")
        }
        _ => node.get("properties").is_some(),
    }
}

fn is_null_type(node: &Value) -> bool {
    node.get("type").and_then(Value::as_str) == Some("null")
}

fn required(object: &Value) -> Vec<&str> {
    match object.get("required") {
        Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// An enum's accepted values, from `enum` or from `anyOf`/`oneOf` branches that are all `const`.
fn enum_values(node: &Value) -> Option<Vec<String>> {
    if let Some(Value::Array(values)) = node.get("enum") {
        return Some(values.iter().map(Value::to_string).collect());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = node.get(key) {
            let consts: Option<Vec<String>> = branches
                .iter()
                .map(|b| {
                    b.get("const")
                        .or_else(|| match b.get("enum") {
                            Some(Value::Array(v)) if v.len() == 1 => v.first(),
                            _ => None,
                        })
                        .map(Value::to_string)
                })
                .collect();
            if let Some(c) = consts.filter(|c| !c.is_empty()) {
                return Some(c);
            }
        }
    }
    None
}

/// The JSON kind of a value, in words, without the value.
fn kind_of(v: &Value) -> &'static str {
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

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
#[path = "shape_tests.rs"]
mod tests;
