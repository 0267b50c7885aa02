//! The OpenAI dialect's request bodies validate against the official OpenAPI specification
//! (the extract under `shared/specs/`), with OpenAPI's `nullable: true` turned into a JSON Schema
//! type union, plus a known-keys check the specification cannot do (it allows unknown fields).

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::{Value, json};

use super::fixtures;
use crate::llm::{ChatRequest, Dialect, Reasoning, encode};

const SPEC: &str = "shared/specs/openai-chat-completions.openapi.json";

/// `shared/` sits beside the workspace root (for the main checkout, worktrees and CI clones).
fn spec_path() -> anyhow::Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .map(|dir| dir.join(SPEC))
        .find(|p| p.is_file())
        .with_context(|| format!("{SPEC} not found above {}", manifest.display()))
}

fn nullable_to_union(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.remove("nullable") == Some(Value::Bool(true)) {
                match m.get_mut("type") {
                    Some(Value::String(t)) => {
                        let t = t.clone();
                        m.insert("type".into(), json!([t, "null"]));
                    }
                    Some(Value::Array(ts)) => ts.push(json!("null")),
                    _ => {
                        let inner = Value::Object(std::mem::take(m));
                        m.insert("anyOf".into(), json!([inner, {"type": "null"}]));
                    }
                }
                if let Some(Value::Array(e)) = m.get_mut("enum") {
                    e.push(Value::Null);
                }
            }
            m.values_mut().for_each(nullable_to_union);
        }
        Value::Array(items) => items.iter_mut().for_each(nullable_to_union),
        _ => {}
    }
}

fn collect_properties(spec: &Value, schema: &Value, out: &mut BTreeSet<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/components/schemas/");
        collect_properties(spec, &spec["components"]["schemas"][name], out);
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        out.extend(props.keys().cloned());
    }
    for key in ["allOf", "anyOf"] {
        for part in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_properties(spec, part, out);
        }
    }
}

#[test]
fn openai_bodies_validate_against_the_specification() -> anyhow::Result<()> {
    let mut spec: Value = serde_json::from_str(&std::fs::read_to_string(spec_path()?)?)?;
    nullable_to_union(&mut spec);
    let root = json!({
        "components": spec["components"],
        "$ref": "#/components/schemas/CreateChatCompletionRequest",
    });
    let validator = jsonschema::draft202012::new(&root)
        .map_err(|e| anyhow::anyhow!("the specification did not compile: {e}"))?;
    let mut known = BTreeSet::new();
    collect_properties(
        &spec,
        &spec["components"]["schemas"]["CreateChatCompletionRequest"],
        &mut known,
    );
    assert!(known.contains("max_completion_tokens") && known.contains("tools"));

    let mut streaming = fixtures::everything();
    streaming.stream = true;
    let mut reasoning = fixtures::with_tools();
    reasoning.reasoning = Reasoning::Tokens(20_000);
    let mut text_tools = fixtures::tool_round();
    text_tools.response = fixtures::structured().response;
    let cases: Vec<(&str, Dialect, bool, ChatRequest)> = vec![
        ("plain", Dialect::OpenAi, true, fixtures::plain()),
        ("tools", Dialect::OpenAi, true, fixtures::with_tools()),
        ("tool round", Dialect::OpenAi, true, fixtures::tool_round()),
        ("everything streaming", Dialect::OpenAi, true, streaming),
        ("reasoning", Dialect::OpenAi, true, reasoning),
        ("structured", Dialect::OpenAi, true, fixtures::structured()),
        ("media", Dialect::OpenAi, true, fixtures::media()),
        ("text tools", Dialect::OpenAi, false, text_tools),
        (
            "tool calls without text",
            Dialect::OpenAi,
            true,
            fixtures::silent_tool_round(),
        ),
        (
            "compatible tool calls without text",
            Dialect::OpenAiCompatible,
            true,
            fixtures::silent_tool_round(),
        ),
        (
            "compatible structured",
            Dialect::OpenAiCompatible,
            true,
            fixtures::structured(),
        ),
        (
            "compatible",
            Dialect::OpenAiCompatible,
            true,
            fixtures::everything(),
        ),
    ];
    let mut bad = Vec::new();
    for (name, dialect, native, req) in cases {
        let target = fixtures::target(dialect)
            .with_native_tools(native)
            .with_thinking(true);
        let body: Value = serde_json::from_slice(&encode(&target, &req)?.body)?;
        for e in validator.iter_errors(&body) {
            bad.push(format!("{name}: {e} at {}", e.instance_path()));
        }
        for key in body.as_object().into_iter().flat_map(|m| m.keys()) {
            if !known.contains(key) {
                bad.push(format!("{name}: unknown field `{key}`"));
            }
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");

    // The validator is not vacuous: a wrong value fails.
    let mut wrong: Value = serde_json::from_slice(
        &encode(&fixtures::target(Dialect::OpenAi), &fixtures::with_tools())?.body,
    )?;
    wrong["tool_choice"] = json!("sometimes");
    assert!(!validator.is_valid(&wrong));
    Ok(())
}
