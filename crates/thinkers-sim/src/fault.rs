//! Faults on demand: the kinds of misbehaviour the sim can serve, and the rules that trigger them.
//!
//! A request gets at most one fault. The first source that names one wins:
//! 1. the request header `x-sim-fault: KIND`;
//! 2. an injected [`FaultRule`] (through [`crate::Sim::inject`] or `POST /sim/faults`) whose model
//!    matches, consumed one unit per request;
//! 3. the model's random rates from its [`crate::Profile`], rolled in a fixed order from a generator
//!    seeded by the sim's seed, the model name and the model's request ordinal.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The name of the request header that asks for a fault.
pub const FAULT_HEADER: &str = "x-sim-fault";

/// One kind of misbehaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// HTTP 500 with the provider's server-error body.
    #[serde(rename = "http_500")]
    Http500,
    /// Anthropic: HTTP 529 `overloaded_error`; OpenAI: HTTP 503 with a server-error body.
    #[serde(rename = "overloaded_529", alias = "overloaded")]
    Overloaded529,
    /// HTTP 429 with the provider's rate-limit body and headers, whatever the real budget says.
    #[serde(rename = "rate_limit_429", alias = "rate_limit")]
    RateLimit429,
    /// Accept the request and do not answer for the configuration's `hang_ms` (five minutes by
    /// default, far past any sensible client timeout), then answer 500. Shutting the sim down
    /// ends hanging requests at once.
    Hang,
    /// The answer is cut halfway (mid-JSON when JSON is due) and ends with
    /// `finish_reason: "length"` / `stop_reason: "max_tokens"`.
    Truncate,
    /// Answer text that is not valid JSON where JSON was requested.
    MalformedJson,
    /// A flattened JSON string (`"just text"`) where an object answer is due.
    WrongShape,
    /// A call to a tool that was not offered.
    UnknownTool,
    /// A tool call whose arguments violate the tool's schema (missing required field or wrong type).
    InvalidToolArgs,
    /// A streamed answer breaks after a few events: Anthropic sends an `error` event inside the
    /// 200 stream; OpenAI cuts the connection. A non-streamed request gets an HTTP 500 instead.
    StreamError,
}

impl FaultKind {
    /// Every kind, in the order in which random rates are rolled.
    pub const ALL: [Self; 10] = [
        Self::Http500,
        Self::Overloaded529,
        Self::RateLimit429,
        Self::Hang,
        Self::StreamError,
        Self::Truncate,
        Self::MalformedJson,
        Self::WrongShape,
        Self::UnknownTool,
        Self::InvalidToolArgs,
    ];

    /// The snake_case name used in headers, JSON and TOML.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http500 => "http_500",
            Self::Overloaded529 => "overloaded_529",
            Self::RateLimit429 => "rate_limit_429",
            Self::Hang => "hang",
            Self::Truncate => "truncate",
            Self::MalformedJson => "malformed_json",
            Self::WrongShape => "wrong_shape",
            Self::UnknownTool => "unknown_tool",
            Self::InvalidToolArgs => "invalid_tool_args",
            Self::StreamError => "stream_error",
        }
    }

    /// True for kinds answered without a model answer (an error status, a hang or a broken stream).
    pub fn is_transport(self) -> bool {
        matches!(
            self,
            Self::Http500
                | Self::Overloaded529
                | Self::RateLimit429
                | Self::Hang
                | Self::StreamError
        )
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error returned when a string names no fault kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown fault kind `{0}`")]
pub struct UnknownFaultKind(pub String);

impl FromStr for FaultKind {
    type Err = UnknownFaultKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        let alias = match wanted {
            "overloaded" | "overloaded_529" => Some(Self::Overloaded529),
            "rate_limit" | "rate_limit_429" => Some(Self::RateLimit429),
            _ => None,
        };
        alias
            .or_else(|| Self::ALL.into_iter().find(|k| k.as_str() == wanted))
            .ok_or_else(|| UnknownFaultKind(wanted.to_owned()))
    }
}

/// An injected fault: the next `count` requests for `model` (any model when `None`) get `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultRule {
    /// The model the rule applies to; `None` matches every model.
    #[serde(default)]
    pub model: Option<String>,
    /// What to serve.
    pub kind: FaultKind,
    /// How many requests get it (one unit is consumed per matching request).
    #[serde(default = "one")]
    pub count: u32,
}

fn one() -> u32 {
    1
}

impl FaultRule {
    /// A rule serving `kind` once to any model.
    pub fn new(kind: FaultKind) -> Self {
        Self {
            model: None,
            kind,
            count: 1,
        }
    }

    /// Restricts the rule to one model.
    #[must_use]
    pub fn for_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Serves the fault to the next `count` matching requests.
    #[must_use]
    pub fn times(mut self, count: u32) -> Self {
        self.count = count;
        self
    }
}

/// Per-kind probabilities (0..=1) of a random fault, as in the profile's `rates` table.
pub type FaultRates = BTreeMap<FaultKind, f64>;

/// The queue of injected rules, consumed first come, first served.
#[derive(Debug, Default)]
pub(crate) struct FaultQueue {
    rules: Vec<FaultRule>,
}

impl FaultQueue {
    pub(crate) fn push(&mut self, rule: FaultRule) {
        if rule.count > 0 {
            self.rules.push(rule);
        }
    }

    /// Takes one unit of the first rule matching `model`.
    pub(crate) fn take(&mut self, model: &str) -> Option<FaultKind> {
        let pos = self
            .rules
            .iter()
            .position(|r| r.model.as_deref().is_none_or(|m| m == model))?;
        let rule = &mut self.rules[pos];
        let kind = rule.kind;
        rule.count -= 1;
        if rule.count == 0 {
            self.rules.remove(pos);
        }
        Some(kind)
    }

    pub(crate) fn clear(&mut self) {
        self.rules.clear();
    }

    pub(crate) fn pending(&self) -> Vec<FaultRule> {
        self.rules.clone()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_round_trip_and_aliases_parse() {
        for kind in FaultKind::ALL {
            assert_eq!(kind.as_str().parse::<FaultKind>().unwrap(), kind);
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        assert_eq!(
            "overloaded".parse::<FaultKind>().unwrap(),
            FaultKind::Overloaded529
        );
        let rates: FaultRates = toml::from_str("overloaded = 0.5\nwrong_shape = 0.1").unwrap();
        assert_eq!(rates[&FaultKind::Overloaded529], 0.5);
        assert!("nope".parse::<FaultKind>().is_err());
    }

    #[test]
    fn queue_consumes_matching_rules_in_order() {
        let mut q = FaultQueue::default();
        q.push(FaultRule::new(FaultKind::Http500).for_model("a").times(2));
        q.push(FaultRule::new(FaultKind::Hang));
        assert_eq!(q.take("b"), Some(FaultKind::Hang));
        assert_eq!(q.take("b"), None);
        assert_eq!(q.take("a"), Some(FaultKind::Http500));
        assert_eq!(q.take("a"), Some(FaultKind::Http500));
        assert_eq!(q.take("a"), None);
    }
}
