//! The normal answer to a request, rendered in its dialect's wire format (the other half of
//! `pipeline.rs`, which reads the request and decides what happens to it).

use super::faulty::Rendered;
use super::state::{ModelSlot, Shared};
use crate::cache::CacheUse;
use crate::exchange::{Dialect, Exchange};
use crate::plan;
use crate::{anthropic, bedrock, gemini, openai, responses};

/// The normal answer to `exchange`, rendered for its dialect: frames for a stream, a JSON value
/// otherwise. `frames_cut` stops an Anthropic, Responses, Gemini or Bedrock stream's frames
/// after that many.
#[allow(clippy::too_many_arguments)] // One call per answer path; a struct would only rename them.
pub(super) fn render(
    shared: &Shared,
    slot: &ModelSlot,
    exchange: &Exchange,
    plan: &mut plan::Plan,
    dialect: Dialect,
    input: u64,
    cache: CacheUse,
    created: i64,
    frames_cut: Option<usize>,
) -> Rendered {
    match dialect {
        Dialect::OpenAi => {
            let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
            let env = openai::Envelope {
                id: &id,
                created,
                model: &slot.model.name,
                input_tokens: input,
                cache,
            };
            if exchange.stream {
                Rendered::Stream(openai::frames(
                    &env,
                    plan,
                    exchange.include_usage,
                    exchange.logprobs,
                ))
            } else {
                Rendered::Whole(openai::completion(&env, plan, exchange.logprobs))
            }
        }
        Dialect::Anthropic => {
            let id = format!("msg_{}", uuid::Uuid::new_v4().simple());
            let env = anthropic::Envelope {
                id: &id,
                model: &slot.model.name,
                input_tokens: input,
                cache,
                signer: &shared.signer,
            };
            if exchange.stream {
                Rendered::Stream(anthropic::frames(&env, plan, frames_cut))
            } else {
                Rendered::Whole(anthropic::message(&env, plan))
            }
        }
        Dialect::OpenAiResponses => {
            let id = format!("resp_{}", uuid::Uuid::new_v4().simple());
            let env = responses::Envelope {
                id: &id,
                created,
                model: &slot.model.name,
                input_tokens: input,
                cache,
                signer: &shared.signer,
                exchange,
            };
            if exchange.stream {
                Rendered::Stream(responses::frames(&env, plan, frames_cut))
            } else {
                Rendered::Whole(responses::whole(&env, plan))
            }
        }
        Dialect::Gemini => {
            let id = uuid::Uuid::new_v4().simple().to_string();
            let env = gemini::Envelope {
                response_id: &id,
                model: &slot.model.name,
                input_tokens: input,
                cache,
                signer: &shared.signer,
                include_thoughts: exchange.include_thoughts,
            };
            if exchange.stream {
                Rendered::Stream(gemini::frames(&env, plan, frames_cut))
            } else {
                Rendered::Whole(gemini::response(&env, plan))
            }
        }
        Dialect::Bedrock => {
            let env = bedrock::Envelope {
                input_tokens: input,
                cache,
                signer: &shared.signer,
            };
            if exchange.stream {
                Rendered::Stream(bedrock::frames(&env, plan, frames_cut))
            } else {
                let latency = u64::try_from(chrono::Utc::now().timestamp() - created)
                    .unwrap_or(0)
                    .saturating_mul(1000);
                Rendered::Whole(bedrock::response(&env, plan, latency))
            }
        }
    }
}
