//! Reading an answer schema in words for the boundary's refusals, and the model text around an
//! answer (code fences).

use serde_json::Value;

use super::answer::Kind;

/// Follow a same-document `$ref`.
pub(super) fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    let mut cur = schema;
    for _ in 0..8 {
        let Some(r) = cur.get("$ref").and_then(Value::as_str) else {
            return cur;
        };
        let target = r.strip_prefix('#').and_then(|p| {
            if p.is_empty() {
                Some(root)
            } else {
                root.pointer(p)
            }
        });
        match target {
            Some(t) => cur = t,
            None => return cur,
        }
    }
    cur
}

/// A schema in words: accepted values of an enum, or the declared type and its name.
pub(super) fn describe(schema: &Value, root: &Value) -> String {
    let schema = resolve(schema, root);
    let mut values: Vec<String> = schema
        .get("enum")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().map(Value::to_string).collect())
        .unwrap_or_default();
    for key in ["oneOf", "anyOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            let consts: Vec<String> = branches
                .iter()
                .filter_map(|b| resolve(b, root).get("const").map(Value::to_string))
                .collect();
            if !consts.is_empty() && consts.len() == branches.len() {
                values.extend(consts);
            } else if values.is_empty() {
                let parts: Vec<String> = branches
                    .iter()
                    .map(|b| resolve(b, root))
                    .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
                    .map(|b| describe(b, root))
                    .collect();
                let nullable = parts.len() < branches.len();
                let mut text = parts.join(" or ");
                if nullable {
                    text.push_str(" (or null)");
                }
                return text;
            }
        }
    }
    if !values.is_empty() {
        return format!("one of {}", values.join(", "));
    }
    let kind = Kind::of(schema);
    match (kind, schema.get("title").and_then(Value::as_str)) {
        (Kind::Object, Some(title)) => format!("an object of type {title}"),
        (Kind::Array, _) => match schema.get("items") {
            Some(items) => format!("an array of {}", describe(items, root)),
            None => "an array".into(),
        },
        (Kind::Any, _) => "a value of the declared type".into(),
        (k, _) => k.article().into(),
    }
}

/// A JSON answer wrapped in a Markdown code fence, unwrapped.
pub(super) fn strip_fences(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}
