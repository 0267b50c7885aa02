//! [`ModelServices`]: what a model call needs from the deployment, registered on the dispatcher.

use std::sync::{Arc, Mutex, PoisonError};

use super::{ApiKey, ModelClient, TokenCounter, WireTarget};
use crate::Result;
use crate::model::{Entry, ModelRouter};

/// The router (catalog, envelope, picker), the HTTP client and the token counter, shared by every
/// model call of a dispatcher. Register it with
/// [`crate::dispatch::DispatcherBuilder::service`]; [`crate::Runtime`] does.
pub struct ModelServices {
    router: ModelRouter,
    client: ModelClient,
    counter: Arc<TokenCounter>,
    targets: Mutex<foldhash::HashMap<String, Arc<WireTarget>>>,
    prefixes: super::cached_prefix::PrefixMemo,
    /// The request forms each provider was found to accept (`super::negotiate`).
    forms: super::negotiate::Forms,
}

impl std::fmt::Debug for ModelServices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelServices")
            .field("catalog", &self.router.catalog().source_name())
            .finish_non_exhaustive()
    }
}

impl ModelServices {
    /// Services over a router, with a default HTTP client.
    pub fn new(router: ModelRouter) -> Result<Self> {
        Ok(Self::with_client(router, ModelClient::new()?))
    }

    /// Services over a router and a given client.
    pub(crate) fn with_client(router: ModelRouter, client: ModelClient) -> Self {
        let counter = TokenCounter::new();
        for entry in router.catalog().entries() {
            if let Ok(p) = router.catalog().provider(entry.provider()) {
                counter.register(entry.id(), p.dialect, entry.tokenizer());
            }
        }
        Self {
            router,
            client,
            counter: Arc::new(counter),
            targets: Mutex::new(foldhash::HashMap::default()),
            prefixes: super::cached_prefix::PrefixMemo::default(),
            forms: super::negotiate::Forms::default(),
        }
    }

    /// The router.
    pub fn router(&self) -> &ModelRouter {
        &self.router
    }

    /// The HTTP client.
    pub fn client(&self) -> &ModelClient {
        &self.client
    }

    /// The token counter (with per-entry calibration).
    pub(crate) fn counter(&self) -> &TokenCounter {
        &self.counter
    }

    /// The prompt-cache prefixes the providers hold, as the calls' usage told.
    pub(crate) fn prefixes(&self) -> &super::cached_prefix::PrefixMemo {
        &self.prefixes
    }

    /// The request forms learned per provider.
    pub(crate) fn forms(&self) -> &super::negotiate::Forms {
        &self.forms
    }

    /// The same counter, shared (for a [`crate::conversation::WireSizer`]).
    pub(crate) fn shared_counter(&self) -> Arc<TokenCounter> {
        Arc::clone(&self.counter)
    }

    /// Where calls to `entry` go. The API key is read from the variable the catalog names the
    /// first time; a missing key is an error naming the variable (and is not cached, so setting
    /// it later works). An OpenAI-compatible provider's target carries the forms found to work
    /// for it where the catalog left them unset (`super::negotiate`).
    pub fn target(&self, entry: &Entry) -> Result<Arc<WireTarget>> {
        let mut cache = self.targets.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(t) = cache.get(entry.id()) {
            if t.dialect != crate::llm::Dialect::OpenAiCompatible {
                return Ok(Arc::clone(t));
            }
            let provider = self.router.catalog().provider(entry.provider())?;
            let Some(learned) = self.forms.apply(provider, t) else {
                return Ok(Arc::clone(t));
            };
            let learned = Arc::new(learned);
            cache.insert(entry.id().to_owned(), Arc::clone(&learned));
            return Ok(learned);
        }
        let provider = self.router.catalog().provider(entry.provider())?;
        let mut target =
            WireTarget::new(provider.dialect, provider.base_url.clone(), entry.model())
                .with_native_tools(entry.native_tools())
                .with_thinking(entry.thinking())
                .with_structured_output(provider.structured_output)
                .with_stream_tools(provider.stream_tools)
                .with_azure(provider.azure.clone(), provider.auth)
                .with_prompt_cache(entry.prompt_cache());
        if let Some(key) = provider.api_key()? {
            target = target.with_key(ApiKey::new(key));
        } else if provider.dialect == crate::llm::Dialect::BedrockConverse {
            // No Bedrock API key: requests are signed with the AWS credentials.
            target = target.with_aws_signing(super::AwsSigning::from_provider(provider)?);
        }
        let target = Arc::new(self.forms.apply(provider, &target).unwrap_or(target));
        cache.insert(entry.id().to_owned(), Arc::clone(&target));
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::StructuredOutput;
    use crate::model::{Catalog, Envelope};

    #[test]
    fn the_target_carries_the_providers_structured_output() -> anyhow::Result<()> {
        let catalog = Catalog::from_toml_str(
            "[providers.p]\ndialect = \"openai-compatible\"\nbase_url = \"http://localhost:1/v1\"\n\
             structured_output = \"json_object\"\n\
             [[entries]]\nid = \"x\"\nprovider = \"p\"\nmodel = \"x\"\ngrade = \"small\"\n\
             context_window = 1000\noutput_ceiling = 100\nprice_in = 0\nprice_out = 0\n\
             currency = \"USD\"\n",
            "modes.toml",
        )?;
        let router = ModelRouter::with_headroom_picker(catalog, Envelope::unrestricted());
        let services = ModelServices::with_client(router, ModelClient::new()?);
        let entry = services.router().catalog().entry("x")?;
        assert_eq!(
            services.target(entry)?.structured_output,
            StructuredOutput::JsonObject
        );
        Ok(())
    }
}
