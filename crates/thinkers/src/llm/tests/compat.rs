//! What each OpenAI-family target is sent where servers differ: the `content` of an assistant
//! turn that only calls tools, and how a structured answer is asked for.

use serde_json::{Value, json};

use super::fixtures;
use crate::llm::{ChatRequest, Dialect, StructuredOutput, ToolChoice, WireTarget, encode};

fn body(target: &WireTarget, req: &ChatRequest) -> anyhow::Result<Value> {
    Ok(serde_json::from_slice(&encode(target, req)?.body)?)
}

/// The assistant messages of a body.
fn assistant_turns(v: &Value) -> Vec<&Value> {
    v["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "assistant")
        .collect()
}

#[test]
fn a_tool_call_turn_always_has_a_content_key() -> anyhow::Result<()> {
    let req = fixtures::silent_tool_round();
    // OpenAI documents `null` for a turn that only calls tools.
    let v = body(&fixtures::target(Dialect::OpenAi), &req)?;
    let turns = assistant_turns(&v);
    assert_eq!(turns.len(), 1, "{v}");
    assert_eq!(turns[0].get("content"), Some(&Value::Null), "{v}");
    assert_eq!(turns[0]["tool_calls"].as_array().map(Vec::len), Some(2));
    // llama.cpp-family templates need the key and llama-cpp-python refuses `null`.
    let v = body(&fixtures::target(Dialect::OpenAiCompatible), &req)?;
    let turns = assistant_turns(&v);
    assert_eq!(turns.len(), 1, "{v}");
    assert_eq!(turns[0].get("content"), Some(&json!("")), "{v}");
    // A turn with text keeps its text.
    let v = body(
        &fixtures::target(Dialect::OpenAiCompatible),
        &fixtures::tool_round(),
    )?;
    assert_eq!(assistant_turns(&v)[0]["content"], "Checking.");
    Ok(())
}

fn compatible(mode: StructuredOutput) -> WireTarget {
    fixtures::target(Dialect::OpenAiCompatible).with_structured_output(mode)
}

fn system_text(v: &Value) -> &str {
    v["messages"][0]["content"].as_str().unwrap_or_default()
}

/// The fixture's answer schema, exactly as the request holds it (not strict-adapted).
fn answer_schema() -> Value {
    fixtures::structured()
        .response
        .map(|r| r.schema.as_ref().clone())
        .unwrap_or_default()
}

#[test]
fn a_compatible_server_gets_json_schema_by_default() -> anyhow::Result<()> {
    let target = fixtures::target(Dialect::OpenAiCompatible);
    assert_eq!(target.structured_output, StructuredOutput::JsonSchema);
    let v = body(&target, &fixtures::structured())?;
    assert_eq!(
        v["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "invoice", "schema": answer_schema()}}),
        "{v}"
    );
    // Not repeated in the prompt.
    assert_eq!(system_text(&v), "You are terse.");
    Ok(())
}

#[test]
fn json_object_mode_attaches_the_schema() -> anyhow::Result<()> {
    let v = body(
        &compatible(StructuredOutput::JsonObject),
        &fixtures::structured(),
    )?;
    assert_eq!(
        v["response_format"],
        json!({"type": "json_object", "schema": answer_schema()}),
        "{v}"
    );
    assert_eq!(system_text(&v), "You are terse.");
    Ok(())
}

#[test]
fn prompt_mode_puts_the_schema_in_the_system_prompt() -> anyhow::Result<()> {
    let v = body(
        &compatible(StructuredOutput::Prompt),
        &fixtures::structured(),
    )?;
    assert!(v.get("response_format").is_none(), "{v}");
    assert!(system_text(&v).contains("\n<response_schema>\n"), "{v}");
    Ok(())
}

#[test]
fn callable_tools_keep_the_schema_in_the_prompt() -> anyhow::Result<()> {
    let mut req = fixtures::with_tools();
    req.response = fixtures::structured().response;
    for mode in [StructuredOutput::JsonSchema, StructuredOutput::JsonObject] {
        for native in [true, false] {
            let v = body(&compatible(mode).with_native_tools(native), &req)?;
            assert!(v.get("response_format").is_none(), "{mode} {native}: {v}");
            assert!(
                system_text(&v).contains("\n<response_schema>\n"),
                "{mode} {native}: {v}"
            );
        }
        // Tools the model may not call do not stand in the way.
        let mut no_calls = req.clone();
        no_calls.tool_choice = ToolChoice::None;
        let v = body(&compatible(mode), &no_calls)?;
        assert!(v.get("response_format").is_some(), "{mode}: {v}");
    }
    Ok(())
}

#[test]
fn openai_ignores_the_setting() -> anyhow::Result<()> {
    let target =
        fixtures::target(Dialect::OpenAi).with_structured_output(StructuredOutput::JsonObject);
    let v = body(&target, &fixtures::structured())?;
    assert_eq!(v["response_format"]["type"], "json_schema");
    assert_eq!(v["response_format"]["json_schema"]["strict"], true);
    Ok(())
}

#[test]
fn a_server_that_cannot_stream_tool_calls_is_asked_for_them_whole() -> anyhow::Result<()> {
    let streamed = |target: &WireTarget, req: &ChatRequest| -> anyhow::Result<(bool, bool)> {
        let enc = crate::llm::codec::encode_with(target, req, true)?;
        let v: Value = serde_json::from_slice(&enc.body)?;
        Ok((enc.plan.stream, v.get("stream") == Some(&json!(true))))
    };
    let tools = fixtures::tool_round();
    let plain = fixtures::plain();
    let limited = fixtures::target(Dialect::OpenAiCompatible).with_stream_tools(false);
    // Tools offered: asked whole, read whole.
    assert_eq!(streamed(&limited, &tools)?, (false, false));
    // No tools, or tools the model may not call: streamed as usual.
    assert_eq!(streamed(&limited, &plain)?, (true, true));
    let mut none = tools.clone();
    none.tool_choice = ToolChoice::None;
    assert_eq!(streamed(&limited, &none)?, (true, true));
    // Text tools are plain text on the wire: streamed.
    assert_eq!(
        streamed(&limited.with_native_tools(false), &tools)?,
        (true, true)
    );
    // The default, and OpenAI proper whatever the setting: streamed.
    let default = fixtures::target(Dialect::OpenAiCompatible);
    assert_eq!(streamed(&default, &tools)?, (true, true));
    let openai = fixtures::target(Dialect::OpenAi).with_stream_tools(false);
    assert_eq!(streamed(&openai, &tools)?, (true, true));
    Ok(())
}
