//! [`DecisionThinker`]: a model that writes nothing and only chooses among options the caller
//! gives.
//!
//! Each option has an id and a description. The model's answer is constrained to the ids (an
//! `enum` in the answer schema): one id for [`DecisionThinker::choose`], an ordered list of `k`
//! distinct ids for [`DecisionThinker::rank`]. An id outside the options is refused like any
//! wrong shape, with a correction listing the accepted ids (never repeating the model's value).
//! Where the provider returns token log-probabilities (the OpenAI Chat Completions dialect), the
//! result carries a [`Confidence`] per option (the method is in [`confidence`]); where it does
//! not, every confidence says it is unavailable and why.
//!
//! # When to prefer it over a thinker
//!
//! Prefer a decision when the answer is a pick among options you know in advance (route a
//! ticket, pick a next step, rank candidates): it is one short call with no prose to pay for or
//! to parse, the answer cannot name anything outside the options, and on OpenAI-format
//! providers you get a probability per option that you can threshold (ask a person, escalate to
//! a larger grade) instead of trusting a bare label.
//!
//! Use a [`crate::thinker::ToollessThinker`] instead when the answer needs fields beyond the choice (an
//! extracted value, a justification to show), and a [`crate::thinker::Thinker`] when the
//! choice needs evidence first (tools to call, documents to read). The confidence is the
//! model's own token probability: it says how sure the model was, not whether it was right.
//! OpenAI's reasoning models refuse `logprobs`: decide at a depth where the entry does not
//! reason, or turn log-probabilities off with [`DecisionThinker::top_logprobs`]`(0)`.

mod confidence;
mod contract;

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use self::confidence::Confidence;
use self::confidence::{Tokens, spans_after_key};
use self::contract::{Mode, OptionsContract};
use crate::job::{JobContext, Orchestrator};
use crate::llm::ChatResponse;
use crate::thinker::answer::AnswerShape;
use crate::thinker::builder::sealed::HasCore;
use crate::thinker::declaration::{ThinkerDeclaration, ThinkerInput};
use crate::thinker::state::ThinkerObserver;
use crate::thinker::toolless::{Exchange, SystemPrompt, exchange};
use crate::thinker::turn_loop::{ThinkerCore, ThinkerLimits};
use crate::{Error, Result};

/// Alternatives per token asked for by default (the most OpenAI returns is 20).
const DEFAULT_TOP_LOGPROBS: u8 = 10;

/// One option of a decision: an id the model answers with, and what it means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionOption {
    /// The id, as the model writes it.
    pub id: String,
    /// What the option means, for the model.
    pub description: String,
}

impl DecisionOption {
    /// An option.
    pub fn new(id: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            description: description.into(),
        }
    }
}

/// One option with the model's confidence in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    /// The option.
    pub option: DecisionOption,
    /// How sure the model was.
    pub confidence: Confidence,
}

/// The result of [`DecisionThinker::choose`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The chosen option and the probability of choosing it.
    pub chosen: Scored,
    /// Every option, in the order given, with its probability where the choice was written.
    pub options: Vec<Scored>,
}

/// The result of [`DecisionThinker::rank`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranking {
    /// The ranked options, best first; each confidence is the probability of that option at
    /// its place in the ranking (given the places before it).
    pub ranked: Vec<Scored>,
}

/// A thinker whose model only chooses among given options (see the module docs, which also say
/// when to prefer it over a thinker).
pub struct DecisionThinker {
    core: ThinkerCore,
    options: Arc<[DecisionOption]>,
    observer: ThinkerObserver,
    top_logprobs: u8,
}

impl fmt::Debug for DecisionThinker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecisionThinker")
            .field("core", &self.core)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Check one option id: non-empty, no surrounding whitespace, no quote, backslash or control
/// character (so it is written into JSON as it is).
fn check_id(id: &str) -> Result<()> {
    let problem = if id.is_empty() {
        Some("an option id must not be empty")
    } else if id.trim() != id {
        Some("an option id must not start or end with whitespace")
    } else if id.chars().any(|c| c == '"' || c == '\\' || c.is_control()) {
        Some("an option id must not hold quotes, backslashes or control characters")
    } else {
        None
    };
    match problem {
        Some(reason) => Err(Error::invalid_input(
            "options.id",
            Some(id.to_owned()),
            reason,
        )),
        None => Ok(()),
    }
}

impl DecisionThinker {
    /// A decision among `options` with its seat declaration and system prompt. The ids must be
    /// non-empty and unique (an error names the offending id); at least one option is needed.
    pub fn new(
        declaration: ThinkerDeclaration,
        prompt: SystemPrompt,
        options: Vec<DecisionOption>,
    ) -> Result<Self> {
        if options.is_empty() {
            return Err(Error::invalid_input(
                "options",
                None,
                "a decision needs at least one option",
            ));
        }
        let mut seen = HashSet::new();
        for option in &options {
            check_id(&option.id)?;
            if !seen.insert(option.id.as_str()) {
                return Err(Error::invalid_input(
                    "options.id",
                    Some(option.id.clone()),
                    "option ids must be unique; this id is given twice",
                ));
            }
        }
        let mut core = ThinkerCore::new(declaration, prompt.into_string());
        core.class = "decision_thinker".into();
        core.limits = ThinkerLimits {
            max_iterations: 1,
            max_guardrail_corrections: 0,
            max_tool_calls_per_turn: 0,
            ..ThinkerLimits::default()
        };
        Ok(Self {
            core,
            options: options.into(),
            observer: ThinkerObserver::default(),
            top_logprobs: DEFAULT_TOP_LOGPROBS,
        })
    }

    /// The options, in the order given.
    pub fn options(&self) -> &[DecisionOption] {
        &self.options
    }

    /// Ask for this many alternatives per token (at most 20; 10 unless set). More alternatives
    /// let more options get a measured confidence. `0` asks for no log-probabilities at all (for
    /// an OpenAI reasoning model, which refuses them): every confidence is then unavailable.
    #[must_use]
    pub fn top_logprobs(mut self, n: u8) -> Self {
        self.top_logprobs = n.min(20);
        self
    }

    /// A shared view of the last run's conversation.
    pub fn observer(&self) -> ThinkerObserver {
        self.observer.clone()
    }

    /// The job that chooses one option for `input` (its query says what to decide).
    pub fn choose(&self, input: impl Into<ThinkerInput>) -> DecisionJob<Choice> {
        self.job(input.into(), Mode::Choose)
    }

    /// The job that ranks the `k` best options for `input`, best first. `k` must be between 1
    /// and the number of options (an error names `k` and its value).
    pub fn rank(&self, input: impl Into<ThinkerInput>, k: usize) -> Result<DecisionJob<Ranking>> {
        if k == 0 || k > self.options.len() {
            return Err(Error::invalid_input(
                "k",
                Some(k.to_string()),
                format!(
                    "a ranking names between 1 and {} options (the number given)",
                    self.options.len()
                ),
            ));
        }
        Ok(self.job(input.into(), Mode::Rank(k)))
    }

    fn job<T>(&self, input: ThinkerInput, mode: Mode) -> DecisionJob<T> {
        DecisionJob {
            core: self.core.clone(),
            contract: OptionsContract {
                options: self.options.clone(),
                mode,
                choice: Arc::new(AnswerShape::new()),
                ranking: Arc::new(AnswerShape::new()),
            },
            observer: self.observer.clone(),
            top_logprobs: self.top_logprobs,
            input,
            _out: PhantomData,
        }
    }
}

/// One run of a [`DecisionThinker`]: a [`Choice`] from [`DecisionThinker::choose`] or a
/// [`Ranking`] from [`DecisionThinker::rank`].
pub struct DecisionJob<T> {
    core: ThinkerCore,
    contract: OptionsContract,
    observer: ThinkerObserver,
    top_logprobs: u8,
    input: ThinkerInput,
    _out: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for DecisionJob<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecisionJob")
            .field("core", &self.core)
            .field("mode", &self.contract.mode)
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

seat_in_core!(impl<T> for DecisionJob<T>);

seat_in_core!(impl for DecisionThinker);
shared_setters!(impl for DecisionThinker);

impl HasCore for DecisionThinker {
    fn core_mut(&mut self) -> &mut ThinkerCore {
        &mut self.core
    }
}

impl<T> DecisionJob<T> {
    /// Run the exchange: the ids the model picked and the response that carried them.
    async fn decide(&mut self, cx: &JobContext) -> Result<(Vec<String>, ChatResponse)> {
        let ex = Exchange {
            core: &self.core,
            prompt: self.contract.prompt(&self.input),
            depth: self.input.depth,
            logprobs: (self.top_logprobs > 0).then_some(self.top_logprobs),
            observer: &self.observer,
        };
        let accepted = exchange(ex, &self.contract, cx).await?;
        Ok((accepted.value.0, accepted.response))
    }

    /// The answer's tokens, or why there is no confidence to compute.
    fn tokens<'a>(
        &self,
        response: &'a ChatResponse,
        text: &'a str,
    ) -> std::result::Result<Tokens<'a>, String> {
        if self.top_logprobs == 0 {
            return Err("log-probabilities were not requested (top_logprobs is 0)".into());
        }
        Tokens::of(response, text)
    }

    fn option(&self, id: &str) -> Result<DecisionOption> {
        self.contract
            .options
            .iter()
            .find(|o| o.id == id)
            .cloned()
            .ok_or_else(|| Error::system("decision thinker", "an accepted id names no option"))
    }
}

impl Orchestrator for DecisionJob<Choice> {
    type Output = Choice;

    fn class(&self) -> Cow<'static, str> {
        Cow::Owned(self.core.class.clone())
    }

    /// The thinker bounds its own corrections; the dispatcher never re-runs it.
    fn max_corrections(&self) -> u32 {
        0
    }

    async fn execute(&mut self, cx: &JobContext) -> Result<Choice> {
        let (picked, response) = self.decide(cx).await?;
        let chosen_id = picked.first().cloned().unwrap_or_default();
        let text = response.text();
        let ids = self.contract.ids();
        let reading = self.tokens(&response, &text).and_then(|tokens| {
            let spans = spans_after_key(&text, "choice", &[chosen_id.as_str()])
                .ok_or_else(|| "the chosen id was not found in the answer text".to_owned())?;
            let (start, end) = spans[0];
            Ok(tokens.at(start, end, &ids))
        });
        let confidence_of = |id: &str| match &reading {
            Ok(r) => r.of(id, &chosen_id),
            Err(reason) => Confidence::Unavailable {
                reason: reason.clone(),
            },
        };
        let options = self
            .contract
            .options
            .iter()
            .map(|o| Scored {
                option: o.clone(),
                confidence: confidence_of(&o.id),
            })
            .collect();
        Ok(Choice {
            chosen: Scored {
                option: self.option(&chosen_id)?,
                confidence: confidence_of(&chosen_id),
            },
            options,
        })
    }
}

impl Orchestrator for DecisionJob<Ranking> {
    type Output = Ranking;

    fn class(&self) -> Cow<'static, str> {
        Cow::Owned(self.core.class.clone())
    }

    /// The thinker bounds its own corrections; the dispatcher never re-runs it.
    fn max_corrections(&self) -> u32 {
        0
    }

    async fn execute(&mut self, cx: &JobContext) -> Result<Ranking> {
        let (picked, response) = self.decide(cx).await?;
        let text = response.text();
        let ids = self.contract.ids();
        let order: Vec<&str> = picked.iter().map(String::as_str).collect();
        let located = self.tokens(&response, &text).and_then(|tokens| {
            let spans = spans_after_key(&text, "ranking", &order)
                .ok_or_else(|| "the ranked ids were not found in the answer text".to_owned())?;
            Ok((tokens, spans))
        });
        let mut ranked = Vec::with_capacity(picked.len());
        for (i, id) in picked.iter().enumerate() {
            let confidence = match &located {
                Ok((tokens, spans)) => {
                    let (start, end) = spans[i];
                    tokens.at(start, end, &ids).of(id, id)
                }
                Err(reason) => Confidence::Unavailable {
                    reason: reason.clone(),
                },
            };
            ranked.push(Scored {
                option: self.option(id)?,
                confidence,
            });
        }
        Ok(Ranking { ranked })
    }
}
