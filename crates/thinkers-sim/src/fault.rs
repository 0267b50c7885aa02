//! Faults on demand: the kinds of misbehaviour the sim can serve, and the rules that trigger them.
//!
//! A request gets at most one fault. The first source that names one wins:
//! 1. the request header `x-sim-fault: KIND` (parameters may follow, separated by `;`:
//!    `x-sim-fault: retry_after; status=503; retry_after_ms=1500`, see [`FaultParams`]);
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
    /// An HTTP error (status from [`FaultParams::status`], 401 by default) in the provider's
    /// body shape, whose message echoes the request's API key, as real providers answer
    /// "Incorrect API key provided: sk-…".
    EchoKey,
    /// An error event inside a 200 stream, echoing the API key: Anthropic `event: error`,
    /// OpenAI-compatible servers (vLLM, llama.cpp) `data: {"error": {…}}`. It follows the
    /// opening events and [`FaultParams::events`] content events (none by default); its error
    /// type follows [`FaultParams::status`] (401 `authentication_error` by default). A
    /// non-streamed request gets [`FaultKind::EchoKey`] instead.
    StreamErrorEchoKey,
    /// HTTP 200 whose body is an error object echoing the API key: Anthropic
    /// `{"type":"error","error":{…}}`, OpenAI `{"error":{…}}`; for a streamed request too.
    #[serde(rename = "error_200")]
    Error200,
    /// HTTP 307 whose `Location` carries the API key in its query (`?key=…`).
    RedirectKey,
    /// A retryable status ([`FaultParams::status`], 503 by default) with a server-requested
    /// wait: `retry-after` ([`FaultParams::retry_after_s`]) and/or `retry-after-ms`
    /// ([`FaultParams::retry_after_ms`]); one second when neither is set.
    RetryAfter,
    /// A stream that stalls mid-answer: the opening events and [`FaultParams::events`] content
    /// events (2 by default), then silence with the connection open for `hang_ms`, then the
    /// connection is cut. A non-streamed request gets the head and half the body, then silence.
    StallMidStream,
    /// A stream that stalls before any content: the opening events only, then silence for
    /// `hang_ms`, then the connection is cut. A non-streamed request gets the head, then silence.
    StallBeforeContent,
    /// The head at once, then silence for `hang_ms` before the first event (or the body), then
    /// the whole normal answer: a reasoning model that thinks before it speaks.
    SlowFirstEvent,
    /// HTTP 200 `text/event-stream` with no event at all; a non-streamed request gets an empty
    /// 200 `application/json` body.
    EmptyStream,
    /// A stream of the opening events only (no content, no finish, no `[DONE]` /
    /// `message_stop`), then the connection closes cleanly. A non-streamed request gets
    /// [`FaultKind::CutJson`].
    TruncatedStream,
    /// HTTP 200 `text/html`: a proxy's or gateway's page instead of JSON.
    HtmlBody,
    /// HTTP 200 `application/json` whose body is cut halfway (unparseable), for a streamed
    /// request too.
    CutJson,
    /// An answer with no content and no stop reason: Anthropic `content: []`,
    /// `stop_reason: null` (streamed: `message_start`, `message_delta` with a null stop reason,
    /// `message_stop`); OpenAI `content: ""`, `finish_reason: null`.
    EmptyAnswer,
}

impl FaultKind {
    /// Every kind, in the order in which random rates are rolled.
    /// Kinds added later come last, so the rolls of a profile that rates none of them stay as
    /// they were.
    pub const ALL: [Self; 23] = [
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
        Self::EchoKey,
        Self::StreamErrorEchoKey,
        Self::Error200,
        Self::RedirectKey,
        Self::RetryAfter,
        Self::StallMidStream,
        Self::StallBeforeContent,
        Self::SlowFirstEvent,
        Self::EmptyStream,
        Self::TruncatedStream,
        Self::HtmlBody,
        Self::CutJson,
        Self::EmptyAnswer,
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
            Self::EchoKey => "echo_key",
            Self::StreamErrorEchoKey => "stream_error_echo_key",
            Self::Error200 => "error_200",
            Self::RedirectKey => "redirect_key",
            Self::RetryAfter => "retry_after",
            Self::StallMidStream => "stall_mid_stream",
            Self::StallBeforeContent => "stall_before_content",
            Self::SlowFirstEvent => "slow_first_event",
            Self::EmptyStream => "empty_stream",
            Self::TruncatedStream => "truncated_stream",
            Self::HtmlBody => "html_body",
            Self::CutJson => "cut_json",
            Self::EmptyAnswer => "empty_answer",
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

    /// True for the kinds that shape the HTTP exchange itself (a status, a stream's events or
    /// timing, the body's bytes) rather than the model's answer: those served by the sim's
    /// `faulty` module.
    pub fn is_exchange(self) -> bool {
        matches!(
            self,
            Self::EchoKey
                | Self::StreamErrorEchoKey
                | Self::Error200
                | Self::RedirectKey
                | Self::RetryAfter
                | Self::StallMidStream
                | Self::StallBeforeContent
                | Self::SlowFirstEvent
                | Self::EmptyStream
                | Self::TruncatedStream
                | Self::HtmlBody
                | Self::CutJson
                | Self::EmptyAnswer
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

/// The settings of the kinds that take some; a kind ignores those it does not use, and an unset
/// one takes the kind's default.
///
/// In JSON and TOML they sit beside `kind` in a rule (`{"kind": "retry_after", "status": 503,
/// "retry_after_ms": 1500}`); in the header they follow the kind:
/// `x-sim-fault: retry_after; status=503; retry_after_ms=1500`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultParams {
    /// The HTTP status of `echo_key` and `retry_after`; the error type of
    /// `stream_error_echo_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// `retry_after`: the `retry-after` header, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
    /// `retry_after`: the `retry-after-ms` header, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// How long a silence lasts (`hang`, the stalls, `slow_first_event`), in milliseconds; the
    /// configuration's `hang_ms` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hang_ms: Option<u64>,
    /// How many content events come before a mid-stream fault (`stall_mid_stream`,
    /// `stream_error_echo_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<u32>,
}

/// The error returned when an `x-sim-fault` header does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultHeaderError {
    /// The kind is unknown.
    #[error(transparent)]
    Kind(#[from] UnknownFaultKind),
    /// A parameter is unknown or its value is not a number.
    #[error("bad fault parameter `{0}`")]
    Param(String),
}

/// Reads an `x-sim-fault` header: a kind, then `;`-separated `name=value` parameters.
pub fn parse_fault_header(value: &str) -> Result<(FaultKind, FaultParams), FaultHeaderError> {
    let mut parts = value.split(';');
    let kind: FaultKind = parts.next().unwrap_or_default().parse()?;
    let mut params = FaultParams::default();
    for part in parts.map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || FaultHeaderError::Param(part.to_owned());
        let (name, raw) = part.split_once('=').ok_or_else(bad)?;
        let number: u64 = raw.trim().parse().map_err(|_| bad())?;
        match name.trim() {
            "status" => params.status = Some(u16::try_from(number).map_err(|_| bad())?),
            "retry_after_s" | "retry_after" => params.retry_after_s = Some(number),
            "retry_after_ms" => params.retry_after_ms = Some(number),
            "hang_ms" => params.hang_ms = Some(number),
            "events" => params.events = Some(u32::try_from(number).map_err(|_| bad())?),
            _ => return Err(bad()),
        }
    }
    Ok((kind, params))
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
    /// The kind's settings.
    #[serde(flatten, default)]
    pub params: FaultParams,
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
            params: FaultParams::default(),
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

    /// Sets [`FaultParams::status`].
    #[must_use]
    pub fn status(mut self, status: u16) -> Self {
        self.params.status = Some(status);
        self
    }

    /// Sets [`FaultParams::retry_after_s`].
    #[must_use]
    pub fn retry_after_secs(mut self, seconds: u64) -> Self {
        self.params.retry_after_s = Some(seconds);
        self
    }

    /// Sets [`FaultParams::retry_after_ms`].
    #[must_use]
    pub fn retry_after_ms(mut self, ms: u64) -> Self {
        self.params.retry_after_ms = Some(ms);
        self
    }

    /// Sets [`FaultParams::hang_ms`].
    #[must_use]
    pub fn hang_ms(mut self, ms: u64) -> Self {
        self.params.hang_ms = Some(ms);
        self
    }

    /// Sets [`FaultParams::events`].
    #[must_use]
    pub fn events(mut self, events: u32) -> Self {
        self.params.events = Some(events);
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
    pub(crate) fn take(&mut self, model: &str) -> Option<(FaultKind, FaultParams)> {
        let pos = self
            .rules
            .iter()
            .position(|r| r.model.as_deref().is_none_or(|m| m == model))?;
        let rule = &mut self.rules[pos];
        let taken = (rule.kind, rule.params);
        rule.count -= 1;
        if rule.count == 0 {
            self.rules.remove(pos);
        }
        Some(taken)
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
        let kind = |t: Option<(FaultKind, FaultParams)>| t.map(|(k, _)| k);
        assert_eq!(kind(q.take("b")), Some(FaultKind::Hang));
        assert_eq!(q.take("b"), None);
        assert_eq!(kind(q.take("a")), Some(FaultKind::Http500));
        assert_eq!(kind(q.take("a")), Some(FaultKind::Http500));
        assert_eq!(q.take("a"), None);
    }

    #[test]
    fn header_parameters_parse_and_rules_carry_them() {
        let (kind, params) =
            parse_fault_header("retry_after; status=503; retry_after_ms=1500").unwrap();
        assert_eq!(kind, FaultKind::RetryAfter);
        assert_eq!(params.status, Some(503));
        assert_eq!(params.retry_after_ms, Some(1500));
        assert_eq!(params.retry_after_s, None);
        assert_eq!(
            parse_fault_header("hang").unwrap().1,
            FaultParams::default()
        );
        assert!(parse_fault_header("hang; wait=3").is_err());
        assert!(parse_fault_header("hang; hang_ms=soon").is_err());
        assert!(parse_fault_header("nope; status=1").is_err());
        let rule: FaultRule =
            serde_json::from_str(r#"{"kind":"stall_mid_stream","hang_ms":900,"events":3}"#)
                .unwrap();
        assert_eq!(
            rule,
            FaultRule::new(FaultKind::StallMidStream)
                .hang_ms(900)
                .events(3)
        );
        let json = serde_json::to_value(FaultRule::new(FaultKind::EchoKey).status(403)).unwrap();
        assert_eq!(json["status"], 403);
        assert!(json.get("hang_ms").is_none());
        let mut q = FaultQueue::default();
        q.push(FaultRule::new(FaultKind::RetryAfter).retry_after_secs(2));
        assert_eq!(q.take("m").unwrap().1.retry_after_s, Some(2));
    }
}
