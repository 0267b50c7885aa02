//! `null` for an optional argument means the argument is absent: OpenAI strict mode makes every
//! optional property required and nullable, so a model in strict mode writes `null` for what it
//! leaves out. Each tool's optional arguments are read from its input schema.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use thinkers::tool::decode_arguments;
use thinkers_tools::{EpoClaimsInput, PubmedFetchInput, WebFetchInput};

/// The properties of `I`'s input schema that are not required.
fn optional<I: schemars::JsonSchema>() -> Vec<String> {
    let schema = serde_json::to_value(schemars::schema_for!(I)).unwrap();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k.clone())
        .filter(|k| !required.contains(&k.as_str()))
        .collect()
}

/// `required` and the same arguments with every optional one `null` decode to the same input.
fn same_with_nulls<I>(required: &Value, optional: &[String])
where
    I: DeserializeOwned + schemars::JsonSchema + std::fmt::Debug + 'static,
{
    let mut nulled = required.clone();
    for k in optional {
        nulled[k.as_str()] = Value::Null;
    }
    let absent: I = decode_arguments(required).unwrap();
    let with_nulls: I = decode_arguments(&nulled).unwrap_or_else(|e| panic!("{nulled}: {e}"));
    assert_eq!(format!("{with_nulls:?}"), format!("{absent:?}"));
}

#[test]
fn epo_claims_language_may_be_null() {
    let optional = optional::<EpoClaimsInput>();
    assert_eq!(optional, ["language"]);
    same_with_nulls::<EpoClaimsInput>(&json!({"publication_number": "EP1000000"}), &optional);
}

#[test]
fn web_fetch_and_pubmed_have_no_optional_argument() {
    // Nothing to make null: a new optional argument lands in a test of its own.
    assert!(optional::<WebFetchInput>().is_empty());
    assert!(optional::<PubmedFetchInput>().is_empty());
}
