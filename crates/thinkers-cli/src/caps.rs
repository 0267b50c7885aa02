//! `--max-cost` and `--max-cost-per-day`: spending caps given on the command line, enforced
//! beside the catalog's (`[spend]`) before each model call.

use std::str::FromStr;

use thinkers::RuntimeBuilder;
use thinkers::dispatch::SpendCap;

/// An amount of money: `0.50`, `0.50USD` or `0.50 EUR` (USD when no currency is named).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Money {
    pub(crate) amount: f64,
    pub(crate) currency: String,
}

impl FromStr for Money {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let split = s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len());
        let (number, currency) = s.split_at(split);
        let amount: f64 = number.trim().parse().map_err(|_| {
            format!("`{s}` is not an amount: write a number, optionally with a currency (0.50 or 0.50 EUR)")
        })?;
        if !amount.is_finite() || amount < 0.0 {
            return Err(format!(
                "`{s}`: a cap must be a finite amount of at least 0"
            ));
        }
        let currency = match currency.trim() {
            "" => "USD".to_owned(),
            c if c.len() == 3 && c.bytes().all(|b| b.is_ascii_alphabetic()) => {
                c.to_ascii_uppercase()
            }
            c => {
                return Err(format!(
                    "`{c}` is not a currency: three letters such as USD or EUR"
                ));
            }
        };
        Ok(Self { amount, currency })
    }
}

/// Spending caps on the model calls a command makes.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct CapArgs {
    /// Refuse a model call that could take its run's cost past this amount (its worst case is
    /// held before it is sent): `0.50`, or `0.50 EUR` (USD when no currency is named).
    #[arg(long, value_name = "AMOUNT")]
    pub(crate) max_cost: Option<Money>,
    /// Refuse a model call that could take this UTC day's cost past this amount.
    #[arg(long, value_name = "AMOUNT")]
    pub(crate) max_cost_per_day: Option<Money>,
}

impl CapArgs {
    /// The caps, in the order given.
    pub(crate) fn caps(&self) -> Vec<SpendCap> {
        let run = self
            .max_cost
            .iter()
            .map(|m| SpendCap::per_run(m.amount, &m.currency));
        let day = self
            .max_cost_per_day
            .iter()
            .map(|m| SpendCap::per_day(m.amount, &m.currency));
        run.chain(day).collect()
    }

    /// `builder` with these caps.
    pub(crate) fn apply(&self, builder: RuntimeBuilder) -> RuntimeBuilder {
        self.caps()
            .into_iter()
            .fold(builder, RuntimeBuilder::spend_cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_read_with_or_without_a_currency() {
        let m = |s: &str| s.parse::<Money>();
        assert_eq!(
            m("0.5"),
            Ok(Money {
                amount: 0.5,
                currency: "USD".into()
            })
        );
        assert_eq!(
            m("2eur").map(|m| (m.amount, m.currency)),
            Ok((2.0, "EUR".into()))
        );
        assert_eq!(m(" 1.25 GBP ").map(|m| m.currency), Ok("GBP".into()));
        for bad in ["", "abc", "-1", "1 dollars", "NaN", "inf"] {
            let e = m(bad).expect_err(bad);
            assert!(e.contains('`'), "{e}");
        }
    }
}
