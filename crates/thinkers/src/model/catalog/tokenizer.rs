//! How an entry's requests are counted before the provider reports its own count.

/// How an entry's requests are counted before calibration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tokenizer {
    /// `⌈bytes / 4⌉` of the body, calibrated against the provider's reports (the default).
    #[default]
    Estimate,
    /// tiktoken's `o200k_base`, exact for current OpenAI models' text.
    O200kBase,
}

impl Tokenizer {
    /// The catalog names: `estimate`, `o200k_base`.
    pub(crate) const NAMES: &[&str] = &["estimate", "o200k_base"];

    /// The tokenizer a catalog name stands for.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "estimate" => Some(Self::Estimate),
            "o200k_base" => Some(Self::O200kBase),
            _ => None,
        }
    }
}
