//! Rendering a planned answer as a `ConverseResponse` body.

use serde_json::{Value, json};

use crate::cache::CacheUse;
use crate::plan::{Body, Finish, Plan};
use crate::seeding::Signer;

/// What every Converse answer carries besides the plan.
pub(crate) struct Envelope<'a> {
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

/// The `usage` object: `inputTokens` is the input neither read from nor written to the cache,
/// `cacheReadInputTokens` and `cacheWriteInputTokens` (present once a cache point was read or
/// written) the rest; `totalTokens` counts all of them and the output.
pub(crate) fn usage(env: &Envelope<'_>, output_tokens: u64) -> Value {
    let mut usage = json!({
        "inputTokens": env.cache.uncached(env.input_tokens),
        "outputTokens": output_tokens,
        "totalTokens": env.input_tokens + output_tokens,
    });
    if env.cache.read + env.cache.written() > 0 {
        usage["cacheReadInputTokens"] = json!(env.cache.read);
        usage["cacheWriteInputTokens"] = json!(env.cache.written());
    }
    usage
}

/// The content blocks of the answer, complete.
pub(crate) fn content(env: &Envelope<'_>, plan: &Plan) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(thinking) = &plan.thinking {
        blocks.push(json!({"reasoningContent": {"reasoningText": {
            "text": thinking,
            "signature": env.signer.sign(thinking)
        }}}));
    }
    match &plan.body {
        Body::Text(text) => blocks.push(json!({ "text": text })),
        Body::ToolCalls(calls) => {
            for call in calls {
                blocks.push(json!({"toolUse": {
                    "toolUseId": call.id,
                    "name": call.name,
                    "input": call.input
                }}));
            }
        }
    }
    blocks
}

/// The non-streaming response body.
pub(crate) fn response(env: &Envelope<'_>, plan: &Plan, latency_ms: u64) -> Value {
    json!({
        "output": {"message": {"role": "assistant", "content": content(env, plan)}},
        "stopReason": stop_reason(plan.finish),
        "usage": usage(env, plan.output_tokens),
        "metrics": {"latencyMs": latency_ms}
    })
}
