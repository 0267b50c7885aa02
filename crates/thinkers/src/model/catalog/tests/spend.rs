//! Spending caps in catalogs: `[spend]` on every call, `spend` on a provider or an entry, and
//! the errors naming the table, the field and the value.

use super::{VALID, assert_invalid, broken};
use crate::dispatch::{CapOn, CapScope};
use crate::model::catalog::*;

#[test]
fn caps_are_read_from_the_document_a_provider_and_an_entry() -> anyhow::Result<()> {
    let text = VALID
        .replacen(
            "api_key_env = \"ACME_KEY\"\n",
            "api_key_env = \"ACME_KEY\"\nspend = { currency = \"USD\", per_day = 20 }\n",
            1,
        )
        .replacen(
            "currency = \"EUR\"\n",
            "currency = \"EUR\"\nspend = { per_run = 0.25 }\n",
            1,
        )
        + "\n[spend]\ncurrency = \"USD\"\nper_run = 0.5\nper_scope = { tenant = 5.0, ticket = 1 }\n";
    let c = Catalog::from_toml_str(&text, "caps.toml")?;
    let caps: Vec<_> = c
        .spend_caps()
        .iter()
        .map(|c| {
            (
                c.scope().clone(),
                c.on().clone(),
                c.amount(),
                c.currency().to_owned(),
            )
        })
        .collect();
    let usd = || "USD".to_owned();
    assert_eq!(
        caps,
        vec![
            (CapScope::Run, CapOn::Every, 0.5, usd()),
            (CapScope::Axis("tenant".into()), CapOn::Every, 5.0, usd()),
            (CapScope::Axis("ticket".into()), CapOn::Every, 1.0, usd()),
            (CapScope::Day, CapOn::Provider("acme".into()), 20.0, usd()),
            // An entry's cap is counted in the entry's own currency.
            (
                CapScope::Run,
                CapOn::Entry("local-large".into()),
                0.25,
                "EUR".to_owned()
            ),
        ]
    );
    // A merged catalog keeps both sides' caps.
    let mut merged = Catalog::bundled();
    assert!(merged.spend_caps().is_empty());
    merged.merge(c)?;
    assert_eq!(merged.spend_caps().len(), 5);
    Ok(())
}

#[test]
fn a_bad_spend_table_names_its_field_and_value() {
    let at_top = |table: &str| {
        let text = format!("{VALID}\n[spend]\n{table}\n");
        Catalog::from_toml_str(&text, "broken.toml").expect_err(table)
    };
    let e = at_top("per_run = 1");
    assert_invalid(
        &e,
        Problem::Missing,
        &["top level", "spend.currency", "spend.per_run"],
    );
    let e = at_top("currency = \"USD\"\nper_day = -1");
    assert_invalid(
        &e,
        Problem::BadValue,
        &["spend.per_day", "-1", "at least 0"],
    );
    let e = at_top("currency = \"usd\"\nper_day = 1");
    assert_invalid(&e, Problem::BadValue, &["spend.currency", "usd"]);
    let e = at_top("currency = \"USD\"\nper_mont = 1");
    assert_invalid(&e, Problem::UnknownField, &["spend.per_mont", "per_run"]);
    // A value of the wrong TOML type is named as such, here as everywhere in a catalog.
    let e = at_top("currency = \"USD\"\nper_scope = 3");
    assert_invalid(&e, Problem::WrongType, &["spend.per_scope", "tenant"]);
    let e = at_top("currency = \"USD\"\nper_scope = { tenant = \"lots\" }");
    assert_invalid(&e, Problem::WrongType, &["spend.per_scope.tenant", "lots"]);

    // An entry's cap in another currency than its prices could never bound its calls.
    let e = broken(
        "currency = \"EUR\"\n",
        "currency = \"EUR\"\nspend = { currency = \"USD\", per_run = 1 }\n",
    );
    assert_invalid(
        &e,
        Problem::BadValue,
        &["local-large", "spend.currency", "EUR"],
    );
    // Nor can a cap bound an unpriced entry.
    let e = broken(
        "price_in = 0\nprice_out = 0\ncurrency = \"EUR\"\n",
        "spend = { currency = \"EUR\", per_run = 1 }\n",
    );
    assert_invalid(
        &e,
        Problem::BadValue,
        &["local-large", "spend", "without prices"],
    );
    // A provider's cap must be able to bound every entry it serves.
    let e = broken(
        "base_url = \"http://localhost:8080/v1\"\n",
        "base_url = \"http://localhost:8080/v1\"\nspend = { currency = \"USD\", per_day = 1 }\n",
    );
    assert_invalid(
        &e,
        Problem::BadValue,
        &[
            "local-large",
            "provider `local` caps spending in USD",
            "priced in EUR",
        ],
    );
}
