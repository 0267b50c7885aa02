//! The answer planner: from a decoded request to what the model "says", independent of the wire.
//!
//! Order of decisions:
//! 1. a script rule that matches answers;
//! 2. otherwise the schema-driven mode: a tool round while tools are offered, tool choice allows
//!    and fewer than `tool_rounds` rounds were completed (or a tool is forced); else the final
//!    answer (JSON for the requested schema, `{"answer": …}` for JSON mode, text otherwise);
//! 3. a content fault, when one was chosen, reshapes the answer;
//! 4. an answer longer than the requested output budget is cut (`length` / `max_tokens`).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::config::{Profile, SimModel};
use crate::exchange::{AnswerFormat, Dialect, Exchange, ToolChoice, ToolSpec};
use crate::fault::FaultKind;
use crate::schema::{self, EnumChoice, SampleOptions};
use crate::script::{Probe, ScriptAnswer, ScriptRunner};
use crate::text_protocol;
use crate::tokens;

/// The most characters of conversation text quoted into an answer.
const QUOTE_CHARS: usize = 200;

/// One tool call of the answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlannedCall {
    pub(crate) id: String,
    pub(crate) name: String,
    /// The arguments as a JSON value (an object for well-formed calls).
    pub(crate) input: Value,
}

impl PlannedCall {
    /// The arguments as the JSON text OpenAI puts in `function.arguments`.
    pub(crate) fn arguments(&self) -> String {
        self.input.to_string()
    }
}

/// The visible part of the answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
    /// Text content (plain, JSON, malformed JSON or text-protocol tool calls).
    Text(String),
    /// Native tool calls.
    ToolCalls(Vec<PlannedCall>),
}

/// Why the answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    Stop,
    Length,
    ToolUse,
}

/// What the model answers.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Anthropic thinking text (signed by the renderer).
    pub(crate) thinking: Option<String>,
    pub(crate) body: Body,
    pub(crate) finish: Finish,
    /// Output tokens, thinking and reasoning included.
    pub(crate) output_tokens: u64,
    /// OpenAI reasoning tokens (part of `output_tokens`).
    pub(crate) reasoning_tokens: u64,
    /// Enum choices made for the answer, for logprobs.
    pub(crate) choices: Vec<EnumChoice>,
    /// Whether this answer used good values.
    pub(crate) good: bool,
    /// The generator, kept for rendering decisions that must stay deterministic (ids, logprobs).
    pub(crate) rng: StdRng,
}

/// What the planner needs besides the request.
pub(crate) struct PlanContext<'a> {
    pub(crate) model: &'a SimModel,
    pub(crate) profile: &'a Profile,
    pub(crate) script: Option<&'a ScriptRunner>,
    pub(crate) fault: Option<FaultKind>,
}

fn quote(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = flat.chars().take(QUOTE_CHARS).collect();
    if flat.chars().count() > QUOTE_CHARS {
        out.push('…');
    }
    out
}

fn random_id(rng: &mut StdRng, prefix: &str, len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut id = String::with_capacity(prefix.len() + len);
    id.push_str(prefix);
    for _ in 0..len {
        id.push(char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]));
    }
    id
}

/// A tool-call id in the dialect's style.
fn call_id(rng: &mut StdRng, dialect: Dialect) -> String {
    match dialect {
        Dialect::OpenAi | Dialect::OpenAiResponses => random_id(rng, "call_", 24),
        Dialect::Anthropic => random_id(rng, "toolu_01", 22),
        // Gemini's calls carry no id on the wire; the id only names the call inside the sim.
        Dialect::Gemini => random_id(rng, "fc_", 16),
        Dialect::Bedrock => random_id(rng, "tooluse_", 22),
    }
}

/// Plans the answer to `exchange`.
pub(crate) fn plan(exchange: &Exchange, cx: &PlanContext<'_>) -> Plan {
    let mut rng = StdRng::seed_from_u64(exchange.content_seed);
    let good = rng.random_bool(cx.profile.quality.clamp(0.0, 1.0));
    let mut planner = Planner {
        exchange,
        rng,
        good,
        choices: Vec::new(),
    };
    let mut body = planner
        .scripted(cx)
        .unwrap_or_else(|| planner.schema_driven(cx.profile));
    let mut finish = match &body {
        Body::ToolCalls(_) => Finish::ToolUse,
        Body::Text(_) => Finish::Stop,
    };
    if let Some(kind) = cx.fault {
        (body, finish) = planner.apply_fault(kind, body, finish);
    }
    if planner.exchange.text_tool_mode()
        && let Body::ToolCalls(calls) = &body
    {
        let pairs: Vec<(String, Value)> = calls
            .iter()
            .map(|c| (c.name.clone(), c.input.clone()))
            .collect();
        body = Body::Text(text_protocol::render_calls(&pairs));
        finish = Finish::Stop;
    }
    // Anthropic signs thinking blocks; Responses summarises reasoning items; Gemini signs thoughts;
    // Bedrock signs reasoning blocks.
    let thinking = (exchange.thinking
        && matches!(
            exchange.dialect,
            Dialect::Anthropic | Dialect::OpenAiResponses | Dialect::Gemini | Dialect::Bedrock
        ))
    .then(|| planner.thinking_text(&body));
    planner.finish(body, finish, thinking, cx)
}

struct Planner<'a> {
    exchange: &'a Exchange,
    rng: StdRng,
    good: bool,
    choices: Vec<EnumChoice>,
}

impl Planner<'_> {
    fn scripted(&mut self, cx: &PlanContext<'_>) -> Option<Body> {
        let script = cx.script?;
        let last = self.exchange.last_input();
        let last_user = self.exchange.last_user_text();
        let last_tool = self.exchange.last_tool_result();
        let probe = Probe {
            model: &self.exchange.model,
            last: last.as_deref(),
            last_user: last_user.as_deref(),
            last_tool_result: last_tool.as_deref(),
        };
        let answer = script.pick(&probe)?.clone();
        Some(match answer {
            ScriptAnswer::Text(text) => Body::Text(text),
            ScriptAnswer::Json(value) => Body::Text(value.to_string()),
            ScriptAnswer::ToolCalls(calls) => Body::ToolCalls(
                calls
                    .into_iter()
                    .map(|c| PlannedCall {
                        id: call_id(&mut self.rng, self.exchange.dialect),
                        name: c.name,
                        input: c.arguments,
                    })
                    .collect(),
            ),
        })
    }

    fn schema_driven(&mut self, profile: &Profile) -> Body {
        let tools = self.exchange.offered_tools();
        let forced = matches!(
            self.exchange.tool_choice,
            ToolChoice::Required | ToolChoice::Named(_)
        );
        let wants_round = self.exchange.completed_rounds() < profile.tool_rounds;
        if !tools.is_empty()
            && self.exchange.tool_choice != ToolChoice::None
            && (forced || wants_round)
        {
            return Body::ToolCalls(self.tool_round(tools, profile));
        }
        Body::Text(self.final_text())
    }

    fn tool_round(&mut self, tools: &[ToolSpec], profile: &Profile) -> Vec<PlannedCall> {
        let chosen: Vec<&ToolSpec> = match &self.exchange.tool_choice {
            ToolChoice::Named(name) => tools.iter().filter(|t| &t.name == name).take(1).collect(),
            _ => {
                let wanted = if self.exchange.parallel {
                    profile.parallel_tool_calls.max(1) as usize
                } else {
                    1
                };
                let start = self.rng.random_range(0..tools.len());
                (0..wanted)
                    .map(|i| &tools[(start + i) % tools.len()])
                    .collect()
            }
        };
        let hint = self.exchange.last_user_text().map(|t| quote(&t));
        chosen
            .into_iter()
            .map(|tool| {
                let quotable = self.quotable_for(&tool.schema);
                let sample = schema::sample_with(
                    &tool.schema,
                    &mut self.rng,
                    SampleOptions {
                        good: self.good,
                        hint: hint.clone(),
                        quotable,
                    },
                );
                PlannedCall {
                    id: call_id(&mut self.rng, self.exchange.dialect),
                    name: tool.name.clone(),
                    input: sample.value,
                }
            })
            .collect()
    }

    /// The sentence a text answer is built from: it quotes the question and the latest tool
    /// result, whichever there are (so tests can see both reached the model).
    fn answer_sentence(&self) -> String {
        let question = self.exchange.last_user_text().map(|t| quote(&t));
        let result = self.exchange.last_tool_result().map(|t| quote(&t));
        match (self.good, question, result) {
            (true, Some(q), Some(r)) => {
                format!("Answer to \"{q}\": according to the tool result, {r}")
            }
            (true, None, Some(r)) => format!("According to the tool result, {r}"),
            (true, Some(q), None) => format!("Answer to \"{q}\": here is what I can say about it."),
            (false, Some(q), Some(r)) => format!("Probably, as to \"{q}\": {r}"),
            (false, None, Some(r)) => format!("Probably: {r}"),
            (false, Some(q), None) => format!("Not sure about \"{q}\"."),
            (_, None, None) => "Hello! How can I help?".to_owned(),
        }
    }

    fn final_text(&mut self) -> String {
        match &self.exchange.format {
            AnswerFormat::Text => self.answer_sentence(),
            AnswerFormat::JsonObject => json!({ "answer": self.answer_sentence() }).to_string(),
            AnswerFormat::JsonSchema(schema) => {
                let hint = self.answer_sentence();
                let quotable = self.quotable_for(schema);
                let sample = schema::sample_with(
                    schema,
                    &mut self.rng,
                    SampleOptions {
                        good: self.good,
                        hint: Some(hint),
                        quotable,
                    },
                );
                self.choices.extend(sample.choices);
                sample.value.to_string()
            }
        }
    }

    /// The conversation's words, when `schema` has a pattern-constrained string to copy them
    /// into (the common schema has none, and then the conversation is not split).
    fn quotable_for(&self, schema: &Value) -> Vec<String> {
        if schema::has_pattern(schema) {
            self.exchange.quotable_words()
        } else {
            Vec::new()
        }
    }

    fn json_due(&self) -> bool {
        self.exchange.format != AnswerFormat::Text
    }

    fn unknown_tool_name(&self) -> String {
        let offered = self.exchange.offered_tools();
        let mut name = "unknown_tool".to_owned();
        let mut n = 2;
        while offered.iter().any(|t| t.name == name) {
            name = format!("unknown_tool_{n}");
            n += 1;
        }
        name
    }

    fn apply_fault(&mut self, kind: FaultKind, body: Body, finish: Finish) -> (Body, Finish) {
        match kind {
            FaultKind::Truncate => {
                let text = self.final_text();
                let half = text.chars().count() / 2;
                (
                    Body::Text(text.chars().take(half.max(1)).collect()),
                    Finish::Length,
                )
            }
            FaultKind::MalformedJson => {
                let text = if self.json_due() {
                    self.final_text()
                } else {
                    json!({ "answer": self.answer_sentence() }).to_string()
                };
                let mut cut: String = text.chars().collect();
                cut.pop();
                (
                    Body::Text(format!("Here is the JSON you asked for: {cut}")),
                    Finish::Stop,
                )
            }
            FaultKind::WrongShape => (
                Body::Text(Value::String(self.answer_sentence()).to_string()),
                Finish::Stop,
            ),
            FaultKind::UnknownTool => {
                let call = PlannedCall {
                    id: call_id(&mut self.rng, self.exchange.dialect),
                    name: self.unknown_tool_name(),
                    input: json!({}),
                };
                (Body::ToolCalls(vec![call]), Finish::ToolUse)
            }
            FaultKind::InvalidToolArgs => {
                let tools = self.exchange.offered_tools();
                let call = if tools.is_empty() {
                    PlannedCall {
                        id: call_id(&mut self.rng, self.exchange.dialect),
                        name: self.unknown_tool_name(),
                        input: json!({"unexpected": 1}),
                    }
                } else {
                    let tool = &tools[self.rng.random_range(0..tools.len())];
                    let (input, _) = schema::violate(&tool.schema, &mut self.rng);
                    PlannedCall {
                        id: call_id(&mut self.rng, self.exchange.dialect),
                        name: tool.name.clone(),
                        input,
                    }
                };
                (Body::ToolCalls(vec![call]), Finish::ToolUse)
            }
            // Transport and exchange faults never reach the planner.
            FaultKind::Http500
            | FaultKind::Overloaded529
            | FaultKind::RateLimit429
            | FaultKind::Hang
            | FaultKind::StreamError
            | FaultKind::EchoKey
            | FaultKind::StreamErrorEchoKey
            | FaultKind::Error200
            | FaultKind::RedirectKey
            | FaultKind::RetryAfter
            | FaultKind::StallMidStream
            | FaultKind::StallBeforeContent
            | FaultKind::SlowFirstEvent
            | FaultKind::EmptyStream
            | FaultKind::TruncatedStream
            | FaultKind::HtmlBody
            | FaultKind::CutJson
            | FaultKind::EmptyAnswer => (body, finish),
        }
    }

    fn thinking_text(&self, body: &Body) -> String {
        let question = self
            .exchange
            .last_user_text()
            .map_or_else(|| "the conversation so far".to_owned(), |q| quote(&q));
        let rounds = self.exchange.completed_rounds();
        let next = match body {
            Body::ToolCalls(calls) => {
                let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
                format!("I will call {}.", names.join(", "))
            }
            Body::Text(_) => "I have enough to answer.".to_owned(),
        };
        format!("The user asks about {question}. {rounds} tool round(s) are done so far. {next}")
    }

    fn finish(
        mut self,
        mut body: Body,
        mut finish: Finish,
        thinking: Option<String>,
        cx: &PlanContext<'_>,
    ) -> Plan {
        let visible = match &body {
            Body::Text(t) => tokens::output_tokens([t.as_str()]),
            Body::ToolCalls(calls) => {
                let args: Vec<String> = calls.iter().map(PlannedCall::arguments).collect();
                tokens::output_tokens(
                    calls
                        .iter()
                        .map(|c| c.name.as_str())
                        .chain(args.iter().map(String::as_str)),
                )
            }
        };
        let thinking_tokens = thinking
            .as_deref()
            .map_or(0, |t| tokens::output_tokens([t]));
        let budget = self
            .exchange
            .max_output
            .unwrap_or(u64::from(cx.model.output_ceiling))
            .min(u64::from(cx.model.output_ceiling));
        let mut reasoning = match (self.exchange.dialect, self.exchange.thinking) {
            (Dialect::OpenAi, true) => {
                effort_tokens(self.exchange.reasoning_effort.as_deref()).min(budget / 2)
            }
            _ => 0,
        };
        let mut output = visible + thinking_tokens + reasoning;
        if finish != Finish::Length && output > budget {
            // The answer does not fit the budget: cut it, like a model hitting max_tokens.
            let room = budget.saturating_sub(thinking_tokens + reasoning);
            let text = match &body {
                Body::Text(t) => t.clone(),
                Body::ToolCalls(_) => self.final_text(),
            };
            let cut: String = text.chars().take((room * 4) as usize).collect();
            body = Body::Text(cut);
            finish = Finish::Length;
            reasoning = reasoning.min(budget);
            output = budget;
        }
        Plan {
            thinking,
            body,
            finish,
            output_tokens: output,
            reasoning_tokens: reasoning,
            choices: self.choices,
            good: self.good,
            rng: self.rng,
        }
    }
}

/// Reasoning tokens an OpenAI reasoning effort spends.
fn effort_tokens(effort: Option<&str>) -> u64 {
    match effort {
        Some("none") => 0,
        Some("minimal") => 32,
        Some("low") => 128,
        Some("high") => 1024,
        Some("xhigh") => 2048,
        Some("max") => 4096,
        _ => 256,
    }
}

#[cfg(test)]
mod tests;
