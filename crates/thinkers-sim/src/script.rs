//! Scripted answers: "when the conversation looks like X, answer Y".
//!
//! A [`Script`] is an ordered list of [`ScriptRule`]s. For each request the sim takes the first
//! rule whose model matches (when the rule names one), whose `contains` text occurs in the message
//! the rule looks at, and whose `times` budget is not spent. Its [`ScriptAnswer`] is served; when
//! no rule matches, the schema-driven mode answers.
//!
//! In TOML:
//!
//! ```toml
//! [[rules]]
//! contains = "weather"          # substring of the message looked at ("" matches anything)
//! on = "last"                    # "last" (default): the last user or tool-result message;
//!                                # "user": the last user text; "tool_result": the last tool result
//! model = "sim-small-a"          # optional
//! times = 1                      # optional: how many requests the rule may answer
//! answer = { tool_calls = [{ name = "get_weather", arguments = { city = "Paris" } }] }
//!
//! [[rules]]
//! contains = "sunny"
//! answer = { text = "It is sunny in Paris." }
//!
//! [[rules]]
//! contains = "report"
//! answer = { json = { summary = "done", score = 3 } }
//! ```
//!
//! The same structure is accepted as JSON (`{"rules": [...]}`).

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Result, SimError};

/// An ordered list of rules; the first matching one answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Script {
    /// The rules, tried in order.
    #[serde(default)]
    pub rules: Vec<ScriptRule>,
}

/// Which message of the conversation a rule looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchOn {
    /// The last message that is either a user text or a tool result.
    #[default]
    Last,
    /// The last user text (tool results excluded).
    User,
    /// The last tool result.
    ToolResult,
}

/// One rule of a script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptRule {
    /// Text that must occur (case-sensitive substring) in the message looked at; empty matches
    /// any conversation.
    #[serde(default)]
    pub contains: String,
    /// Which message is looked at.
    #[serde(default)]
    pub on: MatchOn,
    /// Restricts the rule to one model.
    #[serde(default)]
    pub model: Option<String>,
    /// How many requests the rule may answer; `None` is unlimited.
    #[serde(default)]
    pub times: Option<u32>,
    /// What to answer.
    pub answer: ScriptAnswer,
}

/// A tool call a script makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptToolCall {
    /// The tool's name.
    pub name: String,
    /// The arguments (a JSON object, given as is).
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// What a rule answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptAnswer {
    /// A plain text answer.
    Text(String),
    /// A JSON answer, serialized into the answer text.
    Json(Value),
    /// One tool round with these calls.
    ToolCalls(Vec<ScriptToolCall>),
}

impl ScriptRule {
    /// A rule that matches when `needle` occurs in the last user or tool-result message.
    pub fn when_contains(needle: impl Into<String>, answer: ScriptAnswer) -> Self {
        Self {
            contains: needle.into(),
            on: MatchOn::Last,
            model: None,
            times: None,
            answer,
        }
    }

    /// Looks at another message.
    #[must_use]
    pub fn on(mut self, on: MatchOn) -> Self {
        self.on = on;
        self
    }

    /// Restricts the rule to one model.
    #[must_use]
    pub fn for_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Limits how many requests the rule answers.
    #[must_use]
    pub fn times(mut self, times: u32) -> Self {
        self.times = Some(times);
        self
    }

    fn matches(&self, probe: &Probe<'_>) -> bool {
        if self.model.as_deref().is_some_and(|m| m != probe.model) {
            return false;
        }
        let text = match self.on {
            MatchOn::Last => probe.last,
            MatchOn::User => probe.last_user,
            MatchOn::ToolResult => probe.last_tool_result,
        };
        match text {
            Some(text) => text.contains(&self.contains),
            None => self.contains.is_empty() && self.on == MatchOn::Last,
        }
    }
}

impl Script {
    /// A script from a list of rules.
    pub fn new(rules: Vec<ScriptRule>) -> Self {
        Self { rules }
    }

    /// Parses a script written in TOML.
    pub fn from_toml_str(text: &str) -> Result<Self> {
        toml::from_str(text).map_err(|source| SimError::Toml {
            what: "script",
            source,
        })
    }

    /// Parses a script written in JSON.
    pub fn from_json_str(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|source| SimError::Json {
            what: "script",
            source,
        })
    }

    /// Reads a script file: JSON when the name ends in `.json`, TOML otherwise.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| SimError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
        {
            Self::from_json_str(&text)
        } else {
            Self::from_toml_str(&text)
        }
    }
}

/// What a rule is matched against, taken from the request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe<'a> {
    pub(crate) model: &'a str,
    pub(crate) last: Option<&'a str>,
    pub(crate) last_user: Option<&'a str>,
    pub(crate) last_tool_result: Option<&'a str>,
}

/// A script plus the use counts of its rules.
#[derive(Debug)]
pub(crate) struct ScriptRunner {
    script: Script,
    used: Vec<AtomicU32>,
}

impl ScriptRunner {
    pub(crate) fn new(script: Script) -> Self {
        let used = script.rules.iter().map(|_| AtomicU32::new(0)).collect();
        Self { script, used }
    }

    /// The answer of the first matching rule with budget left, spending one use of it.
    pub(crate) fn pick(&self, probe: &Probe<'_>) -> Option<&ScriptAnswer> {
        for (rule, used) in self.script.rules.iter().zip(&self.used) {
            if !rule.matches(probe) {
                continue;
            }
            let spent = match rule.times {
                None => true,
                Some(limit) => used
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                        (n < limit).then_some(n + 1)
                    })
                    .is_ok(),
            };
            if spent {
                return Some(&rule.answer);
            }
        }
        None
    }

    pub(crate) fn reset(&self) {
        for used in &self.used {
            used.store(0, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe<'a>(last: &'a str, tool: Option<&'a str>) -> Probe<'a> {
        Probe {
            model: "m",
            last: Some(last),
            last_user: Some("question"),
            last_tool_result: tool,
        }
    }

    #[test]
    fn parses_toml_with_every_answer_kind() {
        let script = Script::from_toml_str(
            r#"
[[rules]]
contains = "weather"
times = 1
answer = { tool_calls = [{ name = "get_weather", arguments = { city = "Paris" } }] }

[[rules]]
contains = "sunny"
on = "tool_result"
answer = { text = "It is sunny." }

[[rules]]
model = "other"
answer = { json = { a = 1 } }
"#,
        )
        .unwrap();
        assert_eq!(script.rules.len(), 3);
        assert_eq!(script.rules[1].on, MatchOn::ToolResult);
        assert_eq!(
            script.rules[2].answer,
            ScriptAnswer::Json(serde_json::json!({"a": 1}))
        );
        let json = serde_json::to_string(&script).unwrap();
        assert_eq!(Script::from_json_str(&json).unwrap(), script);
    }

    #[test]
    fn first_match_wins_and_times_are_spent() {
        let runner = ScriptRunner::new(Script::new(vec![
            ScriptRule::when_contains("weather", ScriptAnswer::Text("one".into())).times(1),
            ScriptRule::when_contains("weather", ScriptAnswer::Text("two".into())),
            ScriptRule::when_contains("rain", ScriptAnswer::Text("tool".into()))
                .on(MatchOn::ToolResult),
        ]));
        let p = probe("the weather?", None);
        assert_eq!(runner.pick(&p), Some(&ScriptAnswer::Text("one".into())));
        assert_eq!(runner.pick(&p), Some(&ScriptAnswer::Text("two".into())));
        assert_eq!(runner.pick(&probe("rain", None)), None);
        assert_eq!(
            runner.pick(&probe("x", Some("rain today"))),
            Some(&ScriptAnswer::Text("tool".into()))
        );
        runner.reset();
        assert_eq!(runner.pick(&p), Some(&ScriptAnswer::Text("one".into())));
    }

    #[test]
    fn model_restriction_is_honoured() {
        let runner = ScriptRunner::new(Script::new(vec![
            ScriptRule::when_contains("", ScriptAnswer::Text("x".into())).for_model("other"),
        ]));
        assert_eq!(runner.pick(&probe("anything", None)), None);
    }
}
