//! `#[thinkers::tool]`: what the attribute makes of an `async fn`, seen through the provider a
//! palette uses and run through a dispatcher.

use serde_json::json;
use thinkers::tool::{Tool, ToolCallContext, ToolContext, ToolProvider, TypedToolProvider};

use crate::support::dispatcher;

/// Add two numbers.
#[thinkers::tool(read_only, params(a = "The first addend", b = "The second addend"))]
async fn add(a: i64, b: i64) -> thinkers::Result<i64> {
    Ok(a + b)
}

/// Greet someone, by their title when given.
///
/// Says hello.
#[thinkers::tool(name = "greet_person", idempotent)]
async fn greet(
    cx: &ToolContext<'_>,
    name: String,
    title: Option<String>,
) -> thinkers::Result<String> {
    // Run directly by code, the call has no idempotency key.
    assert_eq!(cx.idempotency_key(), None);
    Ok(match title {
        Some(title) => format!("Hello, {title} {name}"),
        None => format!("Hello, {name}"),
    })
}

#[tokio::test]
async fn the_fn_becomes_a_typed_tool_with_its_doc_and_parameters() {
    let provider = TypedToolProvider::new(add);
    assert_eq!(provider.name(), "add");
    assert_eq!(provider.description(), "Add two numbers.");
    assert!(provider.read_only());
    let schema = provider.input_schema();
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    assert_eq!(schema["properties"]["a"]["description"], "The first addend");
    assert_eq!(schema["required"], json!(["a", "b"]));
    let (d, _) = dispatcher();
    let job = provider
        .instantiate(&json!({"a": 2, "b": 40}), &ToolCallContext::default())
        .unwrap();
    assert_eq!(d.run(job).await.unwrap().json, json!(42));
    // The body stays callable as a function.
    assert_eq!(add::run(1, 2).await.unwrap(), 3);
}

#[tokio::test]
async fn a_context_parameter_an_option_and_a_renamed_tool() {
    assert_eq!(<greet as Tool>::NAME, "greet_person");
    let provider = TypedToolProvider::new(greet);
    assert_eq!(
        provider.description(),
        "Greet someone, by their title when given.\n\nSays hello."
    );
    assert!(!provider.read_only(), "not read-only unless it says so");
    assert!(provider.idempotent(), "idempotent as it says");
    assert!(
        !TypedToolProvider::new(add).idempotent(),
        "not idempotent unless it says so"
    );
    let schema = provider.input_schema();
    assert!(schema["properties"].get("cx").is_none(), "{schema}");
    assert_eq!(schema["required"], json!(["name"]));
    let (d, _) = dispatcher();
    let cx = ToolCallContext::default();
    let job = provider.instantiate(&json!({"name": "Ada"}), &cx).unwrap();
    assert_eq!(d.run(job).await.unwrap().json, json!("Hello, Ada"));
    let job = provider
        .instantiate(&json!({"name": "Ada", "title": "Dr"}), &cx)
        .unwrap();
    assert_eq!(d.run(job).await.unwrap().json, json!("Hello, Dr Ada"));
    // Bad arguments are refused naming the parameter, as for a hand-written tool.
    let err = provider
        .instantiate(&json!({"title": "Dr"}), &cx)
        .err()
        .unwrap();
    assert!(err.to_string().contains("name"), "{err}");
}
