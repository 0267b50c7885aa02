//! Sizing from history: the output rung each job class should declare, read from what its model
//! calls really produced.
//!
//! For every class, [`report`] looks at the class's recorded model calls and gives:
//!
//! * the maximum and the 95th percentile of the output tokens;
//! * the rung the class **declared**, derived from the calls' booked output budget
//!   ([`Declared`]); a budget may be the rung's value capped at the entry's output ceiling, which
//!   only a catalog can tell apart from a raw count ([`report_with_catalog`]);
//! * the **recommended** rung: the smallest rung whose tokens are strictly above the maximum
//!   (Verdict, Compact, Standard, Extended, then Max);
//! * how many calls stopped at the budget (stop reason `max_tokens`, or a provider's raw
//!   `length`): each one means the class's rung must move up;
//! * how many calls were truncation escalations (re-runs at the entry's ceiling after a
//!   truncated answer): the safety net firing, which a well-sized class never needs.
//!
//! A truncated call's output equals its budget, so its class's maximum reaches the declared
//! rung and, the comparison being strict, the recommendation lands at least one rung higher.
//! Escalated calls count towards the maximum (they show the answer's real size) but not towards
//! the declared rung (their budget is the ceiling, not the declaration).

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::stats::percentile_sorted;
use crate::model::{Catalog, Entry, OutputSize};
use crate::record::LlmRun;

/// The stop reasons that mean "the answer hit the output budget".
const TRUNCATED: [&str; 2] = ["max_tokens", "length"];

/// The sizes a recommendation chooses from, smallest first.
const LADDER: [OutputSize; 5] = [
    OutputSize::Verdict,
    OutputSize::Compact,
    OutputSize::Standard,
    OutputSize::Extended,
    OutputSize::Max,
];

/// The output size a class declared, as far as its calls' booked budget tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Declared {
    /// The budget is exactly this rung's own value (the entry's override, when a catalog was
    /// given, or the framework table); `Max` when it is the ceiling and every rung fits under it.
    Rung {
        /// The rung.
        size: OutputSize,
    },
    /// The budget is the entry's output ceiling, which matches no rung's own value but caps
    /// `at_least` and every larger rung: the class declared `at_least` or larger. Only known
    /// with a catalog.
    Capped {
        /// The smallest rung the ceiling caps.
        at_least: OutputSize,
        /// The ceiling (the booked budget).
        ceiling: u64,
    },
    /// A budget that matches no rung: a raw token count (or, without a catalog, possibly a
    /// rung capped at an unknown ceiling).
    Tokens {
        /// The booked budget.
        tokens: u64,
    },
}

impl fmt::Display for Declared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rung { size } => write!(f, "{size}"),
            Self::Capped { at_least, ceiling } => {
                write!(f, "{at_least}+ (capped at {})", group_digits(*ceiling))
            }
            Self::Tokens { tokens } => write!(f, "{} tokens", group_digits(*tokens)),
        }
    }
}

/// What the history says to do with a class's declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeChange {
    /// The declared rung is the recommended one.
    Keep,
    /// The declared budget is at or below what the class produced: move up.
    Raise,
    /// The declared budget is larger than needed: a smaller rung books fewer tokens.
    Lower,
    /// Nothing to compare: no declaration is known.
    Unknown,
}

impl SizeChange {
    /// The lower-case name (`keep`, `raise`, `lower`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Keep => "keep",
            Self::Raise => "raise",
            Self::Lower => "lower",
            Self::Unknown => "unknown",
        }
    }
}

impl fmt::Display for SizeChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The sizing of one job class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassSizing {
    /// The job class.
    pub class: String,
    /// Model calls recorded for the class.
    pub calls: u64,
    /// The largest output of any call, in tokens.
    pub max_output: u64,
    /// The 95th percentile of the output tokens (nearest rank).
    pub p95_output: u64,
    /// The output budget of the class's latest call that was not an escalation.
    pub declared_budget: Option<u64>,
    /// What that budget says the class declared; `None` when every call was an escalation.
    pub declared: Option<Declared>,
    /// The smallest size whose tokens are strictly above [`ClassSizing::max_output`].
    pub recommended: OutputSize,
    /// The tokens the recommendation books (the smallest over the class's entries when a
    /// catalog was given); `None` for [`OutputSize::Max`] without a catalog.
    pub recommended_tokens: Option<u64>,
    /// Whether to keep, raise or lower the declaration.
    pub change: SizeChange,
    /// Calls that stopped at the output budget (`max_tokens`/`length`).
    pub truncations: u64,
    /// Calls that were truncation escalations.
    pub escalations: u64,
    /// The catalog entries the class's calls went to, sorted.
    pub entries: Vec<String>,
}

impl ClassSizing {
    /// Whether a call of the class hit its output budget: the rung should move up.
    pub fn truncated(&self) -> bool {
        self.truncations > 0
    }
}

/// Sizing of every class found in the rows, sorted by class name.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SizingReport {
    /// One row per class.
    pub classes: Vec<ClassSizing>,
}

impl SizingReport {
    /// The row of `class`, if it made any call.
    pub fn class(&self, class: &str) -> Option<&ClassSizing> {
        self.classes.iter().find(|c| c.class == class)
    }

    /// Calls over every class.
    pub fn calls(&self) -> u64 {
        self.classes.iter().map(|c| c.calls).sum()
    }
}

/// Sizing from `rows` against the framework's rung table (Verdict 1,024 / Compact 4,096 /
/// Standard 16,384 / Extended 32,768). A budget matching none of these is reported as a raw
/// count; see [`report_with_catalog`] to recognise budgets capped at an entry's ceiling.
pub fn report(rows: &[LlmRun]) -> SizingReport {
    build(rows, None)
}

/// Sizing from `rows`, translating each rung through the catalog entry that served the call
/// (its own rung budgets and its output ceiling). Calls to entries the catalog does not know
/// fall back to the framework table.
pub fn report_with_catalog(rows: &[LlmRun], catalog: &Catalog) -> SizingReport {
    build(rows, Some(catalog))
}

fn build(rows: &[LlmRun], catalog: Option<&Catalog>) -> SizingReport {
    let mut by_class: BTreeMap<&str, Vec<&LlmRun>> = BTreeMap::new();
    for row in rows {
        by_class.entry(row.class.as_str()).or_default().push(row);
    }
    let classes = by_class
        .into_iter()
        .map(|(class, runs)| size_class(class, &runs, catalog))
        .collect();
    SizingReport { classes }
}

/// How the rungs translate to tokens for one entry (framework table when unknown).
struct Table<'a>(Option<&'a Entry>);

impl Table<'_> {
    /// The tokens `size` books; `None` for `Max` without an entry.
    fn tokens(&self, size: OutputSize) -> Option<u64> {
        match self.0 {
            Some(entry) => Some(u64::from(entry.output_tokens(size))),
            None => size.rung_tokens().map(u64::from),
        }
    }

    /// A rung's own value on this entry, before the ceiling caps it.
    fn uncapped(&self, size: OutputSize) -> Option<u64> {
        self.0
            .and_then(|e| e.output_budget(size))
            .or(size.rung_tokens())
            .map(u64::from)
    }

    fn declared(&self, budget: u64) -> Declared {
        let rungs = OutputSize::RUNGS;
        if let Some(size) = rungs
            .into_iter()
            .find(|r| self.uncapped(*r) == Some(budget))
        {
            return Declared::Rung { size };
        }
        match self.0 {
            Some(entry) if u64::from(entry.output_ceiling()) == budget => {
                match rungs.into_iter().find(|r| self.uncapped(*r) > Some(budget)) {
                    Some(at_least) => Declared::Capped {
                        at_least,
                        ceiling: budget,
                    },
                    None => Declared::Rung {
                        size: OutputSize::Max,
                    },
                }
            }
            _ => Declared::Tokens { tokens: budget },
        }
    }
}

fn size_class(class: &str, runs: &[&LlmRun], catalog: Option<&Catalog>) -> ClassSizing {
    let table_of = |entry: &str| Table(catalog.and_then(|c| c.entry(entry).ok()));
    let mut outputs: Vec<u64> = runs.iter().map(|r| r.output_tokens).collect();
    outputs.sort_unstable();
    let max_output = outputs.last().copied().unwrap_or(0);
    let latest = runs.iter().filter(|r| !r.escalated).max_by_key(|r| r.at_ms);
    let declared_budget = latest.map(|r| r.output_budget);
    let declared = latest.map(|r| table_of(&r.entry).declared(r.output_budget));
    let mut entries: Vec<String> = runs.iter().map(|r| r.entry.clone()).collect();
    entries.sort_unstable();
    entries.dedup();

    // A size fits when it books more than the maximum on every entry the class used.
    let tables: Vec<Table<'_>> = entries.iter().map(|e| table_of(e)).collect();
    let booked =
        |size: OutputSize| -> Option<u64> { tables.iter().map(|t| t.tokens(size)).min().flatten() };
    let recommended = LADDER
        .into_iter()
        .find(|size| *size == OutputSize::Max || booked(*size).is_some_and(|t| t > max_output))
        .unwrap_or(OutputSize::Max);
    let recommended_tokens = booked(recommended);

    let change = match (declared, declared_budget) {
        (Some(Declared::Rung { size }), _) if size == recommended => SizeChange::Keep,
        (Some(Declared::Capped { at_least, .. }), _) if at_least == recommended => SizeChange::Keep,
        (Some(_), Some(budget)) => match recommended_tokens {
            Some(tokens) if budget < tokens => SizeChange::Raise,
            Some(tokens) if budget > tokens => SizeChange::Lower,
            // The budget books what the recommendation books: nothing to gain.
            Some(_) => SizeChange::Keep,
            // Only the ceiling is big enough, and the ceiling is unknown without a catalog.
            None if budget <= max_output => SizeChange::Raise,
            None => SizeChange::Unknown,
        },
        _ => SizeChange::Unknown,
    };

    let count = |f: &dyn Fn(&LlmRun) -> bool| runs.iter().filter(|r| f(r)).count() as u64;
    ClassSizing {
        class: class.to_owned(),
        calls: runs.len() as u64,
        max_output,
        p95_output: percentile_sorted(&outputs, 95.0),
        declared_budget,
        declared,
        recommended,
        recommended_tokens,
        change,
        truncations: count(&|r| TRUNCATED.contains(&r.stop_reason.as_str())),
        escalations: count(&|r| r.escalated),
        entries,
    }
}

/// `16384` → `16,384`.
pub(crate) fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(class: &str, entry: &str, output: u64, budget: u64) -> LlmRun {
        LlmRun {
            class: class.to_owned(),
            entry: entry.to_owned(),
            output_tokens: output,
            output_budget: budget,
            stop_reason: "end_turn".to_owned(),
            ..LlmRun::default()
        }
    }

    #[test]
    fn the_recommendation_is_the_smallest_rung_strictly_above_the_maximum() {
        let rows = [
            call("label", "e", 12, 16_384),
            call("label", "e", 1_023, 16_384),
            call("exact", "e", 1_024, 4_096),
            call("big", "e", 20_000, 32_768),
            call("huge", "e", 40_000, 65_000),
        ];
        let r = report(&rows);
        let label = r.class("label").unwrap();
        assert_eq!(label.recommended, OutputSize::Verdict);
        assert_eq!(label.recommended_tokens, Some(1_024));
        assert_eq!(
            label.declared,
            Some(Declared::Rung {
                size: OutputSize::Standard
            })
        );
        assert_eq!(label.change, SizeChange::Lower);
        // Exactly the rung's tokens is not "above" it.
        assert_eq!(r.class("exact").unwrap().recommended, OutputSize::Compact);
        assert_eq!(r.class("exact").unwrap().change, SizeChange::Keep);
        assert_eq!(r.class("big").unwrap().recommended, OutputSize::Extended);
        let huge = r.class("huge").unwrap();
        assert_eq!(huge.recommended, OutputSize::Max);
        assert_eq!(huge.recommended_tokens, None);
        assert_eq!(huge.declared, Some(Declared::Tokens { tokens: 65_000 }));
        assert_eq!(huge.change, SizeChange::Unknown);
        assert_eq!(r.calls(), 5);
        let names: Vec<&str> = r.classes.iter().map(|c| c.class.as_str()).collect();
        assert_eq!(names, ["big", "exact", "huge", "label"]);
    }

    #[test]
    fn a_catalog_recognises_budgets_capped_at_the_ceiling() {
        // sim-small-b has an 8,192-token ceiling in the bundled catalog.
        let catalog = Catalog::bundled();
        let ceiling = u64::from(catalog.entry("sim-small-b").unwrap().output_ceiling());
        assert_eq!(ceiling, 8_192);
        let rows = [call("capped", "sim-small-b", 3_000, ceiling)];
        let plain = report(&rows);
        assert_eq!(
            plain.class("capped").unwrap().declared,
            Some(Declared::Tokens { tokens: 8_192 })
        );
        let sized = report_with_catalog(&rows, &catalog);
        let capped = sized.class("capped").unwrap();
        assert_eq!(
            capped.declared,
            Some(Declared::Capped {
                at_least: OutputSize::Standard,
                ceiling: 8_192
            })
        );
        assert_eq!(
            capped.declared.unwrap().to_string(),
            "standard+ (capped at 8,192)"
        );
        assert_eq!(capped.recommended, OutputSize::Compact);
        assert_eq!(capped.change, SizeChange::Lower);
        // An answer as large as the ceiling leaves only Max, which is the ceiling itself.
        let full = report_with_catalog(&[call("full", "sim-small-b", 8_192, ceiling)], &catalog);
        let full = full.class("full").unwrap();
        assert_eq!(full.recommended, OutputSize::Max);
        assert_eq!(full.recommended_tokens, Some(8_192));
        assert_eq!(full.change, SizeChange::Keep);
    }

    #[test]
    fn truncations_and_escalations_are_counted_and_move_the_rung_up() {
        let mut truncated = call("extract", "e", 4_096, 4_096);
        truncated.stop_reason = "max_tokens".to_owned();
        let mut length = call("extract", "e", 4_096, 4_096);
        length.stop_reason = "length".to_owned();
        length.at_ms = 2;
        let mut escalated = call("extract", "e", 6_100, 32_768);
        escalated.escalated = true;
        escalated.at_ms = 3;
        let rows = [
            call("extract", "e", 2_000, 4_096),
            truncated,
            length,
            escalated,
        ];
        let r = report(&rows);
        let c = r.class("extract").unwrap();
        assert_eq!((c.calls, c.truncations, c.escalations), (4, 2, 1));
        assert!(c.truncated());
        assert_eq!(c.max_output, 6_100);
        // The escalation's ceiling budget is not the declaration.
        assert_eq!(c.declared_budget, Some(4_096));
        assert_eq!(
            c.declared,
            Some(Declared::Rung {
                size: OutputSize::Compact
            })
        );
        assert_eq!(c.recommended, OutputSize::Standard);
        assert_eq!(c.change, SizeChange::Raise);
    }

    #[test]
    fn p95_and_grouping() {
        let rows: Vec<LlmRun> = (1..=40).map(|n| call("c", "e", n * 10, 1_024)).collect();
        let r = report(&rows);
        let c = r.class("c").unwrap();
        assert_eq!((c.calls, c.max_output, c.p95_output), (40, 400, 380));
        assert_eq!(c.entries, ["e"]);
        assert!(report(&[]).classes.is_empty());
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1_234_567), "1,234,567");
    }
}
