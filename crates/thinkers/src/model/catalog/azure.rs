//! Azure OpenAI addressing: the `azure`, `api_version` and `auth` fields of a provider.
//!
//! An Azure OpenAI resource serves the OpenAI wire formats (Chat Completions and Responses)
//! under its own paths and with its own key header:
//!
//! * `azure = "deployment"`: `{base_url}/openai/deployments/{model}/chat/completions?api-version=…`
//!   for Chat Completions and `{base_url}/openai/responses?api-version=…` for Responses; the
//!   entry's `model` is the deployment name. `api_version` is required.
//! * `azure = "v1"`: the v1 surface, `{base_url}/openai/v1/chat/completions` and
//!   `{base_url}/openai/v1/responses`, the deployment name in the body's `model`; `api_version`
//!   is optional (appended as `?api-version=…` when given, for example `preview`).
//!
//! `base_url` is the resource endpoint (`https://NAME.openai.azure.com`); the paths above are
//! added by the dialect. `auth` chooses the credential header: `api-key` (the default with
//! `azure`) sends the key in `api-key`, `bearer` sends it as `Authorization: Bearer …` (an
//! Entra ID token, or a key on the v1 surface).

use std::fmt;

use serde::Serialize;
use toml::Spanned;

use super::error::{CatalogError, Problem};
use super::fields::Place;
use super::file::{ProviderTable, Text};
use super::provider::Dialect;

/// How an Azure OpenAI resource is addressed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "style", rename_all = "snake_case")]
pub enum AzureApi {
    /// Deployment URLs with a required `api-version` query.
    Deployment {
        /// The `api-version` query value, for example `2024-10-21`.
        api_version: String,
    },
    /// The v1 surface (`/openai/v1/…`), with an optional `api-version` query.
    V1 {
        /// The `api-version` query value, when one is sent.
        api_version: Option<String>,
    },
}

impl AzureApi {
    /// The names `azure` takes in catalogs.
    pub(crate) const NAMES: &'static [&'static str] = &["deployment", "v1"];

    /// The `api-version` query value, if any.
    pub(crate) fn api_version(&self) -> Option<&str> {
        match self {
            Self::Deployment { api_version } => Some(api_version),
            Self::V1 { api_version } => api_version.as_deref(),
        }
    }

    /// The URL of an OpenAI endpoint (`chat/completions`, `responses`) for model (deployment)
    /// `deployment` on the resource at `endpoint` (no trailing slash).
    pub(crate) fn url(&self, endpoint: &str, path: &str, deployment: &str) -> String {
        let mut url = match self {
            Self::Deployment { .. } if path == "responses" => {
                format!("{endpoint}/openai/responses")
            }
            Self::Deployment { .. } => {
                format!("{endpoint}/openai/deployments/{deployment}/{path}")
            }
            Self::V1 { .. } => format!("{endpoint}/openai/v1/{path}"),
        };
        if let Some(v) = self.api_version() {
            url.push_str("?api-version=");
            url.push_str(v);
        }
        url
    }
}

/// The header an OpenAI-family provider's key travels in (`auth` in catalogs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Auth {
    /// `Authorization: Bearer <key>` (`bearer`): OpenAI, and Azure with an Entra ID token.
    #[default]
    Bearer,
    /// `api-key: <key>` (`api-key`): Azure OpenAI's key header.
    ApiKey,
}

impl Auth {
    /// The names `auth` takes in catalogs.
    pub(crate) const NAMES: &'static [&'static str] = &["bearer", "api-key"];

    /// The name used in catalogs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bearer => "bearer",
            Self::ApiKey => "api-key",
        }
    }

    /// The value `auth` names, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Bearer, Self::ApiKey]
            .into_iter()
            .find(|a| a.as_str() == name)
    }
}

impl fmt::Display for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `v` can be an `api-version` query value without escaping (`2024-10-21`,
/// `2025-04-01-preview`, `preview`).
pub(super) fn valid_api_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 64
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
}

/// `azure` and `api_version`: how an Azure OpenAI resource is addressed.
pub(super) fn read_azure(
    f: &Place<'_>,
    table: &ProviderTable,
    dialect: Dialect,
    base_url: &str,
) -> Result<Option<AzureApi>, CatalogError> {
    let version = table.api_version.as_ref();
    let Some(style) = &table.azure else {
        if let Some(version) = version {
            return Err(f.bad(
                "api_version",
                version,
                Problem::Conflict,
                "api_version is read only for Azure OpenAI providers; add azure = \"deployment\" \
                 or azure = \"v1\"",
            ));
        }
        return Ok(None);
    };
    if !matches!(dialect, Dialect::OpenAi | Dialect::OpenAiResponses) {
        return Err(f.bad(
            "azure",
            style,
            Problem::Conflict,
            format!(
                "Azure OpenAI serves the `openai` and `openai-responses` dialects, not `{dialect}`"
            ),
        ));
    }
    if base_url.contains("/openai") {
        return Err(f.bad(
            "base_url",
            &table.base_url,
            Problem::BadValue,
            "with azure, base_url is the resource endpoint (https://NAME.openai.azure.com); the \
             dialect adds /openai/… itself",
        ));
    }
    if let Some(v) = version
        && !valid_api_version(v.get_ref().as_str())
    {
        return Err(f.bad(
            "api_version",
            v,
            Problem::BadValue,
            "an api-version is letters, digits, `-` and `.`, for example 2024-10-21",
        ));
    }
    let version = Text::of(version);
    match style.get_ref().as_str() {
        "deployment" => match version {
            Some(v) => Ok(Some(AzureApi::Deployment {
                api_version: v.to_owned(),
            })),
            None => Err(f.absent(
                "api_version",
                Problem::Missing,
                "azure = \"deployment\" needs the api-version its URLs carry, for example \
                 api_version = \"2024-10-21\"",
            )),
        },
        "v1" => Ok(Some(AzureApi::V1 {
            api_version: version.map(str::to_owned),
        })),
        _ => Err(f.bad(
            "azure",
            style,
            Problem::BadValue,
            format!(
                "unknown Azure addressing; use one of: {}",
                AzureApi::NAMES.join(", ")
            ),
        )),
    }
}

/// `auth`: the key's header (`api-key` by default on Azure, `bearer` elsewhere).
pub(super) fn read_auth(
    f: &Place<'_>,
    auth: Option<&Spanned<Text>>,
    dialect: Dialect,
    azure: bool,
) -> Result<Auth, CatalogError> {
    let default = if azure { Auth::ApiKey } else { Auth::Bearer };
    let Some(name) = auth else {
        return Ok(default);
    };
    if dialect == Dialect::Anthropic {
        return Err(f.bad(
            "auth",
            name,
            Problem::Conflict,
            "the anthropic dialect always sends its key in x-api-key",
        ));
    }
    Auth::from_name(name.get_ref().as_str()).ok_or_else(|| {
        f.bad(
            "auth",
            name,
            Problem::BadValue,
            format!("unknown key header; use one of: {}", Auth::NAMES.join(", ")),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_follow_the_documented_paths() {
        let dep = AzureApi::Deployment {
            api_version: "2024-10-21".into(),
        };
        assert_eq!(
            dep.url("https://r.openai.azure.com", "chat/completions", "gpt4o"),
            "https://r.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            dep.url("https://r.openai.azure.com", "responses", "gpt4o"),
            "https://r.openai.azure.com/openai/responses?api-version=2024-10-21"
        );
        let v1 = AzureApi::V1 { api_version: None };
        assert_eq!(
            v1.url("https://r.openai.azure.com", "responses", "x"),
            "https://r.openai.azure.com/openai/v1/responses"
        );
        let v1 = AzureApi::V1 {
            api_version: Some("preview".into()),
        };
        assert_eq!(
            v1.url("https://r", "chat/completions", "x"),
            "https://r/openai/v1/chat/completions?api-version=preview"
        );
    }

    #[test]
    fn api_versions_are_plain_tokens() {
        assert!(valid_api_version("2025-04-01-preview"));
        assert!(!valid_api_version(""));
        assert!(!valid_api_version("2024&x=1"));
    }
}
