//! Confidence of a decision from the token log-probabilities of the answer.
//!
//! The method, for an option id the model wrote at some place in its answer text:
//!
//! 1. The answer's tokens must concatenate to the answer text exactly; each token then has a byte
//!    span, and the id's span is covered by a run of tokens.
//! 2. The written id's probability is the product of the probabilities of the tokens covering it
//!    (the model's joint probability of writing exactly those characters there).
//! 3. Another option's probability is read where the model could have turned to it: at each
//!    covering token, every listed alternative is appended to the id characters already written
//!    before that token. When the result is a prefix of exactly one other option id (or equals
//!    it, when the alternative closes the string), that option gets the probability of the
//!    written prefix times the alternative's. This is exact when the alternative completes the
//!    id and an upper estimate when more tokens would follow; an option no listed alternative
//!    leads to is [`Confidence::Unlisted`].
//!
//! Without log-probabilities (the Anthropic Messages API offers none) every option is
//! [`Confidence::Unavailable`] with the reason.

use serde::{Deserialize, Serialize};

use crate::llm::{ChatResponse, TokenLogprob};

/// How sure the model was of an option, from the log-probabilities of its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Confidence {
    /// The probability (0..=1) the model gave this option where it wrote its decision.
    Measured {
        /// The probability.
        probability: f64,
    },
    /// No alternative the provider listed where the decision was written leads to this option:
    /// its probability was below the listed ones and is not known.
    Unlisted,
    /// No confidence can be computed for this answer.
    Unavailable {
        /// Why (for example: the provider returns no log-probabilities).
        reason: String,
    },
}

impl Confidence {
    /// The measured probability, if there is one.
    pub fn probability(&self) -> Option<f64> {
        match self {
            Self::Measured { probability } => Some(*probability),
            Self::Unlisted | Self::Unavailable { .. } => None,
        }
    }
}

/// The tokens of an answer with their byte spans in its text.
pub(crate) struct Tokens<'a> {
    text: &'a str,
    tokens: &'a [TokenLogprob],
    spans: Vec<(usize, usize)>,
}

impl<'a> Tokens<'a> {
    /// The tokens of `response` over `text`, or why there is no confidence to compute.
    pub(crate) fn of(response: &'a ChatResponse, text: &'a str) -> Result<Self, String> {
        let tokens = match response.logprobs.as_deref() {
            Some(t) if !t.is_empty() => t,
            _ => {
                return Err(format!(
                    "the answer of model `{}` carried no log-probabilities (only providers \
                     speaking the OpenAI Chat Completions format return them; the Anthropic \
                     Messages API does not)",
                    response.model
                ));
            }
        };
        let mut spans = Vec::with_capacity(tokens.len());
        let mut at = 0usize;
        for t in tokens {
            let end = at + t.token.len();
            if text.get(at..end) != Some(t.token.as_str()) {
                return Err("the log-probabilities do not cover the answer text".into());
            }
            spans.push((at, end));
            at = end;
        }
        if at != text.len() {
            return Err("the log-probabilities do not cover the answer text".into());
        }
        Ok(Self {
            text,
            tokens,
            spans,
        })
    }

    /// The confidence of the id written at `start..end` of the text, and of every other id that
    /// one listed alternative leads to (see the module docs).
    pub(crate) fn at(&self, start: usize, end: usize, ids: &[&str]) -> Reading {
        let covering: Vec<usize> = (0..self.spans.len())
            .filter(|&i| self.spans[i].0 < end && self.spans[i].1 > start)
            .collect();
        let written = &self.text[start..end];
        let mut prefix_p = 1.0f64;
        let mut others: Vec<(String, f64)> = Vec::new();
        for &i in &covering {
            let (s, _) = self.spans[i];
            let token = &self.tokens[i];
            // What precedes the id inside this token (a quote, a space), and what of the id was
            // written before it.
            let lead = if s < start { &self.text[s..start] } else { "" };
            let consumed = &self.text[start..s.max(start)];
            for (alt, logprob) in &token.top {
                if *alt == token.token {
                    continue;
                }
                let Some(body) = alt.strip_prefix(lead) else {
                    continue;
                };
                // An id holds no quote, so a quote closes the string: the candidate is complete.
                let (body, closed) = match body.split_once('"') {
                    Some((b, _)) => (b, true),
                    None => (body, false),
                };
                let candidate = format!("{consumed}{body}");
                if candidate.is_empty() {
                    continue;
                }
                let reached: Vec<&&str> = ids
                    .iter()
                    .filter(|id| **id != written)
                    .filter(|id| {
                        if closed {
                            **id == candidate
                        } else {
                            id.starts_with(&candidate)
                        }
                    })
                    .collect();
                if let [id] = reached.as_slice()
                    && !others.iter().any(|(o, _)| o == **id)
                {
                    others.push(((**id).to_owned(), prefix_p * logprob.exp()));
                }
            }
            prefix_p *= token.logprob.exp();
        }
        Reading {
            written: prefix_p,
            others,
        }
    }
}

/// What the log-probabilities say at one written id.
pub(crate) struct Reading {
    /// The probability of the id that was written.
    pub(crate) written: f64,
    /// Other ids reached by one listed alternative, with their probabilities.
    pub(crate) others: Vec<(String, f64)>,
}

impl Reading {
    /// The confidence of `id` at this place.
    pub(crate) fn of(&self, id: &str, written: &str) -> Confidence {
        if id == written {
            return Confidence::Measured {
                probability: self.written,
            };
        }
        match self.others.iter().find(|(o, _)| o == id) {
            Some((_, p)) => Confidence::Measured { probability: *p },
            None => Confidence::Unlisted,
        }
    }
}

/// The byte spans of `ids`, written in this order after the key `"key"` in `text` (each as a
/// JSON string: an id holds no quote or backslash, so it is written as it is).
pub(crate) fn spans_after_key(text: &str, key: &str, ids: &[&str]) -> Option<Vec<(usize, usize)>> {
    let mut at = text.find(&format!("\"{key}\""))? + key.len() + 2;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let quoted = format!("\"{id}\"");
        let found = text.get(at..)?.find(&quoted)? + at;
        let start = found + 1;
        let end = start + id.len();
        out.push((start, end));
        at = end + 1;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{StopReason, Usage};

    fn tok(token: &str, p: f64, top: &[(&str, f64)]) -> TokenLogprob {
        TokenLogprob {
            token: token.into(),
            logprob: p.ln(),
            top: top.iter().map(|(t, p)| ((*t).to_owned(), p.ln())).collect(),
        }
    }

    fn response(tokens: Vec<TokenLogprob>) -> ChatResponse {
        ChatResponse {
            content: vec![],
            stop: StopReason::EndTurn,
            usage: Usage::default(),
            model: "m".into(),
            logprobs: Some(tokens),
        }
    }

    #[test]
    fn one_token_ids_read_the_alternatives_at_that_token() {
        let text = r#"{"choice":"billing"}"#;
        let r = response(vec![
            tok(r#"{"choice":""#, 1.0, &[]),
            tok(
                "billing",
                0.7,
                &[("billing", 0.7), ("technical", 0.2), ("nonsense", 0.05)],
            ),
            tok(r#""}"#, 1.0, &[]),
        ]);
        let tokens = Tokens::of(&r, text).unwrap();
        let spans = spans_after_key(text, "choice", &["billing"]).unwrap();
        let (s, e) = spans[0];
        assert_eq!(&text[s..e], "billing");
        let reading = tokens.at(s, e, &["billing", "technical", "other"]);
        let p = |id| reading.of(id, "billing").probability();
        assert!((p("billing").unwrap() - 0.7).abs() < 1e-9);
        assert!((p("technical").unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(reading.of("other", "billing"), Confidence::Unlisted);
    }

    #[test]
    fn multi_token_ids_multiply_and_turn_where_they_diverge() {
        // opt_b written as `"opt` + `_b"}`; opt_a is reached at the second token.
        let text = r#"{"choice":"opt_b"}"#;
        let r = response(vec![
            tok(r#"{"choice":"#, 1.0, &[]),
            tok(r#""opt"#, 0.9, &[(r#""opt"#, 0.9), (r#""zeta"#, 0.05)]),
            tok(
                r#"_b"}"#,
                0.5,
                &[(r#"_b"}"#, 0.5), (r#"_a"}"#, 0.4), ("_", 0.05)],
            ),
        ]);
        let tokens = Tokens::of(&r, text).unwrap();
        let (s, e) = spans_after_key(text, "choice", &["opt_b"]).unwrap()[0];
        let ids = ["opt_a", "opt_b", "zeta_long", "other"];
        let reading = tokens.at(s, e, &ids);
        let p = |id| reading.of(id, "opt_b").probability();
        assert!((p("opt_b").unwrap() - 0.45).abs() < 1e-9);
        assert!((p("opt_a").unwrap() - 0.36).abs() < 1e-9);
        assert!(
            (p("zeta_long").unwrap() - 0.05).abs() < 1e-9,
            "a unique prefix"
        );
        assert_eq!(reading.of("other", "opt_b"), Confidence::Unlisted);
    }

    #[test]
    fn tokens_that_do_not_cover_the_text_give_no_confidence() {
        let r = response(vec![tok("{}", 1.0, &[])]);
        assert!(Tokens::of(&r, r#"{"choice":"a"}"#).is_err());
        let none = ChatResponse {
            logprobs: None,
            ..response(vec![])
        };
        let why = Tokens::of(&none, "{}").err().unwrap();
        assert!(why.contains("no log-probabilities"), "{why}");
    }

    #[test]
    fn ranked_ids_are_found_in_order_after_the_key() {
        let text = r#"{"ranking": ["b", "a"]}"#;
        let spans = spans_after_key(text, "ranking", &["b", "a"]).unwrap();
        let got: Vec<&str> = spans.iter().map(|(s, e)| &text[*s..*e]).collect();
        assert_eq!(got, ["b", "a"]);
        assert!(spans_after_key(text, "ranking", &["c"]).is_none());
    }
}
