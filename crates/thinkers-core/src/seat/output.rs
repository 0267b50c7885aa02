//! [`OutputSize`]: how much answer a seat books, in words rather than token counts.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ParseNameError;

/// How much answer a seat books per turn: the call's maximum output tokens and the output part
/// of its admission reservation.
///
/// A seat names a rung sized to its largest turn; the catalog entry serving the call turns the
/// rung into tokens (see `thinkers::model::Entry::output_tokens`). The framework table is
/// Verdict 1,024 / Compact 4,096 / Standard 16,384 / Extended 32,768 tokens, each capped at the
/// entry's output ceiling, and an entry may override any rung. [`OutputSize::Max`] is the
/// entry's ceiling itself. [`OutputSize::Tokens`] is the documented exception for a seat whose
/// answer fits no rung: a raw count, still capped at the ceiling.
///
/// In catalogs and on the wire a rung is its lower-case name (`"compact"`, `"max"`) and a raw
/// count is a bare integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputSize {
    /// A label, a boolean, a classification, a one-field answer (1,024 tokens).
    Verdict,
    /// A handful of fields, a short list, a tool call with its arguments (4,096 tokens).
    Compact,
    /// A rich answer, a list of records, a table (16,384 tokens).
    Standard,
    /// A written section, a report, a long extraction (32,768 tokens).
    Extended,
    /// As much as the entry can emit: its output ceiling.
    Max,
    /// A raw token count, for a seat whose answer fits no rung.
    Tokens(u32),
}

const OUTPUT_NAMES: &[&str] = &[
    "verdict",
    "compact",
    "standard",
    "extended",
    "max",
    "<a token count>",
];

impl OutputSize {
    /// The named rungs with a framework token value, smallest first (`Max` has none: it is the
    /// entry's ceiling).
    pub const RUNGS: [Self; 4] = [Self::Verdict, Self::Compact, Self::Standard, Self::Extended];

    /// The framework's token value for a named rung; `None` for `Max` and `Tokens`.
    pub fn rung_tokens(self) -> Option<u32> {
        match self {
            Self::Verdict => Some(1_024),
            Self::Compact => Some(4_096),
            Self::Standard => Some(16_384),
            Self::Extended => Some(32_768),
            Self::Max | Self::Tokens(_) => None,
        }
    }

    /// The name of a named size (`"max"` included); `None` for a raw count.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Self::Verdict => Some("verdict"),
            Self::Compact => Some("compact"),
            Self::Standard => Some("standard"),
            Self::Extended => Some("extended"),
            Self::Max => Some("max"),
            Self::Tokens(_) => None,
        }
    }
}

impl OutputSize {
    /// The raw count of a `Tokens` size; 0 for a named one (only called where `name()` is None).
    fn raw_count(self) -> u32 {
        match self {
            Self::Tokens(n) => n,
            _ => 0,
        }
    }
}

impl fmt::Display for OutputSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{} tokens", self.raw_count()),
        }
    }
}

impl FromStr for OutputSize {
    type Err = ParseNameError;

    /// Parses a rung name (ignoring ASCII case), `max`, or a bare token count.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if let Ok(n) = t.parse::<u32>() {
            return Ok(Self::Tokens(n));
        }
        Self::RUNGS
            .into_iter()
            .chain([Self::Max])
            .find(|o| o.name().is_some_and(|n| n.eq_ignore_ascii_case(t)))
            .ok_or_else(|| ParseNameError::new("output size", s, OUTPUT_NAMES))
    }
}

impl Serialize for OutputSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.name() {
            Some(name) => serializer.serialize_str(name),
            None => serializer.serialize_u32(self.raw_count()),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OutputRepr {
    Tokens(u32),
    Name(String),
}

impl<'de> Deserialize<'de> for OutputSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match OutputRepr::deserialize(deserializer)? {
            OutputRepr::Tokens(n) => Ok(Self::Tokens(n)),
            OutputRepr::Name(name) => name.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framework_table() {
        assert_eq!(OutputSize::Verdict.rung_tokens(), Some(1_024));
        assert_eq!(OutputSize::Compact.rung_tokens(), Some(4_096));
        assert_eq!(OutputSize::Standard.rung_tokens(), Some(16_384));
        assert_eq!(OutputSize::Extended.rung_tokens(), Some(32_768));
        assert_eq!(OutputSize::Max.rung_tokens(), None);
        assert_eq!(OutputSize::Tokens(7).rung_tokens(), None);
    }

    #[test]
    fn parses_names_and_counts() {
        assert_eq!(
            "compact".parse::<OutputSize>().unwrap(),
            OutputSize::Compact
        );
        assert_eq!("MAX".parse::<OutputSize>().unwrap(), OutputSize::Max);
        assert_eq!(
            "2500".parse::<OutputSize>().unwrap(),
            OutputSize::Tokens(2500)
        );
        let err = "huge".parse::<OutputSize>().unwrap_err();
        assert!(err.to_string().contains("`huge`") && err.to_string().contains("extended"));
    }

    #[test]
    fn serde_uses_names_and_bare_counts() {
        let sizes = [
            OutputSize::Verdict,
            OutputSize::Compact,
            OutputSize::Standard,
            OutputSize::Extended,
            OutputSize::Max,
            OutputSize::Tokens(3000),
        ];
        let json = serde_json::to_string(&sizes).unwrap();
        assert_eq!(
            json,
            r#"["verdict","compact","standard","extended","max",3000]"#
        );
        let back: Vec<OutputSize> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, sizes);
        assert!(serde_json::from_str::<OutputSize>("\"large\"").is_err());
    }
}
