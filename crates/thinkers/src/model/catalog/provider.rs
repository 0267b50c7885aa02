//! [`Provider`]: how to reach an API, and the [`Dialect`] it speaks.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::azure::{Auth, AzureApi};
use crate::Result;
use crate::error::Error;
use crate::model::ParseNameError;

/// The placeholder in a provider's base URL that [`super::Catalog::with_sim_url`] replaces with the
/// running simulated provider's base URL.
pub const SIM_PLACEHOLDER: &str = "{sim}";

/// The environment variable the bundled catalog's providers read their key from.
pub const SIM_KEY_ENV: &str = "THINKERS_SIM_KEY";

/// The key used for [`SIM_KEY_ENV`] when that variable is not set. The simulated provider
/// accepts any key, so the offline demo and the tests need no configuration; set the variable
/// to exercise a real key check.
pub const SIM_DEFAULT_KEY: &str = "thinkers-sim-key";

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// OpenAI chat completions (`openai` in catalogs).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic messages (`anthropic`).
    Anthropic,
    /// A server speaking the OpenAI chat format, typically local (`openai-compatible`); its API
    /// key is optional.
    #[serde(rename = "openai-compatible")]
    OpenAiCompatible,
    /// The OpenAI Responses API (`openai-responses`): input and output items, reasoning items
    /// carried across turns.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// The Google Gemini API, `generateContent` (`gemini`).
    Gemini,
    /// Amazon Bedrock Converse (`bedrock-converse`): requests signed with AWS Signature
    /// Version 4 (see [`super::AwsSettings`]), or a Bedrock API key as a bearer token.
    #[serde(rename = "bedrock-converse")]
    BedrockConverse,
}

const DIALECT_NAMES: &[&str] = &[
    "openai",
    "anthropic",
    "openai-compatible",
    "openai-responses",
    "gemini",
    "bedrock-converse",
];

impl Dialect {
    /// The name used in catalogs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
            Self::OpenAiCompatible => "openai-compatible",
            Self::OpenAiResponses => "openai-responses",
            Self::Gemini => "gemini",
            Self::BedrockConverse => "bedrock-converse",
        }
    }

    /// Whether a provider of this dialect must name an API-key environment variable.
    pub(crate) fn requires_key(self) -> bool {
        // Bedrock signs with AWS credentials; an API key is its alternative, not a requirement.
        !matches!(self, Self::OpenAiCompatible | Self::BedrockConverse)
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Dialect {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            Self::OpenAi,
            Self::Anthropic,
            Self::OpenAiCompatible,
            Self::OpenAiResponses,
            Self::Gemini,
            Self::BedrockConverse,
        ]
        .into_iter()
        .find(|d| d.as_str() == s)
        .ok_or_else(|| ParseNameError::new("dialect", s, DIALECT_NAMES))
    }
}

/// How a provider is asked for an answer of a given JSON Schema (`structured_output` in
/// catalogs). Only OpenAI-compatible servers read it: OpenAI always gets strict `json_schema`
/// answers and Anthropic its `output_config.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// `response_format: {type: json_schema, json_schema: {name, schema}}`, which vLLM, Ollama,
    /// LM Studio, SGLang and llama.cpp's server constrain decoding to (`json_schema`).
    #[default]
    JsonSchema,
    /// `response_format: {type: json_object, schema}`, the form llama-cpp-python's server
    /// constrains decoding to (`json_object`).
    JsonObject,
    /// The schema in the system prompt, for servers without constrained decoding (`prompt`).
    Prompt,
}

const STRUCTURED_OUTPUT_NAMES: &[&str] = &["json_schema", "json_object", "prompt"];

impl StructuredOutput {
    /// The name used in catalogs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::JsonSchema => "json_schema",
            Self::JsonObject => "json_object",
            Self::Prompt => "prompt",
        }
    }
}

impl fmt::Display for StructuredOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StructuredOutput {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::JsonSchema, Self::JsonObject, Self::Prompt]
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| ParseNameError::new("structured output", s, STRUCTURED_OUTPUT_NAMES))
    }
}

/// Where a provider's API key comes from when it is given in code rather than named by an
/// environment variable: the key itself, or a function asked for it when the provider is first
/// used (a secret manager, a file). Its `Debug` never shows the key.
#[derive(Clone)]
pub enum KeySource {
    /// The key.
    Key(crate::model::ApiKey),
    /// A function returning the key (`None` is an error naming the provider).
    Fn(std::sync::Arc<dyn Fn() -> Option<String> + Send + Sync>),
}

impl KeySource {
    fn read(&self) -> Option<String> {
        match self {
            Self::Key(key) => Some(key.expose_secret().to_owned()),
            Self::Fn(source) => source(),
        }
    }
}

impl fmt::Debug for KeySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Key(_) => f.write_str("KeySource::Key(<redacted>)"),
            Self::Fn(_) => f.write_str("KeySource::Fn(..)"),
        }
    }
}

impl PartialEq for KeySource {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Key(a), Self::Key(b)) => a == b,
            (Self::Fn(a), Self::Fn(b)) => std::sync::Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for KeySource {}

/// How to reach one provider's API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Provider {
    /// The provider's key in the catalog, for example `sim-openai`.
    pub name: String,
    /// The wire format it speaks.
    pub dialect: Dialect,
    /// The base URL, without a trailing slash. May still hold [`SIM_PLACEHOLDER`] until the
    /// catalog is bound to a running simulated provider.
    pub base_url: String,
    /// The environment variable holding the API key, if the provider needs one.
    pub api_key_env: Option<String>,
    /// A key given in code ([`super::CatalogBuilder::api_key`]); it wins over `api_key_env`.
    /// Never serialised, never shown by `Debug`.
    #[serde(skip)]
    pub key: Option<KeySource>,
    /// How structured answers are asked for (read only for `openai-compatible`).
    pub structured_output: StructuredOutput,
    /// Whether the catalog set `structured_output`. When it did not, the form is found at run
    /// time: a refusal of one form moves the provider to the next (`json_schema`, `json_object`,
    /// `prompt`) for the rest of the process (`llm::negotiate`). A form the catalog set is
    /// authoritative: its refusal is an error.
    pub structured_output_set: bool,
    /// Whether the server can stream an answer that may call a tool (`stream_tools`, default
    /// true; read only for `openai-compatible`). When false, such a call is asked for whole and
    /// handed to the stream's reader at once.
    pub stream_tools: bool,
    /// Whether the catalog set `stream_tools`. When it did not, a streamed answer that may call
    /// a tool and ends before any content makes the provider ask for such answers whole for the
    /// rest of the process (`llm::negotiate`).
    pub stream_tools_set: bool,
    /// How an Azure OpenAI resource is addressed (`azure` and `api_version`), if this provider
    /// is one (see `model::catalog::azure`).
    pub azure: Option<AzureApi>,
    /// The header the key travels in (`auth`; OpenAI-family dialects only).
    pub auth: Auth,
    /// Region and credential variables of a `bedrock-converse` provider (`None` for the other
    /// dialects).
    pub aws: Option<super::AwsSettings>,
    /// Whether its entries ask it to cache prompt prefixes by default (`prompt_cache`, default
    /// true; an entry's own `prompt_cache` wins).
    pub prompt_cache: bool,
}

impl Provider {
    /// Whether the base URL still waits for [`super::Catalog::with_sim_url`].
    pub fn needs_sim(&self) -> bool {
        self.base_url.contains(SIM_PLACEHOLDER)
    }

    /// The API key, read from the environment now.
    ///
    /// `Ok(None)` when the provider names no variable. [`SIM_KEY_ENV`] falls back to
    /// [`SIM_DEFAULT_KEY`] when unset; any other unset variable is an error naming it.
    pub fn api_key(&self) -> Result<Option<String>> {
        if let Some(source) = &self.key {
            return match source.read() {
                Some(key) if !key.trim().is_empty() => Ok(Some(key)),
                _ => Err(Error::external(
                    self.name.clone(),
                    "authentication",
                    format!(
                        "the key source given in code for provider `{}` returned no key \
                         (nothing was sent)",
                        self.name
                    ),
                )),
            };
        }
        let Some(var) = &self.api_key_env else {
            return Ok(None);
        };
        self.key_from(var, std::env::var(var))
    }

    /// The key `var` held, as [`Self::api_key`] reads it: an empty value is refused, naming the
    /// variable, so no request goes out with an empty credential.
    fn key_from(
        &self,
        var: &str,
        value: std::result::Result<String, std::env::VarError>,
    ) -> Result<Option<String>> {
        match value {
            Ok(key) if key.trim().is_empty() => Err(Error::external(
                self.name.clone(),
                "authentication",
                format!(
                    "the API key variable `{var}` of provider `{}` is empty; set it to the key \
                     (nothing was sent)",
                    self.name
                ),
            )),
            Ok(key) => Ok(Some(key)),
            Err(_) if var == SIM_KEY_ENV => Ok(Some(SIM_DEFAULT_KEY.to_owned())),
            Err(e) => Err(Error::external(
                self.name.clone(),
                "authentication",
                format!("the API key variable `{var}` is unusable: {e}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(env: Option<&str>) -> Provider {
        Provider {
            name: "p".into(),
            dialect: Dialect::OpenAi,
            base_url: "{sim}/v1".into(),
            api_key_env: env.map(str::to_owned),
            key: None,
            structured_output: StructuredOutput::default(),
            structured_output_set: false,
            stream_tools: true,
            stream_tools_set: false,
            azure: None,
            auth: Auth::Bearer,
            aws: None,
            prompt_cache: true,
        }
    }

    #[test]
    fn dialect_names() {
        for d in [
            Dialect::OpenAi,
            Dialect::Anthropic,
            Dialect::OpenAiCompatible,
            Dialect::OpenAiResponses,
            Dialect::Gemini,
            Dialect::BedrockConverse,
        ] {
            assert_eq!(d.as_str().parse::<Dialect>().unwrap(), d);
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(json, format!("\"{d}\""));
        }
        let err = "cohere".parse::<Dialect>().unwrap_err().to_string();
        assert!(
            err.contains("`cohere`") && err.contains("openai-compatible"),
            "{err}"
        );
        assert!(!Dialect::OpenAiCompatible.requires_key());
        assert!(Dialect::Anthropic.requires_key());
    }

    #[test]
    fn keys_come_from_the_environment_with_a_sim_default() {
        assert_eq!(provider(None).api_key().unwrap(), None);
        assert!(provider(None).needs_sim());
        // The sim variable falls back to the documented dummy key unless a test sets it.
        if std::env::var(SIM_KEY_ENV).is_err() {
            assert_eq!(
                provider(Some(SIM_KEY_ENV)).api_key().unwrap().as_deref(),
                Some(SIM_DEFAULT_KEY)
            );
        }
        let err = provider(Some("THINKERS_TEST_SURELY_UNSET_KEY"))
            .api_key()
            .unwrap_err();
        assert!(
            err.to_string().contains("THINKERS_TEST_SURELY_UNSET_KEY"),
            "{err}"
        );
        let path = provider(Some("PATH")).api_key().unwrap();
        assert_eq!(path, std::env::var("PATH").ok());
    }

    #[test]
    fn an_empty_key_is_refused_naming_its_variable() {
        for empty in ["", "  "] {
            let err = provider(Some("MY_KEY"))
                .key_from("MY_KEY", Ok(empty.to_owned()))
                .unwrap_err();
            assert!(err.to_string().contains("`MY_KEY`"), "{err}");
            assert!(err.to_string().contains("empty"), "{err}");
        }
    }
}
