//! Values that break a schema, for the `invalid_tool_args` fault.
//!
//! Starting from a valid sample, the first applicable change is made: drop a required property;
//! give a typed property a value of another type (or a value outside its enum); add a property
//! where `additionalProperties` is false; finally, answer a value of the wrong root type.

use rand::rngs::StdRng;
use serde_json::{Map, Value, json};

use super::{SampleOptions, resolve_refs, sample_with};

/// A value that is *not* valid for `schema`, with a short description of what is wrong.
///
/// Schemas that accept everything (`{}`, `true`) cannot be broken; the value returned then is a
/// string, which is only wrong when the schema demands another type.
pub fn violate(schema: &Value, rng: &mut StdRng) -> (Value, String) {
    let valid = sample_with(
        schema,
        rng,
        SampleOptions {
            good: true,
            hint: None,
            ..SampleOptions::default()
        },
    )
    .value;
    let Value::Object(root) = schema else {
        return (
            json!("invalid arguments"),
            "a value of the wrong type".into(),
        );
    };
    let root = resolve_refs(schema, root, 0);
    let allowed = types_of(&root);
    if let Value::Object(mut obj) = valid {
        if let Some(name) = root
            .get("required")
            .and_then(Value::as_array)
            .and_then(|r| r.first())
            .and_then(Value::as_str)
        {
            obj.remove(name);
            return (
                Value::Object(obj),
                format!("the required field `{name}` is missing"),
            );
        }
        if let Some(Value::Object(props)) = root.get("properties") {
            for (name, prop) in props {
                let Value::Object(prop) = prop else { continue };
                let prop = resolve_refs(schema, prop, 0);
                if let Some(bad) = wrong_value_for(&prop) {
                    obj.insert(name.clone(), bad);
                    return (
                        Value::Object(obj),
                        format!("the field `{name}` has a value of the wrong type"),
                    );
                }
            }
        }
        if root.get("additionalProperties") == Some(&Value::Bool(false)) {
            obj.insert("unexpected_field".into(), json!(true));
            return (
                Value::Object(obj),
                "an undeclared field `unexpected_field` is present".into(),
            );
        }
    }
    let bad = if allowed.is_empty() || allowed.iter().any(|t| t == "string") {
        json!(12345)
    } else {
        json!("invalid arguments")
    };
    (bad, "a value of the wrong type".into())
}

fn types_of(map: &Map<String, Value>) -> Vec<String> {
    match map.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// A value a property schema rejects, when one can be named from its `type` or `enum`.
fn wrong_value_for(prop: &Map<String, Value>) -> Option<Value> {
    let allowed = types_of(prop);
    if allowed.is_empty() {
        return prop
            .get("enum")
            .map(|_| json!("not-one-of-the-options"))
            .or_else(|| prop.get("const").map(|_| json!("not-the-constant")));
    }
    let accepts = |t: &str| {
        allowed.iter().any(|a| a == t) || (t == "integer" && allowed.iter().any(|a| a == "number"))
    };
    let candidates = [
        ("string", json!("not-a-valid-value")),
        ("integer", json!(12345)),
        ("boolean", json!(true)),
        ("object", json!({"unexpected": true})),
    ];
    candidates
        .into_iter()
        .find(|(t, _)| !accepts(t))
        .map(|(_, v)| v)
}
