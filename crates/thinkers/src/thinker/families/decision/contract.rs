//! The options as an answer contract: the schema (an enum of the ids), the prompt listing
//! them, and the judgement of an answer (the answer-shape boundary, then the ids checked against
//! the options, refusals listing the accepted ids and never the model's value).

use std::collections::HashSet;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::DecisionOption;
use crate::Error;
use crate::llm::ResponseSchema;
use crate::thinker::answer::{AnswerShape, Judgement};
use crate::thinker::declaration::ThinkerInput;
use crate::thinker::guardrail::Verdict;
use crate::thinker::toolless::Contract;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Choose,
    Rank(usize),
}

/// The wire answer of a choice.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct DecisionAnswer {
    choice: String,
}

/// The wire answer of a ranking.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct RankingAnswer {
    ranking: Vec<String>,
}

/// The ids a model answered, in order.
#[derive(Debug, Clone)]
pub(crate) struct Picked(pub(crate) Vec<String>);

/// The options as the answer contract: an enum of their ids.
pub(crate) struct OptionsContract {
    pub(crate) options: Arc<[DecisionOption]>,
    pub(crate) mode: Mode,
    pub(crate) choice: Arc<AnswerShape<DecisionAnswer>>,
    pub(crate) ranking: Arc<AnswerShape<RankingAnswer>>,
}

impl OptionsContract {
    pub(crate) fn ids(&self) -> Vec<&str> {
        self.options.iter().map(|o| o.id.as_str()).collect()
    }

    fn accepted_ids(&self) -> String {
        self.ids()
            .iter()
            .map(|id| format!("\"{id}\""))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(crate) fn prompt(&self, input: &ThinkerInput) -> String {
        let mut text = input.query.clone();
        text.push_str("\n\nOptions:\n");
        for o in self.options.iter() {
            text.push_str(&format!("- {}: {}\n", o.id, o.description));
        }
        match self.mode {
            Mode::Choose => text.push_str(
                "\nAnswer with the id of the one option that fits best, exactly as written.",
            ),
            Mode::Rank(k) => text.push_str(&format!(
                "\nAnswer with the ids of the {k} options that fit best, best first, each once, \
                 exactly as written."
            )),
        }
        text
    }

    fn refuse(&self, parameter: &str, reason: String) -> Judgement<Picked> {
        Judgement::Refused(Error::invalid_input(parameter, None, reason))
    }
}

impl Contract for OptionsContract {
    type Output = Picked;

    fn schema(&self, _native_thinking: bool) -> Option<ResponseSchema> {
        let ids: Vec<Value> = self.ids().into_iter().map(Value::from).collect();
        let schema = match self.mode {
            Mode::Choose => json!({
                "type": "object",
                "properties": {"choice": {
                    "type": "string",
                    "enum": ids,
                    "description": "The id of the chosen option."
                }},
                "required": ["choice"],
                "additionalProperties": false,
            }),
            Mode::Rank(k) => json!({
                "type": "object",
                "properties": {"ranking": {
                    "type": "array",
                    "items": {"type": "string", "enum": ids},
                    "minItems": k,
                    "maxItems": k,
                    "uniqueItems": true,
                    "description": format!("The ids of the {k} best options, best first, each once.")
                }},
                "required": ["ranking"],
                "additionalProperties": false,
            }),
        };
        Some(ResponseSchema {
            name: "decision".into(),
            schema: schema.into(),
        })
    }

    fn judge(&self, text: &str, thinking: Option<&str>) -> Judgement<Picked> {
        let known = |id: &str| self.options.iter().any(|o| o.id == id);
        match self.mode {
            Mode::Choose => match self.choice.judge_bare(text, thinking) {
                Judgement::NoAnswer => Judgement::NoAnswer,
                Judgement::Refused(e) => Judgement::Refused(e),
                Judgement::Answer {
                    value,
                    json,
                    reasoning,
                } => {
                    if !known(&value.choice) {
                        return self.refuse(
                            "answer.choice",
                            format!(
                                "`choice` must be one of the option ids {}, exactly as written",
                                self.accepted_ids()
                            ),
                        );
                    }
                    Judgement::Answer {
                        value: Picked(vec![value.choice]),
                        json,
                        reasoning,
                    }
                }
            },
            Mode::Rank(k) => match self.ranking.judge_bare(text, thinking) {
                Judgement::NoAnswer => Judgement::NoAnswer,
                Judgement::Refused(e) => Judgement::Refused(e),
                Judgement::Answer {
                    value,
                    json,
                    reasoning,
                } => {
                    if value.ranking.iter().any(|id| !known(id)) {
                        return self.refuse(
                            "answer.ranking",
                            format!(
                                "every entry of `ranking` must be one of the option ids {}, \
                                 exactly as written",
                                self.accepted_ids()
                            ),
                        );
                    }
                    let distinct: HashSet<&str> =
                        value.ranking.iter().map(String::as_str).collect();
                    if distinct.len() != value.ranking.len() {
                        return self.refuse(
                            "answer.ranking",
                            "`ranking` must name each option at most once".into(),
                        );
                    }
                    if value.ranking.len() != k {
                        return self.refuse(
                            "answer.ranking",
                            format!("`ranking` must list exactly {k} option ids, best first"),
                        );
                    }
                    Judgement::Answer {
                        value: Picked(value.ranking),
                        json,
                        reasoning,
                    }
                }
            },
        }
    }

    fn check(&self, _value: &Picked) -> Verdict {
        Verdict::Accept
    }
}
