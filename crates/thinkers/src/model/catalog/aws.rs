//! [`AwsSettings`]: how a `bedrock-converse` provider finds its region and its AWS credentials.
//!
//! Catalog fields, read only for that dialect (any other dialect refuses them as unknown):
//!
//! * `region`: the region requests are signed for; when absent, `AWS_REGION`, then
//!   `AWS_DEFAULT_REGION`, then the region in a `bedrock-runtime.{region}.amazonaws.com` base URL;
//! * `access_key_env`, `secret_key_env`, `session_token_env`: the variables holding the
//!   credentials (default `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`; the
//!   session token is optional). A variable named [`super::SIM_KEY_ENV`] falls back to the
//!   simulated provider's dummy key, so the offline catalogs need no configuration.
//!
//! A provider that names an `api_key_env` sends that key as a bearer token (a Bedrock API key)
//! instead of signing.

use serde::Serialize;

/// The default variable of the access key id.
pub(crate) const AWS_ACCESS_KEY_ENV: &str = "AWS_ACCESS_KEY_ID";
/// The default variable of the secret access key.
pub(crate) const AWS_SECRET_KEY_ENV: &str = "AWS_SECRET_ACCESS_KEY";
/// The default variable of the (optional) session token.
pub(crate) const AWS_SESSION_TOKEN_ENV: &str = "AWS_SESSION_TOKEN";

/// Where a `bedrock-converse` provider's region and credentials come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AwsSettings {
    /// The signing region named in the catalog, if any.
    pub region: Option<String>,
    /// The variable holding the access key id.
    pub access_key_env: String,
    /// The variable holding the secret access key.
    pub secret_key_env: String,
    /// The variable holding the session token (optional: unset means none).
    pub session_token_env: String,
}

impl Default for AwsSettings {
    fn default() -> Self {
        Self {
            region: None,
            access_key_env: AWS_ACCESS_KEY_ENV.to_owned(),
            secret_key_env: AWS_SECRET_KEY_ENV.to_owned(),
            session_token_env: AWS_SESSION_TOKEN_ENV.to_owned(),
        }
    }
}

impl AwsSettings {
    /// The region to sign for: the catalog's, else `AWS_REGION`, else `AWS_DEFAULT_REGION`,
    /// else the one in a `bedrock-runtime.{region}.amazonaws.com` base URL.
    pub(crate) fn region(&self, base_url: &str) -> Option<String> {
        let env = |var: &str| {
            std::env::var(var)
                .ok()
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        self.region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .or_else(|| region_of_host(base_url))
    }
}

/// The region in `https://bedrock-runtime.{region}.amazonaws.com` (also the FIPS host).
fn region_of_host(base_url: &str) -> Option<String> {
    let host = url::Url::parse(base_url).ok()?.host_str()?.to_owned();
    let rest = host
        .strip_prefix("bedrock-runtime-fips.")
        .or_else(|| host.strip_prefix("bedrock-runtime."))?;
    let region = rest.split('.').next()?;
    (!region.is_empty() && rest.contains(".amazonaws.")).then(|| region.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_is_read_from_a_bedrock_host() {
        assert_eq!(
            region_of_host("https://bedrock-runtime.eu-west-3.amazonaws.com").as_deref(),
            Some("eu-west-3")
        );
        assert_eq!(
            region_of_host("https://bedrock-runtime-fips.us-east-1.amazonaws.com").as_deref(),
            Some("us-east-1")
        );
        assert_eq!(region_of_host("http://127.0.0.1:4000"), None);
        let named = AwsSettings {
            region: Some("ap-south-1".into()),
            ..AwsSettings::default()
        };
        assert_eq!(
            named.region("http://127.0.0.1:1").as_deref(),
            Some("ap-south-1")
        );
    }

    const PROVIDER: &str = "[providers.b]\ndialect = \"bedrock-converse\"\n\
        base_url = \"https://bedrock-runtime.us-east-1.amazonaws.com\"\n";
    const ENTRY: &str = "[[entries]]\nid = \"x\"\nprovider = \"b\"\nmodel = \"m\"\n\
        grade = \"small\"\ncontext_window = 1000\noutput_ceiling = 100\nprice_in = 0\n\
        price_out = 0\ncurrency = \"USD\"\n";

    #[test]
    fn a_bedrock_provider_reads_its_region_and_credential_variables() -> anyhow::Result<()> {
        use crate::model::{Catalog, Dialect};
        // No API key variable is needed: requests are signed.
        let c = Catalog::from_toml_str(&format!("{PROVIDER}{ENTRY}"), "b.toml")?;
        let p = c.provider("b")?;
        assert_eq!(p.dialect, Dialect::BedrockConverse);
        assert_eq!(p.aws, Some(AwsSettings::default()));
        let text = format!(
            "{PROVIDER}region = \"eu-west-1\"\naccess_key_env = \"MY_ID\"\n\
             secret_key_env = \"MY_SECRET\"\nsession_token_env = \"MY_TOKEN\"\n{ENTRY}"
        );
        let c = Catalog::from_toml_str(&text, "b.toml")?;
        let aws = c.provider("b")?.aws.clone().unwrap_or_default();
        assert_eq!(aws.region.as_deref(), Some("eu-west-1"));
        assert_eq!(
            (aws.access_key_env.as_str(), aws.secret_key_env.as_str()),
            ("MY_ID", "MY_SECRET")
        );
        assert_eq!(aws.session_token_env, "MY_TOKEN");
        // Another dialect refuses the fields, naming the provider and the field.
        let other = "[providers.b]\ndialect = \"openai\"\nbase_url = \"https://x.invalid/v1\"\n\
                     api_key_env = \"K\"\nregion = \"eu-west-1\"\n";
        let err = Catalog::from_toml_str(&format!("{other}{ENTRY}"), "b.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("region") && err.contains("`b`"), "{err}");
        Ok(())
    }
}
