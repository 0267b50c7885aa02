//! The [`Blinder`]: takes every model's identity out of what the judge reads.

use regex::{Regex, RegexBuilder};

use crate::model::Catalog;

/// What a scrubbed model name is replaced with.
pub const HIDDEN: &str = "[hidden model]";

/// The names of model families, makers and assistants hidden by default. Words that are common
/// in ordinary text are left out (Meta, Cohere, Phi without a version, Falcon, Perplexity); add
/// what a deployment needs with [`Blinder::hide_self_name`].
pub const SELF_NAMES: &[&str] = &[
    // Anthropic
    "Claude",
    "Anthropic",
    // OpenAI
    "ChatGPT",
    "GPT",
    "OpenAI",
    "o1-preview",
    "o1-mini",
    "o1-pro",
    "o3-mini",
    "o3-pro",
    "o4-mini",
    "Codex",
    // Google
    "Gemini",
    "Gemma",
    "Bard",
    "PaLM",
    "Google",
    "DeepMind",
    // Meta
    "Llama",
    "Meta AI",
    // Mistral
    "Mistral",
    "Mixtral",
    "Codestral",
    "Ministral",
    "Pixtral",
    // Others
    "Qwen",
    "Tongyi",
    "DeepSeek",
    "Grok",
    "xAI",
    "Command R",
    "Phi-2",
    "Phi-3",
    "Phi-4",
    "Nemotron",
    "Kimi",
    "Moonshot AI",
    "ChatGLM",
    "Zhipu",
    "Ernie Bot",
    "Jamba",
    "AI21",
    "Copilot",
];

/// What may follow a self-name as its version: numbers with an optional letter before and after
/// ("4o", "3.5", "70b", "R1", "v2") and the usual size and variant words, each after an optional
/// separator.
const VERSION_TAIL: &str = concat!(
    r"(?:[-_ .]?(?:[a-z]?\d+(?:\.\d+)*[a-z]*",
    r"|mini|nano|micro|pro|flash|lite|turbo|sonnet|opus|haiku|instant|ultra|max|plus",
    r"|coder|chat|instruct|preview|vision|large|medium|small|latest|reasoner)\b)*",
);

/// Takes every model's identity out of text.
///
/// Two kinds of name are hidden:
///
/// * **catalog names** — every entry id, provider model name and provider key of the catalog,
///   matched anywhere in the text (they are identifiers such as `sim-small-a`);
/// * **self-names** — the names of model families, their makers and their assistants, which a
///   run may write itself ("As Claude, …", "I am GPT-4o", "trained by Google"): the built-in
///   [`SELF_NAMES`] plus any the user adds ([`Blinder::hide_self_name`],
///   [`super::Benchmark::hide_names`]). A self-name is matched as a whole word, without regard
///   to case, with the version that follows it ("GPT-4o-mini", "Claude 3.5 Sonnet",
///   "Llama-3.1-70B"); inside a name, a space, hyphen or underscore matches any of the three or
///   none ("Command R" also hides "command-r").
///
/// Both sides of the comparison and the task are scrubbed the same way, so a task that itself
/// names a model family reads `[hidden model]` on both sides too.
#[derive(Debug, Clone)]
pub struct Blinder {
    /// Catalog names, lower-cased, longest first; matched anywhere.
    names: Vec<String>,
    /// Self-names as given (built-in ones first), matched as words with their version.
    self_names: Vec<String>,
    /// The self-names as one pattern; `None` when there are none.
    pattern: Option<Regex>,
}

impl Default for Blinder {
    /// A blinder that hides the built-in [`SELF_NAMES`].
    fn default() -> Self {
        Self::new()
    }
}

impl Blinder {
    /// A blinder that hides the built-in [`SELF_NAMES`] and nothing else.
    pub fn new() -> Self {
        let mut blinder = Self {
            names: Vec::new(),
            self_names: SELF_NAMES.iter().map(|&n| n.to_owned()).collect(),
            pattern: None,
        };
        blinder.compile();
        blinder
    }

    /// Hide every name the catalog knows (entry ids, provider model names, provider keys), and
    /// the built-in [`SELF_NAMES`].
    pub(crate) fn for_catalog(catalog: &Catalog) -> Self {
        let mut names: Vec<String> = catalog
            .entries()
            .iter()
            .flat_map(|e| [e.id().to_owned(), e.model().to_owned()])
            .chain(catalog.providers().keys().cloned())
            .map(|n| n.trim().to_ascii_lowercase())
            // Very short names would erase ordinary words.
            .filter(|n| n.len() >= 3)
            .collect();
        names.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        names.dedup();
        Self {
            names,
            ..Self::new()
        }
    }

    /// Also hide `name` wherever it occurs, as catalog names are (for an identifier). Names
    /// shorter than three characters are ignored, since they would erase ordinary words.
    #[must_use]
    #[cfg(test)]
    pub(crate) fn hide(mut self, name: &str) -> Self {
        self.add_name(name);
        self
    }

    fn add_name(&mut self, name: &str) {
        let n = name.trim().to_ascii_lowercase();
        if n.len() >= 3 && !self.names.contains(&n) {
            self.names.push(n);
            self.names
                .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        }
    }

    /// Also hide `name` as a self-name: a whole word, any case, with the version that follows
    /// it (see [`Blinder`]). For a family, maker or assistant a model may call
    /// itself by that [`SELF_NAMES`] lacks. A blank name is ignored.
    #[must_use]
    pub fn hide_self_name(mut self, name: &str) -> Self {
        let n = name.trim();
        if !n.is_empty() && !self.self_names.iter().any(|s| s.eq_ignore_ascii_case(n)) {
            self.self_names.push(n.to_owned());
            self.compile();
        }
        self
    }

    /// The self-names hidden, built-in ones first.
    #[cfg(test)]
    pub(crate) fn self_names(&self) -> &[String] {
        &self.self_names
    }

    /// `text` with every hidden name replaced by [`HIDDEN`].
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for name in &self.names {
            out = replace_ascii_case_insensitive(&out, name, HIDDEN);
        }
        match &self.pattern {
            Some(pattern) => pattern.replace_all(&out, HIDDEN).into_owned(),
            None => out,
        }
    }

    /// Build the self-name pattern: the names, longest first so a longer name wins over its
    /// prefix, as whole words followed by their version.
    fn compile(&mut self) {
        let mut alternatives: Vec<String> = self.self_names.iter().map(|n| word(n)).collect();
        alternatives.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.pattern = if alternatives.is_empty() {
            None
        } else {
            let source = format!(r"\b(?:{}){VERSION_TAIL}\b", alternatives.join("|"));
            // Every name is escaped, so only the size limit can refuse the pattern; hiding
            // the names as plain text is then the safe way to stay blind.
            match RegexBuilder::new(&source).case_insensitive(true).build() {
                Ok(pattern) => Some(pattern),
                Err(e) => {
                    tracing::warn!(error = %e,
                        "the self-name pattern could not be built; self-names are hidden as \
                         plain text");
                    for name in self.self_names.clone() {
                        self.add_name(&name);
                    }
                    None
                }
            }
        };
    }
}

/// A self-name as a pattern: escaped, with every run of spaces, hyphens and underscores inside
/// it matching any one of them or none.
fn word(name: &str) -> String {
    let parts: Vec<String> = name
        .split([' ', '-', '_'])
        .filter(|p| !p.is_empty())
        .map(regex::escape)
        .collect();
    parts.join("[-_ ]?")
}

/// Replace every ASCII-case-insensitive occurrence of `needle` (lower case) in `text`.
/// ASCII lower-casing keeps byte offsets, so offsets found in the lowered copy are valid in
/// `text` and always fall on character boundaries of an ASCII needle's matches.
fn replace_ascii_case_insensitive(text: &str, needle: &str, with: &str) -> String {
    let lowered = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(pos) = lowered[from..].find(needle) {
        let at = from + pos;
        let end = at + needle.len();
        match (text.get(from..at), text.get(at..end)) {
            (Some(before), Some(_)) => {
                out.push_str(before);
                out.push_str(with);
            }
            // Not on a character boundary (a non-ASCII needle): keep the text as it is.
            _ => out.push_str(text.get(from..end).unwrap_or_default()),
        }
        from = end;
    }
    out.push_str(text.get(from..).unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_name_is_hidden_whatever_its_case() {
        let blinder = Blinder::for_catalog(&Catalog::bundled());
        let text = "Served by sim-small-a (SIM-SMALL-B) via sim-openai; sim-mega-b said: ok é";
        let out = blinder.scrub(text);
        for e in Catalog::bundled().entries() {
            assert!(!out.to_ascii_lowercase().contains(e.id()), "{out}");
            assert!(!out.to_ascii_lowercase().contains(e.model()), "{out}");
        }
        assert!(!out.contains("sim-openai"), "{out}");
        assert!(out.ends_with("said: ok é"), "{out}");
        assert_eq!(out.matches(HIDDEN).count(), 4, "{out}");
    }

    #[test]
    fn extra_names_can_be_hidden() {
        let blinder = Blinder::default().hide("sim-house-model");
        assert_eq!(
            blinder.scrub("sim-house-model and SIM-HOUSE-MODEL-2"),
            format!("{HIDDEN} and {HIDDEN}-2")
        );
        assert_eq!(Blinder::default().hide("ab").scrub("ab"), "ab");
    }

    #[test]
    fn names_a_run_calls_itself_by_are_hidden_with_their_versions() {
        let blinder = Blinder::for_catalog(&Catalog::bundled());
        let cases = [
            (
                "As Claude, I would say yes.",
                "As [hidden model], I would say yes.",
            ),
            ("I am GPT-4o.", "I am [hidden model]."),
            (
                "I'm ChatGPT, made by OpenAI.",
                "I'm [hidden model], made by [hidden model].",
            ),
            ("Gemini 1.5 Pro here", "[hidden model] here"),
            (
                "a large language model, trained by Google.",
                "a large language model, trained by [hidden model].",
            ),
            (
                "served by claude-3-5-sonnet-20241022 today",
                "served by [hidden model] today",
            ),
            ("Llama-3.1-70B-Instruct answers", "[hidden model] answers"),
            (
                "gpt-4.1-mini and o3-mini agree",
                "[hidden model] and [hidden model] agree",
            ),
            (
                "I am Command R+ by COHERE",
                "I am [hidden model]+ by COHERE",
            ),
            (
                "Anthropic's model DeepSeek-R1",
                "[hidden model]'s model [hidden model]",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(blinder.scrub(text), want, "{text}");
        }
    }

    #[test]
    fn ordinary_words_that_contain_a_name_survive() {
        let blinder = Blinder::new();
        let text = "Claudette googled the metadata of a meta-analysis; GPTQ weights, a Grokking \
                    paper and Gemstones.";
        assert_eq!(blinder.scrub(text), text);
    }

    #[test]
    fn the_user_extends_the_self_names() {
        let text = "I am Nova 2 Pro, not a supernova.";
        assert_eq!(Blinder::new().scrub(text), text, "not built in");
        let blinder = Blinder::new()
            .hide_self_name(" Nova ")
            .hide_self_name("nova");
        assert_eq!(
            blinder.scrub(text),
            format!("I am {HIDDEN}, not a supernova.")
        );
        assert_eq!(
            blinder.self_names().iter().filter(|n| *n == "Nova").count(),
            1
        );
        assert_eq!(blinder.self_names().len(), SELF_NAMES.len() + 1);
        // A name of several words matches with any separator.
        let blinder = Blinder::new().hide_self_name("House Mind");
        assert_eq!(
            blinder.scrub("house-mind v2, HouseMind and house_mind"),
            format!("{HIDDEN}, {HIDDEN} and {HIDDEN}")
        );
    }
}
