//! Per-dialect schema adaptation, in one place.
//!
//! Providers constrain the JSON Schemas they accept in their strict modes. The runtime generates
//! schemas from Rust types (schemars) without knowing who will read them; the dialects call these
//! functions right before rendering, so a schema is adapted exactly once, here.
//!
//! * [`openai_strict`] — OpenAI `strict: true` (function tools and `json_schema` answers): every
//!   object closes (`additionalProperties: false`) and lists every property in `required`; a
//!   property that was optional becomes nullable instead; `oneOf` becomes `anyOf`; single-branch
//!   `allOf` is merged into its parent; keywords strict mode rejects are removed. The root must be
//!   an object: a missing or non-object tool schema becomes the empty object.
//! * [`closed_objects`] — Anthropic structured answers (`output_config.format`): every object
//!   without an explicit `additionalProperties` is closed; nothing else changes.
//!
//! Removing a keyword only loosens what the provider enforces; the runtime still validates the
//! answer against the original schema.

use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

/// Keywords OpenAI strict mode rejects (or is not documented to accept), removed on adaptation.
const UNSUPPORTED: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "default",
    "examples",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
    "minLength",
    "maxLength",
    "$schema",
    "$id",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentEncoding",
    "contentMediaType",
];

/// Adapt a schema for OpenAI strict mode (see the module docs).
pub(crate) fn openai_strict(schema: &Value) -> Value {
    let mut out = schema.clone();
    if !is_object_schema(&out) {
        return json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false});
    }
    strict_in_place(&mut out);
    out
}

/// How many rendered schemas [`rendered`] keeps before it starts over.
const SHARED_CAPACITY: usize = 256;

/// Rendered schemas by the address of their shared source and the adaptation. The source `Arc`
/// is held with its rendering, so its address cannot be reused for another schema while the
/// entry lives.
type Renderings = foldhash::HashMap<(usize, Adaptation), (Arc<Value>, Arc<Rendered>)>;

static RENDERINGS: LazyLock<Mutex<Renderings>> = LazyLock::new(Default::default);

/// A shared schema adapted for one dialect and serialised, once: a palette and an answer schema
/// are rendered into every request, so after the first turn a request copies these bytes
/// instead of walking the schema again.
#[derive(Debug)]
pub(crate) struct Rendered {
    value: Arc<Value>,
    /// `None` only if the value would not serialise (it is then written, and fails, as a value).
    json: Option<Box<RawValue>>,
}

impl Rendered {
    /// The adapted schema.
    #[cfg(test)]
    pub(crate) fn value(&self) -> &Arc<Value> {
        &self.value
    }

    /// The length of its compact JSON text, exactly as a request carries it.
    pub(crate) fn json_len(&self) -> usize {
        match &self.json {
            Some(raw) => raw.get().len(),
            None => json_len(&self.value),
        }
    }
}

impl Serialize for Rendered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.json {
            Some(raw) => raw.serialize(s),
            None => self.value.serialize(s),
        }
    }
}

/// A shared schema adapted and serialised, computed once per source (see [`Rendered`]). The
/// sources are built once per type (see [`crate::llm::ToolSpec::parameters`]), so after the
/// first turn this is a lookup.
pub(crate) fn rendered(schema: &Arc<Value>, adaptation: Adaptation) -> Arc<Rendered> {
    let key = (Arc::as_ptr(schema) as usize, adaptation);
    let mut cache = RENDERINGS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((source, out)) = cache.get(&key)
        && Arc::ptr_eq(source, schema)
    {
        return Arc::clone(out);
    }
    let value = match adaptation {
        Adaptation::AsIs if !has_root_metadata(schema) => Arc::clone(schema),
        Adaptation::AsIs => Arc::new(without_root_metadata(schema)),
        Adaptation::OpenAiStrict => Arc::new(openai_strict(&without_root_metadata(schema))),
        Adaptation::ClosedObjects => Arc::new(closed_objects(&without_root_metadata(schema))),
    };
    let json = serde_json::value::to_raw_value(value.as_ref()).ok();
    let out = Arc::new(Rendered { value, json });
    if cache.len() >= SHARED_CAPACITY {
        cache.clear();
    }
    cache.insert(key, (Arc::clone(schema), Arc::clone(&out)));
    out
}

/// Root keywords that say nothing to a model about what to write: the Rust type's name that
/// schemars puts in `title`, and the `$schema` draft URI. Every adaptation drops them, so no
/// request pays for them.
const ROOT_METADATA: &[&str] = &["title", "$schema"];

fn has_root_metadata(schema: &Value) -> bool {
    schema
        .as_object()
        .is_some_and(|m| ROOT_METADATA.iter().any(|k| m.contains_key(*k)))
}

fn without_root_metadata(schema: &Value) -> Value {
    let mut out = schema.clone();
    if let Some(m) = out.as_object_mut() {
        for k in ROOT_METADATA {
            m.remove(*k);
        }
    }
    out
}

/// The length of a shared schema's JSON text, measured once per source (see [`rendered`]): what
/// a cheap size bound of a request adds for each schema it carries.
pub(crate) fn shared_json_len(schema: &Arc<Value>) -> usize {
    rendered(schema, Adaptation::AsIs).json_len()
}

/// The length of a value's compact JSON text, counted as serde_json writes it (the text itself
/// is not kept).
pub(crate) fn json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// Which adaptation [`rendered`] (and [`shared`]) applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Adaptation {
    /// None: the schema as it is.
    AsIs,
    /// [`openai_strict`].
    OpenAiStrict,
    /// [`closed_objects`].
    ClosedObjects,
}

/// Close every object that does not say whether it allows more properties (Anthropic answers).
pub(crate) fn closed_objects(schema: &Value) -> Value {
    let mut out = schema.clone();
    close_in_place(&mut out);
    out
}

fn is_object_schema(v: &Value) -> bool {
    v.as_object().is_some_and(map_is_object_schema)
}

fn map_is_object_schema(m: &Map<String, Value>) -> bool {
    match m.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        _ => m.contains_key("properties"),
    }
}

fn strict_in_place(v: &mut Value) {
    let Some(m) = v.as_object_mut() else {
        return;
    };
    merge_single_all_of(m);
    if let Some(one_of) = m.remove("oneOf") {
        m.entry("anyOf").or_insert(one_of);
    }
    for k in UNSUPPORTED {
        m.remove(*k);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = m.get_mut(key)
            && sub.is_object()
        {
            strict_in_place(sub);
        }
    }
    for key in ["anyOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = m.get_mut(key) {
            subs.iter_mut().for_each(strict_in_place);
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(defs)) = m.get_mut(key) {
            defs.values_mut().for_each(strict_in_place);
        }
    }
    if !map_is_object_schema(m) {
        return;
    }
    let required: Vec<String> = match m.get("required") {
        Some(Value::Array(r)) => r
            .iter()
            .filter_map(|s| s.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    let mut all = Vec::new();
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            strict_in_place(prop);
            if !required.contains(name) {
                make_nullable(prop);
            }
            all.push(Value::String(name.clone()));
        }
    } else {
        m.insert("properties".into(), Value::Object(Map::new()));
    }
    m.insert("required".into(), Value::Array(all));
    m.insert("additionalProperties".into(), Value::Bool(false));
}

fn merge_single_all_of(m: &mut Map<String, Value>) {
    let Some(Value::Array(parts)) = m.remove("allOf") else {
        return;
    };
    for part in parts {
        if let Value::Object(pm) = part {
            for (k, v) in pm {
                m.entry(k).or_insert(v);
            }
        }
    }
}

fn make_nullable(prop: &mut Value) {
    let Some(m) = prop.as_object_mut() else {
        return;
    };
    match m.get_mut("type") {
        Some(Value::String(t)) => {
            if t != "null" {
                let t = std::mem::take(t);
                m.insert("type".into(), json!([t, "null"]));
            }
        }
        Some(Value::Array(ts)) => {
            if !ts.iter().any(|t| t == "null") {
                ts.push(Value::String("null".into()));
            }
        }
        _ => {
            if let Some(Value::Array(branches)) = m.get_mut("anyOf") {
                if !branches
                    .iter()
                    .any(|b| b.get("type") == Some(&json!("null")))
                {
                    branches.push(json!({"type": "null"}));
                }
            } else {
                let inner = Value::Object(std::mem::take(m));
                m.insert("anyOf".into(), json!([inner, {"type": "null"}]));
            }
            return;
        }
    }
    if let Some(Value::Array(values)) = m.get_mut("enum")
        && !values.iter().any(Value::is_null)
    {
        values.push(Value::Null);
    }
}

fn close_in_place(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if map_is_object_schema(m) {
                m.entry("additionalProperties")
                    .or_insert(Value::Bool(false));
            }
            m.values_mut().for_each(close_in_place);
        }
        Value::Array(items) => items.iter_mut().for_each(close_in_place),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_properties_become_required_and_nullable() {
        let s = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1},
                "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
                "when": {"$ref": "#/$defs/When"},
                "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}
            },
            "required": ["city"],
            "$defs": {"When": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}
        });
        let mut out = openai_strict(&s);
        // The order of `required` follows the map's iteration order; compare it as a set.
        let mut required: Vec<String> =
            serde_json::from_value(out["required"].take()).unwrap_or_default();
        required.sort();
        assert_eq!(required, ["city", "tags", "unit", "when"]);
        out["required"] = json!(["city", "unit", "when", "tags"]);
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": ["string", "null"], "enum": ["c", "f", null]},
                    "when": {"anyOf": [{"$ref": "#/$defs/When"}, {"type": "null"}]},
                    "tags": {"type": ["array", "null"], "items": {
                        "type": "object", "properties": {"k": {"type": ["string", "null"]}},
                        "required": ["k"], "additionalProperties": false}}
                },
                "required": ["city", "unit", "when", "tags"],
                "additionalProperties": false,
                "$defs": {"When": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}
            })
        );
    }

    #[test]
    fn a_missing_tool_schema_becomes_the_empty_object() {
        let out = openai_strict(&Value::Null);
        assert_eq!(out["additionalProperties"], false);
        assert_eq!(out["required"], json!([]));
    }

    #[test]
    fn closing_objects_keeps_explicit_choices() {
        let s = json!({"type": "object", "properties": {
            "a": {"type": "object", "additionalProperties": true},
            "b": {"type": "object", "properties": {}}}});
        let out = closed_objects(&s);
        assert_eq!(out["additionalProperties"], false);
        assert_eq!(out["properties"]["a"]["additionalProperties"], true);
        assert_eq!(out["properties"]["b"]["additionalProperties"], false);
    }
}
