//! Rendering a planned answer as an OpenAI `chat.completion` object.

use serde_json::{Value, json};

use crate::cache::CacheUse;
use crate::logprobs::content_logprobs;
use crate::plan::{Body, Finish, Plan};

/// What every OpenAI answer carries besides the plan.
pub(crate) struct Envelope<'a> {
    pub(crate) id: &'a str,
    pub(crate) created: i64,
    pub(crate) model: &'a str,
    /// The whole input estimate, cached or not.
    pub(crate) input_tokens: u64,
    /// What the input read from and wrote to the prompt cache.
    pub(crate) cache: CacheUse,
}

/// The fixed fingerprint the sim reports.
pub(crate) const FINGERPRINT: &str = "fp_thinkers_sim";

pub(crate) fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "stop",
        Finish::Length => "length",
        Finish::ToolUse => "tool_calls",
    }
}

/// The `usage` object.
pub(crate) fn usage(env: &Envelope<'_>, plan: &Plan) -> Value {
    json!({
        "prompt_tokens": env.input_tokens,
        "completion_tokens": plan.output_tokens,
        "total_tokens": env.input_tokens + plan.output_tokens,
        "prompt_tokens_details": {"cached_tokens": env.cache.read, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": plan.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0
        }
    })
}

/// The `logprobs` of a choice: `null` unless requested.
pub(crate) fn choice_logprobs(plan: &mut Plan, top: Option<u8>, text: &str) -> Value {
    match top {
        None => Value::Null,
        Some(top) => {
            let content = content_logprobs(text, top, &plan.choices, plan.good, &mut plan.rng);
            json!({"content": content, "refusal": null})
        }
    }
}

/// The non-streaming response body.
pub(crate) fn completion(env: &Envelope<'_>, plan: &mut Plan, logprobs: Option<u8>) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": null,
        "refusal": null,
        "annotations": []
    });
    let text = match &plan.body {
        Body::Text(text) => {
            message["content"] = Value::String(text.clone());
            text.clone()
        }
        Body::ToolCalls(calls) => {
            let calls: Vec<Value> = calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments()}
                    })
                })
                .collect();
            message["tool_calls"] = Value::Array(calls);
            String::new()
        }
    };
    let logprobs = choice_logprobs(plan, logprobs, &text);
    json!({
        "id": env.id,
        "object": "chat.completion",
        "created": env.created,
        "model": env.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": logprobs,
            "finish_reason": finish_reason(plan.finish)
        }],
        "usage": usage(env, plan),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT
    })
}
