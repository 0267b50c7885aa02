//! One test per malformed case: each error names the file, the provider or entry, the field
//! and the bad value.

use super::{VALID, assert_invalid, broken};
use crate::model::catalog::*;

#[test]
fn rejects_unknown_grade() {
    let err = broken("grade = \"small\"", "grade = \"huge\"");
    assert_invalid(
        &err,
        Problem::UnknownGrade,
        &["entry `acme-small`", "field `grade`", "\"huge\"", "mega"],
    );
}

#[test]
fn rejects_ceiling_as_an_entry_grade() {
    let err = broken("grade = \"small\"", "grade = \"ceiling\"");
    assert_invalid(
        &err,
        Problem::UnknownGrade,
        &["acme-small", "`grade`", "not a rung"],
    );
}

#[test]
fn rejects_duplicate_id() {
    let err = broken("id = \"local-large\"", "id = \"acme-small\"");
    assert_invalid(
        &err,
        Problem::Duplicate,
        &["entry `acme-small`", "field `id`", "already"],
    );
}

#[test]
fn rejects_missing_id_naming_the_index() {
    let err = broken("id = \"local-large\"\n", "");
    assert_invalid(&err, Problem::Missing, &["entry #1 (no id)", "field `id`"]);
}

#[test]
fn rejects_missing_provider() {
    let err = broken("provider = \"local\"\n", "");
    assert_invalid(
        &err,
        Problem::Missing,
        &["entry `local-large`", "field `provider`", "required"],
    );
}

#[test]
fn rejects_unknown_provider() {
    let err = broken("provider = \"local\"", "provider = \"nowhere\"");
    assert_invalid(
        &err,
        Problem::UnknownProvider,
        &[
            "entry `local-large`",
            "field `provider`",
            "\"nowhere\"",
            "acme",
        ],
    );
}

#[test]
fn an_entry_without_any_price_field_loads_with_its_cost_unknown() {
    let text = VALID.replacen("price_in = 0\nprice_out = 0\ncurrency = \"EUR\"\n", "", 1);
    assert_ne!(text, VALID, "fixture lacks local-large's prices");
    let catalog = Catalog::from_toml_str(&text, "unpriced.toml").unwrap();
    let e = catalog.entry("local-large").unwrap();
    assert!(!e.priced());
    assert_eq!(e.cost(1_000, 0, 0, 1_000), None);
    assert!(catalog.entry("acme-small").unwrap().priced());
}

#[test]
fn rejects_prices_without_a_currency_or_an_output_price() {
    let err = broken("currency = \"EUR\"\n", "");
    assert_invalid(
        &err,
        Problem::Missing,
        &[
            "entry `local-large`",
            "field `currency`",
            "leave every price field out",
        ],
    );
    let err = broken("price_out = 0\n", "");
    assert_invalid(
        &err,
        Problem::Missing,
        &["entry `local-large`", "field `price_out`"],
    );
}

#[test]
fn rejects_negative_price() {
    let err = broken("price_out = 2\n", "price_out = -2\n");
    assert_invalid(
        &err,
        Problem::BadPrice,
        &["entry `acme-small`", "field `price_out`", "-2"],
    );
}

#[test]
fn rejects_non_finite_price() {
    let err = broken("price_cached = 0.25", "price_cached = nan");
    assert_invalid(
        &err,
        Problem::BadPrice,
        &["acme-small", "`price_cached`", "nan"],
    );
}

#[test]
fn rejects_zero_context_window() {
    let err = broken("context_window = 8192", "context_window = 0");
    assert_invalid(
        &err,
        Problem::ZeroContextWindow,
        &["entry `local-large`", "field `context_window`", "= 0"],
    );
}

#[test]
fn rejects_output_ceiling_above_context_window() {
    let err = broken("output_ceiling = 2048", "output_ceiling = 9000");
    assert_invalid(
        &err,
        Problem::BadOutputCeiling,
        &[
            "entry `local-large`",
            "field `output_ceiling`",
            "9000",
            "8192",
        ],
    );
}

#[test]
fn rejects_unknown_dialect() {
    let err = broken("dialect = \"openai-compatible\"", "dialect = \"cohere\"");
    assert_invalid(
        &err,
        Problem::UnknownDialect,
        &[
            "provider `local`",
            "field `dialect`",
            "\"cohere\"",
            "anthropic",
        ],
    );
}

#[test]
fn rejects_bad_currency() {
    let err = broken("currency = \"EUR\"", "currency = \"euro\"");
    assert_invalid(
        &err,
        Problem::BadCurrency,
        &["entry `local-large`", "field `currency`", "\"euro\""],
    );
}

#[test]
fn rejects_unknown_depth_in_reasoning_tokens() {
    let err = broken("thorough = 6000", "deep = 6000");
    assert_invalid(
        &err,
        Problem::UnknownDepth,
        &[
            "entry `acme-small`",
            "field `reasoning_tokens.deep`",
            "6000",
            "thorough",
        ],
    );
}

#[test]
fn rejects_unknown_depth_in_reasoning_effort() {
    let err = broken("quick = \"low\"", "fast = \"low\"");
    assert_invalid(
        &err,
        Problem::UnknownDepth,
        &[
            "entry `local-large`",
            "field `reasoning_effort.fast`",
            "\"low\"",
        ],
    );
}

#[test]
fn rejects_an_effort_reservation_for_a_depth_that_names_no_effort() {
    // Beside `reasoning_effort`, `reasoning_tokens` is what each effort name reserves: a depth
    // that asks for no reasoning has nothing to reserve for.
    let err = broken(
        "reasoning_effort = {",
        "reasoning_tokens = { quick = 1, standard = 2 }\nreasoning_effort = {",
    );
    assert_invalid(
        &err,
        Problem::Conflict,
        &[
            "entry `local-large`",
            "reasoning_tokens.standard",
            "reasoning_effort",
        ],
    );
}

#[test]
fn rejects_toml_syntax_errors_with_their_line() {
    let err = broken("price_in = 0.5", "price_in = 0.5.1");
    let CatalogError::Syntax {
        line, source_name, ..
    } = &err
    else {
        panic!("expected a syntax error, got {err}");
    };
    assert_eq!(source_name, "broken.toml");
    let expected = VALID
        .lines()
        .position(|l| l.starts_with("price_in = 0.5"))
        .unwrap()
        + 1;
    assert_eq!(*line, expected);
    assert!(
        err.to_string()
            .starts_with(&format!("broken.toml:{expected}:")),
        "{err}"
    );
}

#[test]
fn rejects_unknown_top_level_keys() {
    let text = format!("{VALID}\n[model]\nname = \"x\"\n");
    let err = Catalog::from_toml_str(&text, "broken.toml").unwrap_err();
    assert!(matches!(err, CatalogError::Syntax { .. }), "{err}");
    assert!(err.to_string().contains("model"), "{err}");
}

#[test]
fn rejects_unknown_entry_fields() {
    let err = broken("thinking = false", "thinking = false\npirce_in = 3");
    let line = VALID.lines().position(|l| l == "thinking = false").unwrap() + 2;
    assert_invalid(
        &err,
        Problem::UnknownField,
        &[
            "entry `acme-small`",
            &format!("(line {line})"),
            "field `pirce_in` = 3",
            "expected one of",
            "`price_in`",
        ],
    );
}

#[test]
fn rejects_aws_fields_on_other_dialects_as_unknown() {
    let err = broken(
        "dialect = \"openai-compatible\"",
        "dialect = \"openai-compatible\"\nregion = \"us-east-1\"",
    );
    assert_invalid(
        &err,
        Problem::UnknownField,
        &[
            "provider `local`",
            "field `region`",
            "\"us-east-1\"",
            "bedrock-converse",
        ],
    );
}

#[test]
fn rejects_wrong_types() {
    let err = broken("context_window = 64000", "context_window = \"big\"");
    assert_invalid(
        &err,
        Problem::WrongType,
        &[
            "entry `acme-small`",
            "field `context_window`",
            "\"big\"",
            "integer",
        ],
    );
}

#[test]
fn rejects_a_zero_limit() {
    let err = broken("rpm = 600", "rpm = 0");
    assert_invalid(
        &err,
        Problem::BadValue,
        &["acme-small", "field `rpm`", "leave the field out"],
    );
}

#[test]
fn rejects_unknown_output_budget_rungs_and_budgets_above_the_ceiling() {
    let err = broken("verdict = 300", "max = 300");
    assert_invalid(
        &err,
        Problem::UnknownOutputSize,
        &["acme-small", "field `output_budgets.max`"],
    );
    let err = broken("standard = 6000", "standard = 9000");
    assert_invalid(
        &err,
        Problem::BadValue,
        &[
            "acme-small",
            "field `output_budgets.standard`",
            "9000",
            "8000",
        ],
    );
}

#[test]
fn rejects_a_keyed_dialect_without_a_key_variable() {
    let err = broken("api_key_env = \"ACME_KEY\"\n", "");
    assert_invalid(
        &err,
        Problem::Missing,
        &["provider `acme`", "field `api_key_env`", "openai"],
    );
}

#[test]
fn rejects_a_base_url_without_a_scheme() {
    let err = broken(
        "base_url = \"http://localhost:8080/v1\"",
        "base_url = \"localhost:8080\"",
    );
    assert_invalid(
        &err,
        Problem::BadValue,
        &["provider `local`", "field `base_url`", "localhost:8080"],
    );
}

#[test]
fn errors_carry_the_line_of_the_field() {
    let err = broken("currency = \"EUR\"", "currency = \"eur\"");
    let line = VALID
        .lines()
        .position(|l| l == "currency = \"EUR\"")
        .unwrap()
        + 1;
    let CatalogError::Invalid(invalid) = &err else {
        panic!("unexpected {err}");
    };
    assert_eq!(invalid.field, "currency");
    assert_eq!(invalid.value.as_deref(), Some("\"eur\""));
    assert_eq!(
        invalid.location,
        Location::Entry {
            id: Some("local-large".into()),
            index: 1,
            line: Some(line),
        }
    );
    assert!(err.to_string().contains(&format!("(line {line})")), "{err}");
}

#[test]
fn rejects_an_unknown_structured_output_mode() {
    let err = broken(
        "dialect = \"openai-compatible\"",
        "dialect = \"openai-compatible\"\nstructured_output = \"grammar\"",
    );
    assert_invalid(
        &err,
        Problem::BadValue,
        &[
            "provider `local`",
            "field `structured_output`",
            "\"grammar\"",
            "json_schema",
            "json_object",
            "prompt",
        ],
    );
}

#[test]
fn reads_the_structured_output_mode_with_json_schema_by_default() {
    let with = |mode: &str| {
        let text = VALID.replacen(
            "dialect = \"openai-compatible\"",
            &format!("dialect = \"openai-compatible\"\nstructured_output = \"{mode}\""),
            1,
        );
        let catalog = Catalog::from_toml_str(&text, "modes.toml").unwrap();
        catalog.provider("local").unwrap().structured_output
    };
    assert_eq!(with("json_object"), StructuredOutput::JsonObject);
    assert_eq!(with("prompt"), StructuredOutput::Prompt);
    assert_eq!(with("json_schema"), StructuredOutput::JsonSchema);
    let default = Catalog::from_toml_str(VALID, "valid.toml").unwrap();
    assert_eq!(
        default.provider("local").unwrap().structured_output,
        StructuredOutput::JsonSchema
    );
}

#[test]
fn reads_stream_tools_true_by_default_and_refuses_a_non_boolean() {
    let with = |line: &str| {
        VALID.replacen(
            "dialect = \"openai-compatible\"",
            &format!("dialect = \"openai-compatible\"\n{line}"),
            1,
        )
    };
    let default = Catalog::from_toml_str(VALID, "valid.toml").unwrap();
    assert!(default.provider("local").unwrap().stream_tools);
    let off = Catalog::from_toml_str(&with("stream_tools = false"), "off.toml").unwrap();
    assert!(!off.provider("local").unwrap().stream_tools);
    let err = Catalog::from_toml_str(&with("stream_tools = \"no\""), "bad.toml").unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("stream_tools") && text.contains("provider `local`"),
        "{text}"
    );
}

#[test]
fn names_a_misspelt_field_as_unknown_with_its_line_and_the_expected_fields() {
    // `api_key_vr` for `api_key_env`: an unknown field, not a missing key variable.
    let err = broken("api_key_env = \"ACME_KEY\"", "api_key_vr = \"ACME_KEY\"");
    let line = VALID
        .lines()
        .position(|l| l.starts_with("api_key_env = \"ACME_KEY\""))
        .unwrap()
        + 1;
    assert_invalid(
        &err,
        Problem::UnknownField,
        &[
            "provider `acme`",
            &format!("(line {line})"),
            "field `api_key_vr`",
            "unknown field",
            "api_key_env",
        ],
    );
    let CatalogError::Invalid(invalid) = &err else {
        panic!("unexpected {err}");
    };
    assert_eq!(invalid.field, "api_key_vr");
    assert_eq!(invalid.value.as_deref(), Some("\"ACME_KEY\""));
}
