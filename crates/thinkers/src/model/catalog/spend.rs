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

use toml::Value;

use super::error::{CatalogError, Problem};
use super::fields::Fields;
use crate::dispatch::{CapOn, SpendCap};

/// The keys a `spend` table may hold.
const KEYS: [&str; 4] = ["currency", "per_run", "per_day", "per_scope"];

/// The caps of the `spend` table of a document or provider `f` reads, if it has one, on the calls
/// `on` says, added to `caps`; it must name its currency.
pub(super) fn read_table_caps(
    f: &mut Fields<'_>,
    on: &CapOn,
    caps: &mut Vec<SpendCap>,
) -> Result<(), CatalogError> {
    if let Some(items) = f.table("spend")? {
        caps.extend(read_caps(f, "spend", &items, None, on)?);
    }
    Ok(())
}

/// The caps of entry `id`'s `spend` table, in its `currency` (`None`: it has no prices, and
/// cannot be capped), added to `caps`, once every cap already read on its `provider` is checked
/// to be able to bound the entry's calls (a provider cap in another currency, or over an
/// unpriced entry, is an error naming the entry).
pub(super) fn read_entry_caps(
    f: &mut Fields<'_>,
    id: &str,
    provider: &str,
    currency: Option<&str>,
    caps: &mut Vec<SpendCap>,
) -> Result<(), CatalogError> {
    let on_provider = CapOn::Provider(provider.to_owned());
    if let Some(cap) = caps
        .iter()
        .find(|c| *c.on() == on_provider && currency.is_none_or(|cur| cur != c.currency()))
    {
        let why = currency.map_or_else(
            || "the entry has no prices".to_owned(),
            |cur| format!("the entry is priced in {cur}"),
        );
        return Err(f.error(
            "provider",
            f.value_of("provider"),
            Problem::BadValue,
            format!(
                "provider `{provider}` caps spending in {}, but {why}: the cap could not \
                 bound its calls",
                cap.currency()
            ),
        ));
    }
    if let Some(items) = f.table("spend")? {
        if currency.is_none() {
            return Err(f.error(
                "spend",
                f.value_of("spend"),
                Problem::BadValue,
                "an entry without prices cannot be capped: its calls' cost is unknown",
            ));
        }
        let on = CapOn::Entry(id.to_owned());
        caps.extend(read_caps(f, "spend", &items, currency, &on)?);
    }
    Ok(())
}

/// Read the `spend` table `items` (named `field` in errors, read through `f`'s table and
/// location) into caps on the calls `on` says. `currency` is the default when the table names
/// none (an entry's own); without either, a cap is an error naming the field.
fn read_caps(
    f: &Fields<'_>,
    field: &str,
    items: &[(&str, &Value)],
    currency: Option<&str>,
    on: &CapOn,
) -> Result<Vec<SpendCap>, CatalogError> {
    let at = |key: &str| format!("{field}.{key}");
    if let Some((key, value)) = items.iter().find(|(k, _)| !KEYS.contains(k)) {
        return Err(f.error(
            &at(key),
            Some(value),
            Problem::UnknownField,
            format!("a spend table holds only {}", KEYS.join(", ")),
        ));
    }
    let get = |key: &str| items.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let stated = match get("currency") {
        None => None,
        Some(Value::String(c)) if c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()) => {
            Some(c.as_str())
        }
        Some(other) => {
            return Err(f.error(
                &at("currency"),
                Some(other),
                Problem::BadValue,
                "must be three upper-case letters, such as USD",
            ));
        }
    };
    if let (Some(stated), Some(own), CapOn::Entry(_)) = (stated, currency, on)
        && stated != own
    {
        return Err(f.error(
            &at("currency"),
            get("currency"),
            Problem::BadValue,
            format!("the entry is priced in {own}: a cap in {stated} could not bound its calls"),
        ));
    }
    let amount = |key: &str, value: &Value| -> Result<f64, CatalogError> {
        let n = match value {
            Value::Float(x) => *x,
            Value::Integer(n) => *n as f64,
            _ => {
                return Err(f.error(
                    key,
                    Some(value),
                    Problem::BadValue,
                    "must be an amount of money (a number)",
                ));
            }
        };
        if n.is_finite() && n >= 0.0 {
            Ok(n)
        } else {
            Err(f.error(
                key,
                Some(value),
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
    let cur = stated.or(currency).unwrap_or("");
    if let Some(v) = get("per_run") {
        let key = at("per_run");
        let n = amount(&key, v)?;
        caps.push((key, on_calls(SpendCap::per_run(n, cur))));
    }
    if let Some(v) = get("per_day") {
        let key = at("per_day");
        let n = amount(&key, v)?;
        caps.push((key, on_calls(SpendCap::per_day(n, cur))));
    }
    match get("per_scope") {
        None => {}
        Some(Value::Table(axes)) => {
            for (axis, v) in axes {
                let key = format!("{}.{axis}", at("per_scope"));
                let n = amount(&key, v)?;
                caps.push((key, on_calls(SpendCap::per_axis(axis, n, cur))));
            }
        }
        Some(other) => {
            return Err(f.error(
                &at("per_scope"),
                Some(other),
                Problem::BadValue,
                "must be a table of scope axis = amount, such as { tenant = 5.0 }",
            ));
        }
    }
    if let Some((key, _)) = caps.first()
        && cur.is_empty()
    {
        return Err(f.error(
            &at("currency"),
            None,
            Problem::Missing,
            format!("{key} needs the currency it is counted in"),
        ));
    }
    Ok(caps.into_iter().map(|(_, cap)| cap).collect())
}
