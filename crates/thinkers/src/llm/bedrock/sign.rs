//! AWS Signature Version 4 for Bedrock requests, through the maintained `aws-sigv4` crate.
//!
//! The credentials travel with the encoded request as its signing header
//! ([`crate::llm::Header`] made by `Header::aws_sigv4`) and the request is signed when it is sent
//! (`llm::http::request_headers`), over the exact body bytes that were counted and are sent: a
//! request that waited in admission is not sent with a stale date. The secret access key and the
//! session token are secrets of the request (the redactor removes them from every error and log
//! line), and no `Debug` shows them.

use std::fmt;
use std::time::SystemTime;

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;

use crate::llm::target::ApiKey;
use crate::model::{AwsSettings, Provider, SIM_DEFAULT_KEY, SIM_KEY_ENV};
use crate::{Error, Result};

/// The signing name of Bedrock's runtime API.
pub(crate) const SERVICE: &str = "bedrock";

const WHO: &str = "bedrock signing";

/// AWS credentials and the region requests are signed for. `Debug` shows the region only.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsSigning {
    region: String,
    access_key_id: ApiKey,
    secret_access_key: ApiKey,
    session_token: Option<ApiKey>,
}

impl fmt::Debug for AwsSigning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsSigning")
            .field("region", &self.region)
            .field("credentials", &"<redacted>")
            .finish()
    }
}

impl AwsSigning {
    /// Credentials for `region` (a session token is needed with temporary credentials).
    pub fn new(
        region: impl Into<String>,
        access_key_id: impl Into<String>,
        secret_access_key: ApiKey,
        session_token: Option<ApiKey>,
    ) -> Self {
        Self {
            region: region.into(),
            access_key_id: ApiKey::new(access_key_id),
            secret_access_key,
            session_token,
        }
    }

    /// Read the region and the credentials a `bedrock-converse` provider names, now. A missing
    /// region or credential is an error naming the provider and the variable (nothing is sent).
    pub(crate) fn from_provider(provider: &Provider) -> Result<Self> {
        let default = AwsSettings::default();
        let aws = provider.aws.as_ref().unwrap_or(&default);
        let missing = |what: String| Error::external(provider.name.clone(), "authentication", what);
        let region = aws.region(&provider.base_url).ok_or_else(|| {
            missing(format!(
                "provider `{}` names no AWS region: set its `region` in the catalog, or \
                 AWS_REGION (nothing was sent)",
                provider.name
            ))
        })?;
        let access = read(&provider.name, &aws.access_key_env)?.ok_or_else(|| {
            missing(format!(
                "the AWS access key variable `{}` of provider `{}` is not set (nothing was sent)",
                aws.access_key_env, provider.name
            ))
        })?;
        let secret = read(&provider.name, &aws.secret_key_env)?.ok_or_else(|| {
            missing(format!(
                "the AWS secret key variable `{}` of provider `{}` is not set (nothing was sent)",
                aws.secret_key_env, provider.name
            ))
        })?;
        let token = read(&provider.name, &aws.session_token_env)?;
        Ok(Self::new(
            region,
            access,
            ApiKey::new(secret),
            token.map(ApiKey::new),
        ))
    }

    /// The texts no error or log line may show: the secret key and the session token.
    pub(crate) fn secrets(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.secret_access_key.expose_secret())
            .chain(self.session_token.as_ref().map(ApiKey::expose_secret))
    }

    /// The headers that sign a `POST` of `body` to `url` with these `headers` (names in lower
    /// case) at `time`: `authorization`, `x-amz-date` and, with a session token,
    /// `x-amz-security-token`.
    pub(crate) fn sign(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        time: SystemTime,
    ) -> Result<Vec<(&'static str, String)>> {
        let identity = Credentials::new(
            self.access_key_id.expose_secret(),
            self.secret_access_key.expose_secret(),
            self.session_token
                .as_ref()
                .map(|t| t.expose_secret().to_owned()),
            None,
            "thinkers catalog",
        )
        .into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(SERVICE)
            .time(time)
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| {
                Error::system(WHO, "the signing parameters are incomplete").with_source(e)
            })?
            .into();
        let request = SignableRequest::new(
            "POST",
            url,
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| {
            Error::system(WHO, format!("the request to {url} cannot be signed")).with_source(e)
        })?;
        let (instructions, _signature) = sign(request, &params)
            .map_err(|e| {
                Error::system(WHO, format!("the request to {url} cannot be signed")).with_source(e)
            })?
            .into_parts();
        let (signed, _query) = instructions.into_parts();
        Ok(signed
            .into_iter()
            .map(|h| (h.name(), h.value().to_owned()))
            .collect())
    }
}

/// A credential variable's value: `None` when unset, an error naming it when empty or not
/// unicode. [`SIM_KEY_ENV`] falls back to the sim's dummy key.
fn read(provider: &str, var: &str) -> Result<Option<String>> {
    match std::env::var(var) {
        Ok(v) if v.trim().is_empty() => Err(Error::external(
            provider.to_owned(),
            "authentication",
            format!(
                "the AWS credential variable `{var}` of provider `{provider}` is empty (nothing \
                 was sent)"
            ),
        )),
        Ok(v) => Ok(Some(v.trim().to_owned())),
        Err(_) if var == SIM_KEY_ENV => Ok(Some(SIM_DEFAULT_KEY.to_owned())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(e) => Err(Error::external(
            provider.to_owned(),
            "authentication",
            format!(
                "the AWS credential variable `{var}` of provider `{provider}` is unusable: {e}"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn signing() -> AwsSigning {
        AwsSigning::new(
            "us-east-1",
            "AKIDEXAMPLE",
            ApiKey::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            Some(ApiKey::new("SESSION-CANARY-TOKEN-1234")),
        )
    }

    #[test]
    fn a_request_is_signed_for_bedrock_in_its_region() {
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/a.b%3A0/converse";
        let headers = signing()
            .sign(url, &[("content-type", "application/json")], b"{}", time)
            .unwrap();
        let get = |n: &str| {
            headers
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| v.as_str())
                .unwrap_or_else(|| panic!("no {n} in {headers:?}"))
        };
        let auth = get("authorization");
        assert!(
            auth.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20231114/us-east-1/bedrock/aws4_request"
            ),
            "{auth}"
        );
        assert!(
            auth.contains("SignedHeaders=content-type;host;x-amz-date"),
            "{auth}"
        );
        assert_eq!(get("x-amz-date"), "20231114T221320Z");
        assert_eq!(get("x-amz-security-token"), "SESSION-CANARY-TOKEN-1234");
        // Another body is another signature: the signature covers the bytes sent.
        let other = signing()
            .sign(url, &[("content-type", "application/json")], b"{ }", time)
            .unwrap();
        assert_ne!(other, headers);
    }

    #[test]
    fn debug_never_shows_the_credentials() {
        let shown = format!("{:?}", signing());
        assert!(shown.contains("us-east-1"), "{shown}");
        for secret in ["AKIDEXAMPLE", "EXAMPLEKEY", "CANARY"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert_eq!(signing().secrets().count(), 2);
    }
}
