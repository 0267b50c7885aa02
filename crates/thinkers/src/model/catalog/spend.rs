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

/// Read the `spend` table `items` (named `field` in errors, read through `f`'s table and
/// location) into caps on the calls `on` says. `currency` is the default when the table names
/// none (an entry's own); without either, a cap is an error naming the field.
pub(super) fn read_caps(
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
