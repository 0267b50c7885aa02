//! A generator of JSON values valid for a JSON Schema, and of values that break one.
//!
//! The sim uses it for tool-call arguments and structured answers; it is public so users can
//! produce sample values for their own schemas. It understands the keywords tool and answer
//! schemas use in practice: `type` (single or an array such as `["string", "null"]`, plus
//! OpenAPI's `nullable`), `const`, `enum`, `properties`/`required`/`additionalProperties`/
//! `minProperties`/`maxProperties`/`dependentRequired`, `items`/`prefixItems`/`minItems`/
//! `maxItems`/`uniqueItems`/`contains`, strings with `minLength`/`maxLength`/`format`/`pattern`,
//! numbers with inclusive and exclusive bounds and `multipleOf`, `allOf` (merged), `anyOf`/`oneOf`
//! (one branch chosen), and `$ref` into the same document (`#`, `#/$defs/…`,
//! `#/definitions/…` or any JSON pointer), recursion included.
//!
//! Generation is deterministic for a given random generator state. The `good` flag picks
//! descriptive, upper-range values; when it is off values are terse and lower-range (still
//! valid), which is how the sim's `quality` knob makes models differ in benchmarks.

mod pattern;
mod values;
mod violate;

pub use violate::violate;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value};

/// Below this depth objects are filled generously; past it only what is required is generated.
const SHALLOW: usize = 6;
/// Past this depth generation gives up on a branch (only reached by schemas with unavoidable
/// infinite recursion).
const MAX_DEPTH: usize = 32;

/// Options of one generation.
#[derive(Debug, Clone, Default)]
pub struct SampleOptions {
    /// Descriptive, upper-range values (true) or terse, lower-range ones (false).
    pub good: bool,
    /// Text woven into the first free-text string (the sim passes the conversation's latest
    /// tool result or question, so tests can see it reached the model).
    pub hint: Option<String>,
    /// Words the conversation showed the model (user texts and tool results): a string whose
    /// schema has a `pattern` copies one of those that match it before it invents one.
    pub quotable: Vec<String>,
}

/// A string value chosen from an `enum`, with the values it was chosen over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumChoice {
    /// The chosen value.
    pub chosen: String,
    /// The other values of the enum.
    pub others: Vec<String>,
}

/// A generated value and the enum choices made on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The value.
    pub value: Value,
    /// String enum choices, in generation order.
    pub choices: Vec<EnumChoice>,
}

/// A value valid for `schema`, deterministic for `seed`, with good values.
pub fn sample_value(schema: &Value, seed: u64) -> Value {
    let mut rng = StdRng::seed_from_u64(seed);
    sample_with(
        schema,
        &mut rng,
        SampleOptions {
            good: true,
            ..SampleOptions::default()
        },
    )
    .value
}

/// True when some subschema of `schema` constrains a string with a `pattern`.
pub fn has_pattern(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| (key == "pattern" && value.is_string()) || has_pattern(value)),
        Value::Array(items) => items.iter().any(has_pattern),
        _ => false,
    }
}

/// A value valid for `schema`, drawing from `rng`.
pub fn sample_with(schema: &Value, rng: &mut StdRng, options: SampleOptions) -> Sample {
    let mut generator = Generator {
        root: schema,
        rng,
        good: options.good,
        hint: options.hint,
        quotable: options.quotable,
        label: None,
        depth: 0,
        choices: Vec::new(),
    };
    let value = generator.generate(schema);
    Sample {
        value,
        choices: generator.choices,
    }
}

/// The state of one generation.
pub(crate) struct Generator<'a> {
    root: &'a Value,
    rng: &'a mut StdRng,
    good: bool,
    hint: Option<String>,
    quotable: Vec<String>,
    /// The name of the property being generated, for descriptive strings.
    label: Option<String>,
    depth: usize,
    choices: Vec<EnumChoice>,
}

impl Generator<'_> {
    fn generate(&mut self, schema: &Value) -> Value {
        if self.depth > MAX_DEPTH {
            return Value::Null;
        }
        self.depth += 1;
        let value = match schema {
            Value::Object(map) => self.gen_object_schema(map),
            // `true` and anything malformed accept any value.
            _ => Value::String("value".to_owned()),
        };
        self.depth -= 1;
        value
    }

    fn gen_object_schema(&mut self, map: &Map<String, Value>) -> Value {
        if map.contains_key("$ref") {
            let merged = resolve_refs(self.root, map, 0);
            return self.gen_resolved(&merged);
        }
        self.gen_resolved(map)
    }

    fn gen_resolved(&mut self, map: &Map<String, Value>) -> Value {
        if let Some(value) = map.get("const") {
            return value.clone();
        }
        if let Some(Value::Array(options)) = map.get("enum")
            && !options.is_empty()
        {
            return self.pick_enum(options);
        }
        if let Some(Value::Array(parts)) = map.get("allOf") {
            let mut merged = without(map, "allOf");
            for part in parts {
                if let Value::Object(part) = part {
                    let part = resolve_refs(self.root, part, 0);
                    merged = merge(&merged, &part);
                }
            }
            return self.gen_resolved(&merged);
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = map.get(key)
                && !branches.is_empty()
            {
                let branch = self.pick_branch(branches);
                let base = without(map, key);
                let merged = match &branches[branch] {
                    Value::Object(b) => merge(&base, &resolve_refs(self.root, b, 0)),
                    _ => base,
                };
                return self.gen_resolved(&merged);
            }
        }
        match self.pick_type(map).as_str() {
            "null" => Value::Null,
            "boolean" => Value::Bool(self.good || self.rng.random_bool(0.5)),
            "integer" => self.gen_integer(map),
            "number" => self.gen_number(map),
            "array" => self.gen_array(map),
            "object" => self.gen_object(map),
            _ => self.gen_string(map),
        }
    }

    fn pick_enum(&mut self, options: &[Value]) -> Value {
        let index = if self.good {
            self.rng.random_range(0..options.len())
        } else {
            options.len() - 1
        };
        let chosen = options[index].clone();
        if let Value::String(s) = &chosen {
            let others = options
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != index)
                .filter_map(|(_, v)| v.as_str().map(str::to_owned))
                .collect();
            self.choices.push(EnumChoice {
                chosen: s.clone(),
                others,
            });
        }
        chosen
    }

    /// Picks a branch: at random when shallow; deep down, the first branch that does not recurse.
    fn pick_branch(&mut self, branches: &[Value]) -> usize {
        if self.depth > SHALLOW {
            let simple = branches
                .iter()
                .position(|b| !b.to_string().contains("$ref"));
            if let Some(i) = simple {
                return i;
            }
        }
        self.rng.random_range(0..branches.len())
    }

    /// The type to generate: the declared one (a non-null one when several are allowed, except
    /// that weak generation sometimes picks null), else one inferred from the keywords present.
    fn pick_type(&mut self, map: &Map<String, Value>) -> String {
        let nullable = map.get("nullable").and_then(Value::as_bool) == Some(true);
        let declared: Vec<&str> = match map.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let may_be_null = nullable || declared.contains(&"null");
        if may_be_null && (self.depth > SHALLOW || (!self.good && self.rng.random_bool(0.3))) {
            return "null".to_owned();
        }
        if let Some(t) = declared.iter().find(|t| **t != "null") {
            return (*t).to_owned();
        }
        if declared.contains(&"null") {
            return "null".to_owned();
        }
        let has = |k: &str| map.contains_key(k);
        let inferred = if has("properties") || has("required") || has("additionalProperties") {
            "object"
        } else if has("items") || has("prefixItems") || has("minItems") || has("maxItems") {
            "array"
        } else if has("minimum") || has("maximum") || has("multipleOf") {
            "number"
        } else {
            "string"
        };
        inferred.to_owned()
    }

    fn gen_array(&mut self, map: &Map<String, Value>) -> Value {
        let min = map.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = map
            .get("maxItems")
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        let unique = map.get("uniqueItems").and_then(Value::as_bool) == Some(true);
        let prefix: Vec<Value> = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(p)), _) | (None, Some(Value::Array(p))) => p.clone(),
            _ => Vec::new(),
        };
        let rest = match map.get("items") {
            Some(Value::Array(_)) | None => map.get("additionalItems").cloned(),
            Some(items) => Some(items.clone()),
        };
        let wanted = if self.depth > SHALLOW {
            min
        } else if self.good {
            min.max(2)
        } else {
            min
        };
        let mut count = if prefix.is_empty() {
            wanted
        } else {
            prefix.len().max(min)
        };
        if let Some(max) = max {
            count = count.min(max);
        }
        if rest == Some(Value::Bool(false)) {
            count = count.min(prefix.len());
        }
        let saved_label = self.label.clone();
        let saved_good = self.good;
        let mut out: Vec<Value> = Vec::with_capacity(count);
        let contains = map.get("contains").cloned();
        let mut attempts = 0;
        while out.len() < count && attempts < count * 8 + 8 {
            attempts += 1;
            let i = out.len();
            let schema = if i < prefix.len() {
                prefix[i].clone()
            } else if i == 0
                && let Some(c) = &contains
            {
                match (&rest, c) {
                    (Some(Value::Object(r)), Value::Object(c)) => Value::Object(merge(r, c)),
                    _ => c.clone(),
                }
            } else {
                rest.clone().unwrap_or(Value::Bool(true))
            };
            let item = self.generate(&schema);
            if unique && out.contains(&item) {
                // Weak generation is repetitive by design; vary the next attempt.
                self.good = true;
                continue;
            }
            out.push(item);
        }
        self.label = saved_label;
        self.good = saved_good;
        Value::Array(out)
    }

    fn gen_object(&mut self, map: &Map<String, Value>) -> Value {
        let empty = Map::new();
        let props = map
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let mut required: Vec<String> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let extra = map.get("additionalProperties");
        let extra_allowed = extra != Some(&Value::Bool(false));
        let min_props = map
            .get("minProperties")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let max_props = map
            .get("maxProperties")
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        let shallow = self.depth <= SHALLOW;
        let mut chosen: Vec<String> = Vec::new();
        for name in props.keys() {
            let optional_roll = shallow
                && if self.good {
                    self.rng.random_bool(0.8)
                } else {
                    self.rng.random_bool(0.2)
                };
            if required.contains(name) || optional_roll {
                chosen.push(name.clone());
            }
        }
        // Required names that have no property schema still have to be present.
        for name in &required {
            if !chosen.contains(name) {
                chosen.push(name.clone());
            }
        }
        if let Some(Value::Object(deps)) = map.get("dependentRequired") {
            let mut i = 0;
            while i < chosen.len() {
                if let Some(Value::Array(needed)) = deps.get(&chosen[i]) {
                    for n in needed.iter().filter_map(Value::as_str) {
                        if !chosen.iter().any(|c| c == n) {
                            chosen.push(n.to_owned());
                        }
                    }
                }
                i += 1;
            }
            required.extend(chosen.iter().cloned());
        }
        for name in props.keys() {
            if chosen.len() >= min_props {
                break;
            }
            if !chosen.contains(name) {
                chosen.push(name.clone());
            }
        }
        if let Some(max) = max_props {
            while chosen.len() > max {
                match chosen.iter().rposition(|c| !required.contains(c)) {
                    Some(i) => {
                        chosen.remove(i);
                    }
                    None => break,
                }
            }
        }
        let saved_label = self.label.clone();
        let mut out = Map::new();
        for name in &chosen {
            let schema = props
                .get(name)
                .cloned()
                .or_else(|| extra.filter(|e| e.is_object()).cloned())
                .unwrap_or(Value::Bool(true));
            self.label = Some(name.clone());
            let value = self.generate(&schema);
            out.insert(name.clone(), value);
        }
        let mut n = 1;
        while out.len() < min_props && extra_allowed {
            let schema = extra
                .filter(|e| e.is_object())
                .cloned()
                .unwrap_or(Value::Bool(true));
            self.label = Some(format!("extra_{n}"));
            let value = self.generate(&schema);
            out.insert(format!("extra_{n}"), value);
            n += 1;
        }
        self.label = saved_label;
        Value::Object(out)
    }
}

/// A copy of `map` without `key`.
fn without(map: &Map<String, Value>, key: &str) -> Map<String, Value> {
    let mut copy = map.clone();
    copy.remove(key);
    copy
}

/// Merges two schema objects: `properties` are united (overlay wins per name), `required` is
/// united, other keywords of the overlay replace the base's.
fn merge(base: &Map<String, Value>, overlay: &Map<String, Value>) -> Map<String, Value> {
    let mut out = base.clone();
    for (key, value) in overlay {
        match (key.as_str(), out.get_mut(key), value) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (k, v) in theirs {
                    mine.insert(k.clone(), v.clone());
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for v in theirs {
                    if !mine.contains(v) {
                        mine.push(v.clone());
                    }
                }
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out
}

/// Follows `$ref` (same-document only) and merges the referring schema's other keywords over the
/// target. Unresolvable references become an empty schema (anything goes).
fn resolve_refs(root: &Value, map: &Map<String, Value>, hops: usize) -> Map<String, Value> {
    let Some(reference) = map.get("$ref").and_then(Value::as_str) else {
        return map.clone();
    };
    let siblings = without(map, "$ref");
    if hops > 16 {
        return siblings;
    }
    let target = match reference.strip_prefix('#') {
        Some("") => Some(root),
        Some(pointer) => root.pointer(&decode_pointer(pointer)),
        None => None,
    };
    match target {
        Some(Value::Object(t)) => {
            let resolved = resolve_refs(root, t, hops + 1);
            merge(&resolved, &siblings)
        }
        _ => siblings,
    }
}

/// Undoes the percent-encoding a URI fragment may carry (`%25` → `%`, `%22` → `"`…).
fn decode_pointer(pointer: &str) -> String {
    let bytes = pointer.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = pointer.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| pointer.to_owned())
}

#[cfg(test)]
mod tests;
