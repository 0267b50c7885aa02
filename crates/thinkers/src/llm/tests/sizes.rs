//! The body buffer's starting size and the shared schema renderings.

use std::sync::Arc;

use serde_json::json;

use super::fixtures;
use crate::llm::ToolChoice;
use crate::llm::encoded::capacity_hint;
use crate::llm::strict::{self, Adaptation};
use crate::llm::target::Dialect;
use crate::llm::text_tools;

/// Every fixture, in every dialect, fits the buffer its hint sizes (so it is written without
/// growing), and the hint leaves little spare room (a body in flight holds it).
#[test]
fn bodies_fit_their_capacity_hint() -> anyhow::Result<()> {
    let requests = [
        fixtures::plain(),
        fixtures::with_tools(),
        fixtures::tool_round(),
        fixtures::structured(),
        fixtures::everything(),
    ];
    for dialect in [
        Dialect::OpenAi,
        Dialect::OpenAiCompatible,
        Dialect::Anthropic,
    ] {
        for native in [true, false] {
            let target = fixtures::target(dialect).with_native_tools(native);
            for (i, req) in requests.iter().enumerate() {
                let enc = crate::llm::encode(&target, req)?;
                // Where the encoders put tools and the answer schema (see their module docs).
                let text_tools = !native;
                let tools_in_prompt =
                    text_tools && !req.tools.is_empty() && req.tool_choice != ToolChoice::None;
                let schema_in_prompt = req.response.is_some()
                    && (dialect == Dialect::OpenAiCompatible || tools_in_prompt);
                let (system, history) = text_tools::prompt_parts(req, text_tools, schema_in_prompt);
                let hint = capacity_hint(&system, &history, req);
                assert!(
                    enc.body.len() <= hint,
                    "{dialect:?} (native tools: {native}) fixture {i}: body {} > hint {hint}",
                    enc.body.len()
                );
                assert!(
                    hint <= 2 * enc.body.len() + 1024,
                    "{dialect:?} (native tools: {native}) fixture {i}: hint {hint} for a body of {}",
                    enc.body.len()
                );
            }
        }
    }
    Ok(())
}

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
