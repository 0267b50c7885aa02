//! The request forms an OpenAI-compatible server accepts, found at run time when the catalog
//! does not say.
//!
//! Two settings of an `openai-compatible` provider name a form a server may refuse:
//! `structured_output` (how a structured answer is asked for) and `stream_tools` (whether an
//! answer that may call a tool is streamed). A provider whose catalog set one keeps it: a
//! refused `response_format` it chose is an error naming the provider, the entry, the catalog
//! field and the URL, and under `stream_tools = true` an empty stream stays the transient fault
//! it was. For one the catalog left unset, the first refusal moves the provider down its ladder,
//! for every later call of the process ([`ModelServices`](super::ModelServices) holds what was
//! learned):
//!
//! * answers: `json_schema`, then `json_object` (llama-cpp-python's form), then the schema in
//!   the prompt alone;
//! * answers that may call a tool: streamed, then asked whole.
//!
//! A refusal is recognised by the client from the answer (`errors::refuses_form`: a 4xx or a
//! 5xx naming `response_format`; a stream that may carry a tool call ending before any
//! content). It is never retried as a transient fault: the attempt ends with
//! [`RetrySignal::FormRefused`], and the dispatcher runs the call again at once in the next
//! form. The refused attempt is a model call that failed: its job row counts it among the
//! attempts and its span records the error; a refused `response_format` generated nothing, so its
//! seat gives every token back and no cost is recorded for it. A form is settled by its first
//! accepted answer; a form once accepted is never stepped down from (a later refusal is about
//! that request, an error). The form a provider settles on after a refusal is logged once, as
//! a warning naming the provider and the form.

use std::sync::{Mutex, PoisonError};

use crate::Error;
use crate::error::RetrySignal;
use crate::llm::encoded::EncodedRequest;
use crate::llm::request::{ChatRequest, ToolChoice};
use crate::llm::target::{Dialect, StructuredOutput, WireTarget};
use crate::model::Provider;

/// The step of the error a refused `response_format` is (`errors::Origin::form_refused`).
pub(crate) const ANSWER_FORM_STEP: &str = "structured output";
/// The step of the error a streamed answer that may call a tool and ended before any content
/// is, while the provider's `stream_tools` is being found (`errors::Origin::tool_stream_empty`).
pub(crate) const TOOL_STREAM_STEP: &str = "tool-call stream";

/// What one request asked of its provider in the forms a server may refuse.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Asked {
    /// How the request's structured answer was asked for (`None`: no schema, or the schema went
    /// into the prompt because the model may call a tool in the same answer).
    pub(crate) answer: Option<StructuredOutput>,
    /// Whether the catalog set that form.
    pub(crate) answer_set: bool,
    /// Whether an answer that may call a tool was asked for streamed while the catalog left
    /// `stream_tools` unset.
    pub(crate) streams_tools: bool,
}

impl Asked {
    /// What `req`, encoded for `target` as `enc`, asks of `provider`.
    pub(crate) fn of(
        provider: &Provider,
        target: &WireTarget,
        req: &ChatRequest,
        enc: &EncodedRequest,
    ) -> Self {
        if target.dialect != Dialect::OpenAiCompatible {
            return Self::default();
        }
        let may_call_tools = !req.tools.is_empty() && req.tool_choice != ToolChoice::None;
        Self {
            // As `openai::encode` decides: a schema beside tools goes into the prompt.
            answer: (req.response.is_some() && !may_call_tools).then_some(target.structured_output),
            answer_set: provider.structured_output_set,
            streams_tools: enc.plan.stream
                && target.native_tools
                && may_call_tools
                && !provider.stream_tools_set,
        }
    }

    /// The `response_format` form the request carries, whose refusal the client recognises.
    pub(crate) fn native_form(self) -> Option<StructuredOutput> {
        self.answer.filter(|f| *f != StructuredOutput::Prompt)
    }
}

/// The answer form after `form` on the ladder.
fn next_answer(form: StructuredOutput) -> Option<StructuredOutput> {
    match form {
        StructuredOutput::JsonSchema => Some(StructuredOutput::JsonObject),
        StructuredOutput::JsonObject => Some(StructuredOutput::Prompt),
        StructuredOutput::Prompt => None,
    }
}

/// Where one provider stands on one ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rung<T> {
    /// The form calls use now.
    form: T,
    /// Whether an answer came back in it (then it is never stepped down from).
    accepted: bool,
    /// The form the provider started from, before any refusal.
    first: T,
}

/// What a refusal of a form did to a provider's rung.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step<T> {
    /// The provider moved down to this form now.
    Moved(T),
    /// Another call had moved it on already: ask in this form.
    Already(T),
    /// The form was accepted before, or is the last: the refusal is an error.
    Final,
}

impl<T: Copy + PartialEq> Rung<T> {
    fn at(form: T) -> Self {
        Self {
            form,
            accepted: false,
            first: form,
        }
    }

    /// `form` was refused; `next` is the form after one on the ladder.
    fn refused(&mut self, form: T, next: impl FnOnce(T) -> Option<T>) -> Step<T> {
        if self.form != form {
            return Step::Already(self.form);
        }
        if self.accepted {
            return Step::Final;
        }
        match next(form) {
            Some(next) => {
                self.form = next;
                Step::Moved(next)
            }
            None => Step::Final,
        }
    }

    /// An answer came back in `form`. The first time one does in a form the provider moved to
    /// after a refusal: the form it started from.
    fn accepted(&mut self, form: T) -> Option<T> {
        if self.form != form || self.accepted {
            return None;
        }
        self.accepted = true;
        (self.form != self.first).then_some(self.first)
    }
}

/// What was learned of one provider.
#[derive(Debug, Clone, Copy, Default)]
struct Learned {
    answer: Option<Rung<StructuredOutput>>,
    stream_tools: Option<Rung<bool>>,
}

/// The forms learned per provider, for the life of the [`ModelServices`](super::ModelServices)
/// that holds them (in a program, its runtime's).
#[derive(Debug, Default)]
pub(crate) struct Forms {
    providers: Mutex<foldhash::HashMap<String, Learned>>,
}

impl Forms {
    fn with<R>(&self, provider: &str, f: impl FnOnce(&mut Learned) -> R) -> R {
        let mut map = self
            .providers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match map.get_mut(provider) {
            Some(learned) => f(learned),
            None => f(map.entry(provider.to_owned()).or_default()),
        }
    }

    /// `target` (made from `provider`'s catalog settings) with the forms learned for it; `None`
    /// when it already has them.
    pub(crate) fn apply(&self, provider: &Provider, target: &WireTarget) -> Option<WireTarget> {
        if target.dialect != Dialect::OpenAiCompatible {
            return None;
        }
        let learned = {
            let map = self
                .providers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *map.get(&provider.name)?
        };
        let answer = learned
            .answer
            .filter(|_| !provider.structured_output_set)
            .map_or(target.structured_output, |r| r.form);
        let stream_tools = learned
            .stream_tools
            .filter(|_| !provider.stream_tools_set)
            .map_or(target.stream_tools, |r| r.form);
        (answer != target.structured_output || stream_tools != target.stream_tools).then(|| {
            target
                .clone()
                .with_structured_output(answer)
                .with_stream_tools(stream_tools)
        })
    }

    /// An answer to `asked` came back from `provider`: the forms it was asked in are settled
    /// (streaming only by a streamed answer that called a tool: llama-cpp-python streams text
    /// and ends a stream that calls a tool empty). The first answer in a form the provider moved
    /// to after a refusal logs the form, once.
    pub(crate) fn accepted(&self, provider: &str, asked: Asked, called_tool: bool) {
        let answer = asked.answer.filter(|_| !asked.answer_set);
        let streamed_call = asked.streams_tools && called_tool;
        if answer.is_none() && !streamed_call {
            return;
        }
        let settled = self.with(provider, |learned| {
            if streamed_call {
                learned
                    .stream_tools
                    .get_or_insert(Rung::at(true))
                    .accepted(true);
            }
            let form = answer?;
            let first = learned
                .answer
                .get_or_insert(Rung::at(form))
                .accepted(form)?;
            Some((first, form))
        });
        if let Some((first, form)) = settled {
            let refused = std::iter::successors(Some(first), |f| next_answer(*f))
                .take_while(|f| *f != form)
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(" and ");
            tracing::warn!(
                provider,
                form = form.as_str(),
                "provider `{provider}` refused structured answers asked as {refused}; they are \
                 asked as `{form}` from now on (set `structured_output` on the provider in the \
                 catalog to choose)"
            );
        }
    }

    /// Of an error `provider` answered `asked` with, the one the dispatcher is told: a refusal
    /// of a form the runtime may change becomes a [`RetrySignal::FormRefused`], the provider
    /// moved to the next form; a refusal of a form the catalog set, of one accepted before or
    /// of the last stays the error it is. Anything else passes through.
    pub(crate) fn after_failure(&self, provider: &str, asked: Asked, e: Error) -> Error {
        let Error::ExternalService {
            service,
            step,
            detail,
            ..
        } = &e
        else {
            return e;
        };
        match step.as_str() {
            ANSWER_FORM_STEP => {
                let Some(form) = asked.answer.filter(|_| !asked.answer_set) else {
                    return e;
                };
                let step = self.with(provider, |learned| {
                    learned
                        .answer
                        .get_or_insert(Rung::at(form))
                        .refused(form, next_answer)
                });
                match step {
                    Step::Moved(next) | Step::Already(next) => {
                        tracing::debug!(
                            provider,
                            refused = form.as_str(),
                            next = next.as_str(),
                            "a structured-answer form was refused; the call is asked again"
                        );
                        form_refused(service, detail, next.as_str())
                    }
                    Step::Final => e,
                }
            }
            TOOL_STREAM_STEP => {
                if !asked.streams_tools {
                    return e;
                }
                let step = self.with(provider, |learned| {
                    learned
                        .stream_tools
                        .get_or_insert(Rung::at(true))
                        .refused(true, |streamed| streamed.then_some(false))
                });
                match step {
                    Step::Moved(_) => {
                        tracing::warn!(
                            provider,
                            form = "whole",
                            "provider `{provider}` ended a streamed answer that could call a \
                             tool before any content; such answers are asked for whole from \
                             now on and handed to the stream's reader at once (set \
                             `stream_tools` on the provider in the catalog to choose)"
                        );
                        form_refused(service, detail, "whole")
                    }
                    Step::Already(_) => form_refused(service, detail, "whole"),
                    // Streaming was accepted before: an empty stream is what it always was, a
                    // transient fault.
                    Step::Final => Error::transient(service.clone(), detail.clone(), None),
                }
            }
            _ => e,
        }
    }
}

fn form_refused(service: &str, detail: &str, next: &str) -> Error {
    Error::Retry(RetrySignal::FormRefused {
        service: service.to_owned(),
        detail: format!("{detail}; asked next as `{next}`"),
    })
}

#[cfg(test)]
#[path = "negotiate_tests.rs"]
mod tests;
