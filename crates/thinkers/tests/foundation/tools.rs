//! Tools: typed providers, argument errors, read-only forwarding and the admission check.

use std::borrow::Cow;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use thinkers::job::ScopeGuard;
use thinkers::tool::{
    Tool, ToolCallContext, ToolContext, ToolProvider, ToolRegistry, TypedToolProvider, admit_call,
};
use thinkers::{Error, ErrorKind, Result};

use crate::support::dispatcher;

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // `filters` exists to exercise nested argument paths.
struct LookupInput {
    /// What to look up.
    query: String,
    /// Optional filters.
    #[serde(default)]
    filters: Filters,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[allow(dead_code)] // Read only through its schema and decoding.
struct Filters {
    #[serde(default)]
    year: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema, PartialEq)]
struct LookupOutput {
    definition: String,
}

struct Lookup;

impl Tool for Lookup {
    const NAME: &'static str = "lookup";
    type Input = LookupInput;
    type Output = LookupOutput;
    fn description(&self) -> Cow<'static, str> {
        "Look a term up in the glossary.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(&self, input: &LookupInput, _cx: &ToolContext<'_>) -> Result<LookupOutput> {
        Ok(LookupOutput {
            definition: format!("{} means something", input.query),
        })
    }
}

struct Delete;

impl Tool for Delete {
    const NAME: &'static str = "delete_record";
    type Input = LookupInput;
    type Output = bool;
    fn description(&self) -> Cow<'static, str> {
        "Delete a record.".into()
    }
    async fn call(&self, _input: &LookupInput, _cx: &ToolContext<'_>) -> Result<bool> {
        Ok(true)
    }
}

/// A wrapper that claims read-only whatever it wraps: the bug the forwarding rule prevents.
struct LyingWrapper(Arc<dyn ToolProvider>);

impl ToolProvider for LyingWrapper {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn input_schema(&self) -> &serde_json::Value {
        self.0.input_schema()
    }
    fn read_only(&self) -> bool {
        true
    }
    fn instantiate(
        &self,
        arguments: &serde_json::Value,
        cx: &ToolCallContext,
    ) -> Result<thinkers::job::BoxJob<thinkers::tool::ToolOutput>> {
        self.0.instantiate(arguments, cx)
    }
}

#[tokio::test]
async fn a_typed_tool_runs_through_its_provider() {
    let (d, _) = dispatcher();
    let p = TypedToolProvider::new(Lookup);
    assert_eq!(p.name(), "lookup");
    assert!(thinkers::tool::is_snake_case(p.name()));
    assert_eq!(p.input_schema()["properties"]["query"]["type"], "string");
    let job = p
        .instantiate(&json!({"query": "seat"}), &ToolCallContext::default())
        .unwrap();
    let out = d.run(job).await.unwrap();
    assert_eq!(out.json, json!({"definition": "seat means something"}));
    assert_eq!(
        out.downcast::<LookupOutput>().unwrap().definition,
        "seat means something"
    );
}

#[test]
fn arguments_that_do_not_fit_name_the_parameter() {
    let p = TypedToolProvider::new(Lookup);
    let cx = ToolCallContext::default();
    // The parameter by its declared path and what the schema expects; never the value sent.
    let cases = [
        (
            json!({}),
            "query",
            "is required and missing; it must be a string",
        ),
        (json!({"query": 5}), "query", "must be a string"),
        (
            json!({"query": "x", "filters": {"year": "soon"}}),
            "filters.year",
            "must be an integer",
        ),
        (json!("flat"), "arguments", "must be an object"),
    ];
    for (args, param, expected) in cases {
        let err = p.instantiate(&args, &cx).unwrap_err();
        match &err {
            Error::InvalidInput {
                parameter,
                value,
                reason,
                ..
            } => {
                assert_eq!(parameter, param, "for {args}");
                assert_eq!(value, &None, "for {args}");
                assert!(reason.contains(expected), "for {args}: {reason}");
            }
            other => panic!("unexpected {other:?} for {args}"),
        }
        assert!(!err.to_string().contains("soon"), "{err}");
    }
}

#[test]
fn read_only_is_forwarded_and_enforced() {
    let lookup: Arc<dyn ToolProvider> = Arc::new(TypedToolProvider::new(Lookup));
    let delete: Arc<dyn ToolProvider> = Arc::new(TypedToolProvider::new(Delete));
    assert!(lookup.read_only());
    assert!(!delete.read_only());
    // Box and Arc wrappers forward the flag.
    let boxed: Box<dyn ToolProvider> = Box::new(delete.clone());
    assert!(!boxed.read_only());

    let ro = ScopeGuard::unbound().read_only();
    admit_call(lookup.as_ref(), &ro).unwrap();
    let err = admit_call(delete.as_ref(), &ro).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.to_string().contains("delete_record"), "{err}");
    admit_call(delete.as_ref(), &ScopeGuard::unbound()).unwrap();

    // A wrapper that does not forward the flag is exactly what admission then trusts: the
    // forwarding rule matters, and this pins that the check reads the provider it is given.
    let liar = LyingWrapper(delete);
    assert!(admit_call(&liar, &ro).is_ok());
}

#[test]
fn the_registry_is_idempotent() {
    let mut r = ToolRegistry::new();
    let p: Arc<dyn ToolProvider> = Arc::new(TypedToolProvider::new(Lookup));
    assert!(r.register(p.clone()));
    assert!(!r.register(p));
    assert_eq!(r.len(), 1);
    assert!(r.unregister("lookup"));
    assert!(!r.unregister("lookup"));
    assert!(r.is_empty());
}
