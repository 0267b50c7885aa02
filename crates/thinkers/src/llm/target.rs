//! Where a call goes: the dialect, the endpoint, the model and the key.
//!
//! [`WireTarget`] is deliberately small and independent of the catalog: whoever picks a catalog
//! entry builds one from it.

use std::sync::Arc;

pub use crate::model::Auth;
pub use crate::model::AzureApi;
pub use crate::model::{ApiKey, CacheTtl, Dialect, PromptCache, StructuredOutput};

use crate::llm::encoded::Header;

/// Everything the client needs to reach one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireTarget {
    /// The wire format.
    pub dialect: Dialect,
    /// The base URL: for the OpenAI family it includes the version (`…/v1`); for Anthropic it is
    /// the host root (the dialect appends `/v1/messages`); for Gemini it includes the version
    /// (`…/v1beta`; the dialect appends `/models/{model}:generateContent`).
    pub base_url: String,
    /// The model name sent on the wire.
    pub model: String,
    /// The key, if the provider needs one (optional for local servers).
    pub api_key: Option<ApiKey>,
    /// Whether the model calls tools natively; `false` selects the text-based tool protocol.
    pub native_tools: bool,
    /// Whether the model supports native thinking (Anthropic thinking blocks, OpenAI reasoning).
    pub thinking: bool,
    /// How an OpenAI-compatible server is asked for a structured answer (other dialects ignore
    /// it).
    pub structured_output: StructuredOutput,
    /// Whether an OpenAI-compatible server can stream an answer that may call a tool; when
    /// false such a call is asked for whole (other dialects ignore it).
    pub stream_tools: bool,
    /// How an Azure OpenAI resource is addressed, when the target is one (OpenAI-family
    /// dialects; others ignore it).
    pub azure: Option<AzureApi>,
    /// The header an OpenAI-family key travels in (others ignore it).
    pub auth: Auth,
    /// AWS credentials and region to sign requests with (`bedrock-converse` without an API
    /// key); other dialects ignore it.
    pub aws: Option<Arc<super::AwsSigning>>,
    /// Whether requests ask the provider to cache their prefix (on by default; see
    /// [`PromptCache`] for what each dialect sends).
    pub prompt_cache: PromptCache,
}

impl WireTarget {
    /// A target with native tools, no thinking, no key and prompt caching on.
    pub fn new(dialect: Dialect, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            dialect,
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            native_tools: true,
            thinking: false,
            structured_output: StructuredOutput::JsonSchema,
            stream_tools: true,
            azure: None,
            auth: Auth::Bearer,
            aws: None,
            prompt_cache: PromptCache::default(),
        }
    }

    /// The same target asking (or not) for prompt caching.
    #[must_use]
    pub(crate) fn with_prompt_cache(mut self, cache: PromptCache) -> Self {
        self.prompt_cache = cache;
        self
    }

    /// The same target with a key.
    #[must_use]
    pub(crate) fn with_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    /// The same target with native tools on or off.
    #[must_use]
    pub(crate) fn with_native_tools(mut self, native: bool) -> Self {
        self.native_tools = native;
        self
    }

    /// The same target with thinking on or off.
    #[must_use]
    pub(crate) fn with_thinking(mut self, thinking: bool) -> Self {
        self.thinking = thinking;
        self
    }

    /// The same target asking for structured answers this way.
    #[must_use]
    pub(crate) fn with_structured_output(mut self, mode: StructuredOutput) -> Self {
        self.structured_output = mode;
        self
    }

    /// The same target, able (or not) to stream answers that may call a tool.
    #[must_use]
    pub(crate) fn with_stream_tools(mut self, stream_tools: bool) -> Self {
        self.stream_tools = stream_tools;
        self
    }

    /// The same target on an Azure OpenAI resource, its key in `auth`.
    #[must_use]
    pub(crate) fn with_azure(mut self, azure: Option<AzureApi>, auth: Auth) -> Self {
        self.azure = azure;
        self.auth = auth;
        self
    }

    /// The same target, signing its requests with these AWS credentials.
    #[must_use]
    pub(crate) fn with_aws_signing(mut self, signing: super::AwsSigning) -> Self {
        self.aws = Some(Arc::new(signing));
        self
    }

    /// The base URL without a trailing slash.
    pub(crate) fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }

    /// The URL of an OpenAI-family endpoint (`chat/completions`, `responses`): under the base
    /// URL, or at the Azure resource's path for it.
    pub(crate) fn openai_url(&self, path: &str) -> String {
        match &self.azure {
            Some(azure) => azure.url(self.base(), path, &self.model),
            None => format!("{}/{path}", self.base()),
        }
    }

    /// The header an OpenAI-family key travels in, if there is a key.
    pub(crate) fn openai_auth(&self) -> Option<Header> {
        let key = self.api_key.as_ref()?;
        Some(match self.auth {
            Auth::Bearer => {
                Header::secret("authorization", format!("Bearer {}", key.expose_secret()))
            }
            Auth::ApiKey => Header::secret("api-key", key.expose_secret().to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_never_shows_in_debug_or_display() {
        let key = ApiKey::new("sk-CANARY-123456");
        let t = WireTarget::new(Dialect::OpenAi, "http://x/v1", "m").with_key(key.clone());
        for s in [
            format!("{key:?}"),
            format!("{key}"),
            format!("{t:?}"),
            format!("{t:#?}"),
        ] {
            assert!(!s.contains("CANARY"), "{s}");
        }
        assert_eq!(key.expose_secret(), "sk-CANARY-123456");
    }

    #[test]
    fn dialect_names_match_the_catalog() -> anyhow::Result<()> {
        let d: Dialect = serde_json::from_str("\"openai-compatible\"")?;
        assert_eq!(d, Dialect::OpenAiCompatible);
        assert_eq!(Dialect::Anthropic.to_string(), "anthropic");
        Ok(())
    }
}
