//! Rendering a planned answer as a Gemini `GenerateContentResponse`.

use serde_json::{Value, json};

use crate::cache::CacheUse;
use crate::plan::{Body, Finish, Plan};
use crate::seeding::Signer;
use crate::tokens;

/// What every Gemini answer carries besides the plan.
pub(crate) struct Envelope<'a> {
    pub(crate) response_id: &'a str,
    pub(crate) model: &'a str,
    /// The whole input estimate, cached or not.
    pub(crate) input_tokens: u64,
    /// What the input read from and wrote to the prompt cache.
    pub(crate) cache: CacheUse,
    pub(crate) signer: &'a Signer,
    /// `includeThoughts`: the thought summary is a part of the answer.
    pub(crate) include_thoughts: bool,
}

/// Gemini ends a turn of function calls with `STOP` too.
pub(crate) fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop | Finish::ToolUse => "STOP",
        Finish::Length => "MAX_TOKENS",
    }
}

/// The `usageMetadata` of the whole answer (thoughts are counted apart from the candidates).
pub(crate) fn usage(env: &Envelope<'_>, plan: &Plan) -> Value {
    let thoughts = plan
        .thinking
        .as_deref()
        .map_or(0, |t| tokens::output_tokens([t]));
    let candidates = plan.output_tokens.saturating_sub(thoughts);
    let mut usage = json!({
        "promptTokenCount": env.input_tokens,
        "candidatesTokenCount": candidates,
        "totalTokenCount": env.input_tokens + plan.output_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": env.input_tokens}]
    });
    if thoughts > 0 {
        usage["thoughtsTokenCount"] = json!(thoughts);
    }
    // Implicit caching: the cached part of `promptTokenCount` (absent when zero, as proto3 JSON
    // leaves out defaults).
    if env.cache.read > 0 {
        usage["cachedContentTokenCount"] = json!(env.cache.read);
        usage["cacheTokensDetails"] = json!([{"modality": "TEXT", "tokenCount": env.cache.read}]);
    }
    usage
}

/// The thought part, when thoughts are shown.
pub(crate) fn thought_part(env: &Envelope<'_>, plan: &Plan) -> Option<Value> {
    let thinking = plan.thinking.as_deref()?;
    env.include_thoughts
        .then(|| json!({"text": thinking, "thought": true}))
}

/// The signature of this answer, when it thought.
pub(crate) fn signature(env: &Envelope<'_>, plan: &Plan) -> Option<String> {
    plan.thinking.as_deref().map(|t| super::sign(env.signer, t))
}

/// The visible parts: one text, or one function call part per call (no ids: Gemini pairs
/// responses by name and order). The signature goes on the first call, or on the text.
pub(crate) fn visible_parts(plan: &Plan, signature: Option<&str>) -> Vec<Value> {
    let mut parts = match &plan.body {
        Body::Text(text) => vec![json!({"text": text})],
        Body::ToolCalls(calls) => calls
            .iter()
            .map(|c| json!({"functionCall": {"name": c.name, "args": c.input}}))
            .collect(),
    };
    if let (Some(sig), Some(first)) = (signature, parts.first_mut()) {
        first["thoughtSignature"] = json!(sig);
    }
    parts
}

/// One `GenerateContentResponse` carrying `parts` (and, when given, the finish reason).
pub(crate) fn chunk(
    env: &Envelope<'_>,
    parts: &[Value],
    finish: Option<&str>,
    usage: Option<Value>,
) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    let mut out = json!({
        "candidates": [candidate],
        "modelVersion": env.model,
        "responseId": env.response_id
    });
    if let Some(u) = usage {
        out["usageMetadata"] = u;
    }
    out
}

/// The non-streaming response body.
pub(crate) fn response(env: &Envelope<'_>, plan: &Plan) -> Value {
    let signature = signature(env, plan);
    let mut parts: Vec<Value> = thought_part(env, plan).into_iter().collect();
    parts.extend(visible_parts(plan, signature.as_deref()));
    chunk(
        env,
        &parts,
        Some(finish_reason(plan.finish)),
        Some(usage(env, plan)),
    )
}
