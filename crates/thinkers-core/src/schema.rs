//! Schemas built once per Rust type and shared by every user of that type.
//!
//! A thinker, a tool provider or a one-call tool is often constructed per request (a server
//! builds a thinker per incoming question), and generating a JSON Schema walks the type with
//! `schemars` and allocates a tree of values: tens of microseconds each time. The schema of a
//! type never changes within a process, so it is generated on first use and handed out as an
//! [`Arc`] from then on; the trees are shared, not copied, into every request that carries them.

pub mod words;

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, PoisonError, RwLock};

use schemars::JsonSchema;
use serde_json::Value;

type Shared = Arc<dyn Any + Send + Sync>;

static CACHE: LazyLock<RwLock<HashMap<TypeId, Shared>>> = LazyLock::new(Default::default);

/// The value `build` makes for the key type `K`, built once per process and shared. Distinct
/// value types under one key type are distinct entries.
pub fn per_type<K: ?Sized + 'static, V: Send + Sync + 'static>(
    build: impl FnOnce() -> V,
) -> Arc<V> {
    let key = TypeId::of::<(fn() -> Box<K>, V)>();
    if let Some(hit) = CACHE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
        .and_then(|v| Arc::clone(v).downcast::<V>().ok())
    {
        return hit;
    }
    // Built outside the lock: a schema of a type may itself ask for the schemas of others.
    let built = Arc::new(build());
    let mut cache = CACHE.write().unwrap_or_else(PoisonError::into_inner);
    let entry = cache
        .entry(key)
        .or_insert_with(|| Arc::clone(&built) as Shared);
    Arc::clone(entry).downcast::<V>().unwrap_or(built)
}

/// The JSON Schema of `T` (`schemars` defaults), generated once per process.
pub fn of<T: JsonSchema + ?Sized + 'static>() -> Arc<Value> {
    per_type::<T, Value>(|| serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null))
}

/// Decode a value into `T`, reading it in place. Only when that fails is it decoded again with
/// the path of every field tracked, so the error can name where it failed: the path costs an
/// allocation per field, which a value that fits (nearly every one) does not pay.
pub fn decode_tracked<T: serde::de::DeserializeOwned>(
    value: &Value,
) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    match T::deserialize(value) {
        Ok(decoded) => Ok(decoded),
        Err(_) => serde_path_to_error::deserialize(value),
    }
}

/// How deep [`drop_optional_nulls`] follows a schema without descending into the value (chains
/// of `$ref` and single-branch `anyOf`), so a recursive schema cannot loop.
const MAX_SCHEMA_HOPS: usize = 32;

/// `value` with its optional `null` properties removed (see [`drop_optional_nulls`]); borrowed,
/// not copied, when it holds no `null` property at all (nearly always).
pub fn nulls_as_absent<'v>(value: &'v Value, schema: &Value) -> Cow<'v, Value> {
    if !has_null_property(value) {
        return Cow::Borrowed(value);
    }
    let mut out = value.clone();
    drop_optional_nulls(&mut out, schema);
    Cow::Owned(out)
}

/// Remove every `null`-valued property that `schema` declares but does not require, in nested
/// objects and arrays too, following `$ref` into `$defs` or `definitions`.
///
/// OpenAI strict mode turns each optional property into a required, nullable one (see
/// `llm::strict`), so a model answering in strict mode writes `null` for what it leaves out;
/// the decoders read that `null` as the property's absence. A `null` for a property the schema
/// requires is kept (the type may accept it, or its decoder says it does not), and so is a
/// `null` for a property the schema does not declare. Unions of several schemas (other than
/// one schema or `null`) are not entered: which branch applies is the decoder's business.
pub fn drop_optional_nulls(value: &mut Value, schema: &Value) {
    walk(value, schema, schema, 0);
}

fn walk(value: &mut Value, node: &Value, root: &Value, hops: usize) {
    if hops > MAX_SCHEMA_HOPS {
        return;
    }
    let Some(node) = resolve(node, root, hops) else {
        return;
    };
    if let Some(inner) = single_branch(node) {
        walk(value, inner, root, hops + 1);
    }
    match value {
        Value::Object(map) => {
            let extra = node.get("additionalProperties").filter(|a| a.is_object());
            let props = node.get("properties").and_then(Value::as_object);
            if let Some(props) = props {
                let required = node.get("required").and_then(Value::as_array);
                let is_required =
                    |k: &str| required.is_some_and(|r| r.iter().any(|n| n.as_str() == Some(k)));
                map.retain(|k, v| !(v.is_null() && props.contains_key(k) && !is_required(k)));
            }
            for (k, v) in map.iter_mut() {
                if let Some(sub) = props.and_then(|p| p.get(k)).or(extra) {
                    walk(v, sub, root, 0);
                }
            }
        }
        Value::Array(items) => {
            let prefix = node.get("prefixItems").and_then(Value::as_array);
            let rest = node.get("items").filter(|i| i.is_object());
            for (i, item) in items.iter_mut().enumerate() {
                if let Some(sub) = prefix.and_then(|p| p.get(i)).or(rest) {
                    walk(item, sub, root, 0);
                }
            }
        }
        _ => {}
    }
}

/// The schema `node` stands for once its `$ref`s are followed (`#`, `#/$defs/…`,
/// `#/definitions/…`: any JSON pointer into the root); `None` for a reference that leads
/// nowhere.
fn resolve<'a>(mut node: &'a Value, root: &'a Value, hops: usize) -> Option<&'a Value> {
    for _ in hops..=MAX_SCHEMA_HOPS {
        let Some(target) = node.get("$ref").and_then(Value::as_str) else {
            return Some(node);
        };
        node = root.pointer(target.strip_prefix('#')?)?;
    }
    None
}

/// The one schema of an `anyOf`/`oneOf` whose other branches only allow `null` (an `Option`
/// of a composite type), or of a one-part `allOf`.
fn single_branch(node: &Value) -> Option<&Value> {
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = node.get(key).and_then(Value::as_array) {
            let mut others = branches.iter().filter(|b| !allows_only_null(b));
            if let (Some(one), None) = (others.next(), others.next()) {
                return Some(one);
            }
        }
    }
    match node
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        Some([one]) => Some(one),
        _ => None,
    }
}

fn allows_only_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
}

/// Whether any object inside `value` has a `null` property.
fn has_null_property(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.values().any(|v| v.is_null() || has_null_property(v)),
        Value::Array(items) => items.iter().any(has_null_property),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn optional_nulls_go_required_and_undeclared_ones_stay() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": ["string", "null"]},
                "inner": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]},
                "list": {"type": "array", "items": {"$ref": "#/definitions/Item"}}
            },
            "required": ["b"],
            "$defs": {"Inner": {"type": "object", "properties": {"x": {"type": "integer"}}}},
            "definitions": {"Item": {"type": "object", "properties": {"y": {"type": "integer"}},
                "required": []}}
        });
        let value = json!({
            "a": null, "b": null, "extra": null,
            "inner": {"x": null},
            "list": [{"y": null}, {"y": 1}]
        });
        let out = nulls_as_absent(&value, &schema);
        assert_eq!(
            *out,
            json!({"b": null, "extra": null, "inner": {}, "list": [{}, {"y": 1}]})
        );
        let clean = json!({"a": "x"});
        assert!(matches!(nulls_as_absent(&clean, &schema), Cow::Borrowed(_)));
    }

    #[test]
    fn a_recursive_schema_does_not_loop() {
        let schema = json!({"$ref": "#/$defs/Node", "$defs": {"Node": {"anyOf": [
            {"$ref": "#/$defs/Node"}, {"type": "null"}]}}});
        let mut value = json!({"k": null});
        drop_optional_nulls(&mut value, &schema);
        assert_eq!(value, json!({"k": null}));
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Probe {
        term: String,
    }

    #[test]
    fn a_schema_is_built_once_and_shared() {
        let a = of::<Probe>();
        let b = of::<Probe>();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a["properties"]["term"]["type"], "string");
    }

    #[test]
    fn value_types_under_one_key_are_distinct_entries() {
        let n = per_type::<Probe, u32>(|| 7);
        let s = per_type::<Probe, String>(|| "seven".to_owned());
        assert_eq!((*n, s.as_str()), (7, "seven"));
        assert_eq!(*per_type::<Probe, u32>(|| 8), 7, "built once");
    }
}
