//! Azure OpenAI and Responses providers: what loads, and each malformed case named by provider
//! and field.

use super::{assert_invalid, broken};
use crate::model::catalog::*;

const ACME: &str = "dialect = \"openai\"\nbase_url = \"https://api.acme.test/v1/\"\n";

fn azure(fields: &str) -> String {
    format!("dialect = \"openai\"\nbase_url = \"https://res.openai.azure.com\"\n{fields}")
}

#[test]
fn azure_providers_and_the_responses_dialect_load() {
    let text = super::VALID.replacen(
        ACME,
        &azure("azure = \"deployment\"\napi_version = \"2024-10-21\"\n"),
        1,
    );
    let c = Catalog::from_toml_str(&text, "azure.toml").unwrap();
    let p = c.provider("acme").unwrap();
    assert_eq!(
        p.azure,
        Some(AzureApi::Deployment {
            api_version: "2024-10-21".into()
        })
    );
    assert_eq!(p.auth, Auth::ApiKey, "api-key is the default with azure");

    let text = super::VALID.replacen(
        ACME,
        &azure("azure = \"v1\"\nauth = \"bearer\"\n").replace("\"openai\"", "\"openai-responses\""),
        1,
    );
    let c = Catalog::from_toml_str(&text, "azure.toml").unwrap();
    let p = c.provider("acme").unwrap();
    assert_eq!(p.dialect, Dialect::OpenAiResponses);
    assert_eq!(p.azure, Some(AzureApi::V1 { api_version: None }));
    assert_eq!(p.auth, Auth::Bearer);

    let plain = Catalog::from_toml_str(super::VALID, "valid.toml").unwrap();
    let p = plain.provider("acme").unwrap();
    assert_eq!((p.azure.clone(), p.auth), (None, Auth::Bearer));
}

#[test]
fn rejects_a_deployment_without_its_api_version() {
    let err = broken(ACME, &azure("azure = \"deployment\"\n"));
    assert_invalid(
        &err,
        Problem::Missing,
        &["provider `acme`", "field `api_version`", "2024-10-21"],
    );
}

#[test]
fn rejects_unknown_azure_and_auth_values() {
    let err = broken(ACME, &azure("azure = \"classic\"\n"));
    assert_invalid(
        &err,
        Problem::BadValue,
        &[
            "provider `acme`",
            "field `azure`",
            "\"classic\"",
            "deployment, v1",
        ],
    );
    let err = broken(ACME, &azure("azure = \"v1\"\nauth = \"token\"\n"));
    assert_invalid(
        &err,
        Problem::BadValue,
        &[
            "provider `acme`",
            "field `auth`",
            "\"token\"",
            "bearer, api-key",
        ],
    );
}

#[test]
fn rejects_azure_settings_where_they_cannot_apply() {
    let err = broken(
        ACME,
        "dialect = \"openai\"\nbase_url = \"https://api.acme.test/v1/\"\napi_version = \"2024-10-21\"\n",
    );
    assert_invalid(
        &err,
        Problem::Conflict,
        &["provider `acme`", "field `api_version`", "azure"],
    );
    let err = broken(
        ACME,
        "dialect = \"anthropic\"\nbase_url = \"https://res.openai.azure.com\"\nazure = \"v1\"\n",
    );
    assert_invalid(
        &err,
        Problem::Conflict,
        &["provider `acme`", "field `azure`", "`anthropic`"],
    );
    let err = broken(
        ACME,
        "dialect = \"anthropic\"\nbase_url = \"https://api.anthropic.test\"\nauth = \"bearer\"\n",
    );
    assert_invalid(
        &err,
        Problem::Conflict,
        &["provider `acme`", "field `auth`", "x-api-key"],
    );
    let err = broken(
        ACME,
        "dialect = \"openai\"\nbase_url = \"https://res.openai.azure.com/openai/v1\"\nazure = \"v1\"\n",
    );
    assert_invalid(
        &err,
        Problem::BadValue,
        &["provider `acme`", "field `base_url`", "resource endpoint"],
    );
    let err = broken(ACME, &azure("azure = \"v1\"\napi_version = \"2024&x=1\"\n"));
    assert_invalid(
        &err,
        Problem::BadValue,
        &["provider `acme`", "field `api_version`", "\"2024&x=1\""],
    );
}
