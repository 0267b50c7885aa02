//! Rendering a planned answer as an Anthropic `message` object.

use serde_json::{Value, json};

use crate::cache::CacheUse;
use crate::plan::{Body, Finish, Plan};
use crate::seeding::Signer;

/// What every Anthropic answer carries besides the plan.
pub(crate) struct Envelope<'a> {
    pub(crate) id: &'a str,
    pub(crate) model: &'a str,
    /// The whole input estimate, cached or not.
    pub(crate) input_tokens: u64,
    /// What the input read from and wrote to the prompt cache.
    pub(crate) cache: CacheUse,
    pub(crate) signer: &'a Signer,
}

pub(crate) fn stop_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "end_turn",
        Finish::Length => "max_tokens",
        Finish::ToolUse => "tool_use",
    }
}

/// The `usage` object with `output_tokens` as given: `input_tokens` is the input neither read
/// from nor written to the cache (the three input figures add up to the whole input).
pub(crate) fn usage(env: &Envelope<'_>, output_tokens: u64) -> Value {
    json!({
        "input_tokens": env.cache.uncached(env.input_tokens),
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": env.cache.written(),
        "cache_read_input_tokens": env.cache.read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": env.cache.write_5m,
            "ephemeral_1h_input_tokens": env.cache.write_1h
        },
        "service_tier": "standard"
    })
}

/// The content blocks of the answer, complete.
pub(crate) fn content(env: &Envelope<'_>, plan: &Plan) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(thinking) = &plan.thinking {
        blocks.push(json!({
            "type": "thinking",
            "thinking": thinking,
            "signature": env.signer.sign(thinking)
        }));
    }
    match &plan.body {
        Body::Text(text) => blocks.push(json!({"type": "text", "text": text})),
        Body::ToolCalls(calls) => {
            for call in calls {
                blocks.push(json!({
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": call.input
                }));
            }
        }
    }
    blocks
}

/// The non-streaming response body.
pub(crate) fn message(env: &Envelope<'_>, plan: &Plan) -> Value {
    json!({
        "id": env.id,
        "type": "message",
        "role": "assistant",
        "model": env.model,
        "content": content(env, plan),
        "stop_reason": stop_reason(plan.finish),
        "stop_sequence": null,
        "usage": usage(env, plan.output_tokens)
    })
}
