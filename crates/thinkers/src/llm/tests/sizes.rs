//! The shared schema renderings.

use std::sync::Arc;

use serde_json::json;

use crate::llm::strict::{self, Adaptation};

#[test]
fn a_rendering_is_the_adapted_schema_as_compact_json_and_is_shared() {
    let source = Arc::new(json!({
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 1}},
        "required": ["city"]
    }));
    let strict = strict::rendered(&source, Adaptation::OpenAiStrict);
    assert_eq!(strict.value().as_ref(), &strict::openai_strict(&source));
    assert_eq!(
        serde_json::to_string(strict.as_ref()).ok(),
        serde_json::to_string(&strict::openai_strict(&source)).ok()
    );
    assert!(Arc::ptr_eq(
        &strict,
        &strict::rendered(&source, Adaptation::OpenAiStrict)
    ));
    let as_is = strict::rendered(&source, Adaptation::AsIs);
    assert!(Arc::ptr_eq(as_is.value(), &source));
    assert_eq!(
        strict::shared_json_len(&source),
        serde_json::to_string(source.as_ref())
            .map(|s| s.len())
            .unwrap_or(0)
    );
    // Another schema with equal content is its own source.
    let twin = Arc::new(source.as_ref().clone());
    assert!(!Arc::ptr_eq(
        &strict,
        &strict::rendered(&twin, Adaptation::OpenAiStrict)
    ));
}
