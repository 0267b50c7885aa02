//! A JSON Schema read out in words, and where a decoder failed said in the schema's terms.
//!
//! Every boundary that refuses what a model sent (a one-call tool's answer, a thinker's final
//! answer, a tool's arguments) composes its refusal here, so that one rule holds for all of
//! them: a refusal names only what the schema declares — field names, indexes, the declared
//! kinds, an enum's accepted values — and never repeats anything the model wrote. That covers
//! keys as well as values: a key the model invented (an entry of a map, a field a type does not
//! declare) is never named; the refusal says "an entry" or lists the declared fields instead.
//! The decoder's own complaint, which quotes both, is left to the caller's error source.

use serde_json::Value;
use serde_path_to_error::Segment;

/// How deep descriptions of nested schemas go before they stop naming inner parts.
const MAX_DEPTH: usize = 4;

/// How many `$ref` hops are followed before a reference is taken as it stands.
const MAX_HOPS: usize = 16;

/// A schema, read in words. `root` is the document its `$ref`s point into.
#[derive(Debug, Clone, Copy)]
pub struct SchemaWords<'a> {
    root: &'a Value,
}

/// One step of a path into a value.
#[derive(Debug, Clone, Copy)]
enum Step<'s> {
    /// A key of an object.
    Key(&'s str),
    /// An index into an array.
    Index(usize),
    /// A JSON pointer segment that reads as a number: an index into an array, else a key.
    Number(usize),
    /// The variant of an externally tagged enum (one the type declares).
    Variant(&'s str),
}

impl<'a> SchemaWords<'a> {
    /// The words of the schema document `root`.
    pub fn new(root: &'a Value) -> Self {
        Self { root }
    }

    /// Where and why a decoder refused a value of this schema. The decoder's message is read
    /// only for the name of a missing field, which is a name the type declares.
    pub fn misfit(&self, e: &serde_path_to_error::Error<serde_json::Error>) -> Misfit {
        let steps = e.path().iter().filter_map(|seg| match seg {
            Segment::Map { key } => Some(Step::Key(key)),
            Segment::Seq { index } => Some(Step::Index(*index)),
            Segment::Enum { variant } => Some(Step::Variant(variant)),
            Segment::Unknown => None,
        });
        let place = self.locate(steps);
        let inner = e.inner().to_string();
        let missing = inner
            .strip_prefix("missing field `")
            .and_then(|s| s.split('`').next());
        if let Some(declared) = place.undeclared {
            return Misfit {
                at: place.shown,
                what: What::Undeclared { declared },
            };
        }
        match missing {
            // The name comes from the decoder, which takes it from the type, never the value.
            Some(field) => {
                let expected = place
                    .node
                    .and_then(|parent| self.property(self.non_null(parent), field))
                    .map(|p| self.phrase(p, false, 1));
                Misfit {
                    at: join(&place.shown, field),
                    what: What::Missing { expected },
                }
            }
            None => {
                let depth = usize::from(!place.shown.is_empty());
                Misfit {
                    what: What::Mistyped {
                        expected: place.node.map(|n| self.phrase(n, false, depth)),
                    },
                    at: place.shown,
                }
            }
        }
    }

    /// Follow `steps` through the schema: the node reached (if the schema says what is there),
    /// the path as it may be shown, and — when the last step was a key the object does not
    /// declare and admits no others — the declared fields.
    fn locate<'s>(&self, steps: impl Iterator<Item = Step<'s>>) -> Place<'a> {
        let mut node = Some(self.resolve(self.root));
        let mut shown = String::new();
        let mut undeclared = None;
        for step in steps {
            let Some(cur) = node else { break };
            let cur = self.non_null(cur);
            match step {
                Step::Key(key) => {
                    (node, undeclared) = self.enter_key(cur, key, &mut shown);
                }
                Step::Index(index) | Step::Number(index) if is_array(cur) => {
                    shown.push_str(&format!("[{index}]"));
                    node = cur
                        .get("items")
                        .filter(|i| i.is_object())
                        .map(|v| self.resolve(v));
                }
                Step::Index(index) => {
                    shown.push_str(&format!("[{index}]"));
                    node = None;
                }
                // A pointer segment that reads as a number names a key of an object.
                Step::Number(index) => {
                    (node, undeclared) = self.enter_key(cur, &index.to_string(), &mut shown);
                }
                // An externally tagged variant `{"Variant": {…}}`: the branch declaring it.
                Step::Variant(variant) => {
                    if let Some(prop) = self.variant(cur, variant) {
                        shown = join(&shown, variant);
                        node = Some(prop);
                    }
                }
            }
        }
        Place {
            node,
            shown,
            undeclared,
        }
    }

    /// Step into `key` of the object schema `cur`: a declared property is named, an entry of a
    /// map is called an entry, and a key the object does not admit ends the walk with the
    /// object's declared fields.
    fn enter_key(
        &self,
        cur: &'a Value,
        key: &str,
        shown: &mut String,
    ) -> (Option<&'a Value>, Option<String>) {
        if let Some(prop) = self.property(cur, key) {
            *shown = join(shown, key);
            return (Some(prop), None);
        }
        match cur.get("additionalProperties") {
            Some(extra) if extra.is_object() => {
                shown.push_str(if shown.is_empty() {
                    "an entry"
                } else {
                    " entry"
                });
                (Some(self.resolve(extra)), None)
            }
            _ => (None, Some(self.field_list(cur, 0))),
        }
    }

    /// The schema of `variant` among `node`'s branches that each declare one property.
    fn variant<'n>(&self, node: &'n Value, variant: &str) -> Option<&'n Value>
    where
        'a: 'n,
    {
        ["oneOf", "anyOf"]
            .iter()
            .filter_map(|k| node.get(*k).and_then(Value::as_array))
            .flatten()
            .find_map(|b| self.property(self.resolve(b), variant))
    }

    /// The declared shape of the whole document in words, for a type called `type_name`: for
    /// example ``a JSON object of type `Verdict` with the fields `ok` (true or false)``.
    pub fn describe(&self, type_name: &str) -> String {
        let root = self.resolve(self.root);
        if is_object(root) {
            let fields = self.field_list(root, 0);
            if fields.is_empty() {
                format!("a JSON object of type `{type_name}`")
            } else {
                format!("a JSON object of type `{type_name}` with the fields {fields}")
            }
        } else {
            format!(
                "{} (the declared type `{type_name}`)",
                self.phrase(root, false, 0)
            )
        }
    }

    /// The required fields of `object_schema` that `object` lacks, each in backticks.
    pub fn missing_required(
        &self,
        object_schema: &Value,
        object: &serde_json::Map<String, Value>,
    ) -> Vec<String> {
        required(object_schema)
            .into_iter()
            .filter(|name| !object.contains_key(*name))
            .map(|name| format!("`{name}`"))
            .collect()
    }

    /// Follow `$ref`s (any JSON pointer into the root, a bounded number of hops).
    pub fn resolve<'n>(&self, mut node: &'n Value) -> &'n Value
    where
        'a: 'n,
    {
        for _ in 0..MAX_HOPS {
            let Some(target) = node.get("$ref").and_then(Value::as_str) else {
                return node;
            };
            let found = target.strip_prefix('#').and_then(|p| {
                if p.is_empty() {
                    Some(self.root)
                } else {
                    self.root.pointer(p)
                }
            });
            match found {
                Some(next) => node = next,
                None => return node,
            }
        }
        node
    }

    /// The non-null branch of a nullable `anyOf`/`oneOf`, resolved; the node itself otherwise.
    fn non_null<'n>(&self, node: &'n Value) -> &'n Value
    where
        'a: 'n,
    {
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

    fn property<'n>(&self, object: &'n Value, name: &str) -> Option<&'n Value>
    where
        'a: 'n,
    {
        object
            .get("properties")
            .and_then(|p| p.get(name))
            .map(|v| self.resolve(v))
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
    pub(crate) fn phrase(&self, node: &Value, plural: bool, depth: usize) -> String {
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
                    .filter(|i| i.is_object())
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
                    } else if let Some(extra) =
                        node.get("additionalProperties").filter(|e| e.is_object())
                    {
                        s.push_str(&format!(
                            " whose entries are {}",
                            self.phrase(extra, true, depth + 1)
                        ));
                    }
                }
                s
            }
            other => format!("of JSON type {other}"),
        }
    }
}

/// What [`SchemaWords::locate`] found.
struct Place<'a> {
    node: Option<&'a Value>,
    shown: String,
    undeclared: Option<String>,
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// Whether a schema node is an object type (and not nullable).
pub fn is_object(node: &Value) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => {
            ts.iter().any(|t| t == "object") && !ts.iter().any(|t| t == "null")
        }
        _ => node.get("properties").is_some(),
    }
}

fn is_array(node: &Value) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "array"),
        _ => node.get("items").is_some(),
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

/// `a`, `a and b`, `a, b and c`.
pub fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

mod misfit;
mod violations;

pub use misfit::{Misfit, What};

#[cfg(test)]
#[path = "words_tests.rs"]
mod tests;
