//! Rendering a planned answer as an OpenAI `response` object.
//!
//! Output items in order: a `reasoning` item when the model reasoned (its summary is the plan's
//! thinking text; `encrypted_content`, the sim's signature over id and summary, when `include`
//! asked for it), then a `message` item with one `output_text` part, or one `function_call` item
//! per tool call. Item ids come from the plan's generator, so the same request gets the same
//! items, streamed or not.

use rand::Rng;
use serde_json::{Value, json};

use super::decode::signed_text;
use crate::cache::CacheUse;
use crate::exchange::Exchange;
use crate::plan::{Body, Finish, Plan};
use crate::seeding::Signer;
use crate::tokens;

/// What every Responses answer carries besides the plan.
pub(crate) struct Envelope<'a> {
    pub(crate) id: &'a str,
    pub(crate) created: i64,
    pub(crate) model: &'a str,
    /// The whole input estimate, cached or not.
    pub(crate) input_tokens: u64,
    /// What the input read from and wrote to the prompt cache.
    pub(crate) cache: CacheUse,
    pub(crate) signer: &'a Signer,
    pub(crate) exchange: &'a Exchange,
}

fn item_id(plan: &mut Plan, prefix: &str) -> String {
    let n: u128 = plan.rng.random();
    format!("{prefix}_{n:032x}")
}

/// The answer's output items, complete.
pub(crate) fn items(env: &Envelope<'_>, plan: &mut Plan) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(thinking) = plan.thinking.clone() {
        let id = item_id(plan, "rs");
        let mut item = json!({
            "type": "reasoning",
            "id": id,
            "summary": [{"type": "summary_text", "text": thinking}]
        });
        if env.exchange.encrypted_reasoning {
            item["encrypted_content"] = json!(env.signer.sign(&signed_text(&id, &thinking)));
        }
        out.push(item);
    }
    match plan.body.clone() {
        Body::Text(text) => {
            let id = item_id(plan, "msg");
            out.push(json!({
                "type": "message",
                "id": id,
                "status": status(plan.finish),
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
            }));
        }
        Body::ToolCalls(calls) => {
            for call in calls {
                let id = item_id(plan, "fc");
                out.push(json!({
                    "type": "function_call",
                    "id": id,
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments(),
                    "status": "completed"
                }));
            }
        }
    }
    out
}

/// An item's or the response's `status`.
pub(crate) fn status(finish: Finish) -> &'static str {
    match finish {
        Finish::Length => "incomplete",
        Finish::Stop | Finish::ToolUse => "completed",
    }
}

/// The `usage` object.
pub(crate) fn usage(env: &Envelope<'_>, plan: &Plan) -> Value {
    let reasoning = plan
        .thinking
        .as_deref()
        .map_or(0, |t| tokens::output_tokens([t]));
    json!({
        "input_tokens": env.input_tokens,
        "input_tokens_details": {"cached_tokens": env.cache.read},
        "output_tokens": plan.output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": env.input_tokens + plan.output_tokens
    })
}

/// The `response` object with the given status and output (usage only once it is known).
pub(crate) fn response(
    env: &Envelope<'_>,
    plan: &Plan,
    status: &str,
    output: &[Value],
    with_usage: bool,
) -> Value {
    let exchange = env.exchange;
    let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
    json!({
        "id": env.id,
        "object": "response",
        "created_at": env.created,
        "status": status,
        "background": false,
        "error": null,
        "incomplete_details": incomplete,
        "instructions": null,
        "max_output_tokens": exchange.max_output,
        "model": env.model,
        "output": output,
        "parallel_tool_calls": exchange.parallel,
        "previous_response_id": null,
        "reasoning": {"effort": exchange.reasoning_effort, "summary": null},
        "service_tier": "default",
        "store": false,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": if with_usage { usage(env, plan) } else { Value::Null },
        "metadata": {}
    })
}

/// The non-streaming response body.
pub(crate) fn whole(env: &Envelope<'_>, plan: &mut Plan) -> Value {
    let output = items(env, plan);
    response(env, plan, status(plan.finish), &output, true)
}
