//! Spending caps stated in a catalog: a top-level `[spend]` table (every call), and a `spend`
//! table on a provider (calls to its entries) or on an entry (calls to it), each read into
//! [`SpendCap`]s the runtime enforces beside the ones set in code.
//!
//! ```toml
//! [spend]
//! currency = "USD"
//! per_run = 0.50                  # each run: a workflow and everything under it
//! per_day = 20.0                  # each UTC day
//! per_scope = { tenant = 5.0 }    # each value of the scope axis `tenant`
//! ```

use toml::Spanned;

use super::error::{CatalogError, Problem};
use super::fields::Place;
use super::file::{Number, SpendTable, Text};
use crate::dispatch::{CapOn, SpendCap};

/// The caps of the `spend` table of a document or provider (`f` names it), on the calls `on`
/// says, added to `caps`; it must name its currency.
pub(super) fn read_table_caps(
    f: &Place<'_>,
    spend: &Spanned<SpendTable>,
    on: &CapOn,
    caps: &mut Vec<SpendCap>,
) -> Result<(), CatalogError> {
    caps.extend(read_caps(f, spend, None, on)?);
    Ok(())
}

/// The caps of entry `id`'s `spend` table, in its `currency` (`None`: it has no prices, and
/// cannot be capped), added to `caps`, once every cap already read on its `provider` is checked
/// to be able to bound the entry's calls (a provider cap in another currency, or over an
/// unpriced entry, is an error naming the entry).
pub(super) fn read_entry_caps(
    f: &Place<'_>,
    spend: Option<&Spanned<SpendTable>>,
    id: &str,
    provider: &Spanned<Text>,
    currency: Option<&str>,
    caps: &mut Vec<SpendCap>,
) -> Result<(), CatalogError> {
    let name = provider.get_ref().as_str();
    let on_provider = CapOn::Provider(name.to_owned());
    if let Some(cap) = caps
        .iter()
        .find(|c| *c.on() == on_provider && currency.is_none_or(|cur| cur != c.currency()))
    {
        let why = currency.map_or_else(
            || "the entry has no prices".to_owned(),
            |cur| format!("the entry is priced in {cur}"),
        );
        return Err(f.bad(
            "provider",
            provider,
            Problem::BadValue,
            format!(
                "provider `{name}` caps spending in {}, but {why}: the cap could not \
                 bound its calls",
                cap.currency()
            ),
        ));
    }
    if let Some(spend) = spend {
        if currency.is_none() {
            return Err(f.bad(
                "spend",
                spend,
                Problem::BadValue,
                "an entry without prices cannot be capped: its calls' cost is unknown",
            ));
        }
        let on = CapOn::Entry(id.to_owned());
        caps.extend(read_caps(f, spend, currency, &on)?);
    }
    Ok(())
}

/// Read the `spend` table `spend` (read through `f`'s location) into caps on the calls `on`
/// says. `currency` is the default when the table names none (an entry's own); without either,
/// a cap is an error naming the field.
fn read_caps(
    f: &Place<'_>,
    spend: &Spanned<SpendTable>,
    currency: Option<&str>,
    on: &CapOn,
) -> Result<Vec<SpendCap>, CatalogError> {
    let table = spend.get_ref();
    let at = |key: &str| format!("spend.{key}");
    let stated = match &table.currency {
        None => None,
        Some(c) => {
            let code = c.get_ref().as_str();
            if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
                return Err(f.bad(
                    &at("currency"),
                    c,
                    Problem::BadValue,
                    "must be three upper-case letters, such as USD",
                ));
            }
            Some((code, c))
        }
    };
    if let (Some((stated, written)), Some(own), CapOn::Entry(_)) = (stated, currency, on)
        && stated != own
    {
        return Err(f.bad(
            &at("currency"),
            written,
            Problem::BadValue,
            format!("the entry is priced in {own}: a cap in {stated} could not bound its calls"),
        ));
    }
    let amount = |key: &str, value: &Spanned<Number>| -> Result<f64, CatalogError> {
        let n = value.get_ref().0;
        if n.is_finite() && n >= 0.0 {
            Ok(n)
        } else {
            Err(f.bad(
                key,
                value,
                Problem::BadValue,
                "a cap must be a finite amount of at least 0",
            ))
        }
    };
    let mut caps: Vec<(String, SpendCap)> = Vec::new();
    let on_calls = |cap: SpendCap| match on {
        CapOn::Every => cap,
        CapOn::Provider(p) => cap.on_provider(p),
        CapOn::Entry(e) => cap.on_entry(e),
    };
    let cur = stated.map(|(code, _)| code).or(currency).unwrap_or("");
    if let Some(v) = &table.per_run {
        let key = at("per_run");
        let n = amount(&key, v)?;
        caps.push((key, on_calls(SpendCap::per_run(n, cur))));
    }
    if let Some(v) = &table.per_day {
        let key = at("per_day");
        let n = amount(&key, v)?;
        caps.push((key, on_calls(SpendCap::per_day(n, cur))));
    }
    for (axis, v) in table.per_scope.iter().flat_map(|axes| &axes.0) {
        let key = format!("{}.{axis}", at("per_scope"));
        let n = amount(&key, v)?;
        caps.push((key, on_calls(SpendCap::per_axis(axis, n, cur))));
    }
    if let Some((key, _)) = caps.first()
        && cur.is_empty()
    {
        return Err(f.beside(
            &at("currency"),
            spend,
            Problem::Missing,
            format!("{key} needs the currency it is counted in"),
        ));
    }
    Ok(caps.into_iter().map(|(_, cap)| cap).collect())
}
