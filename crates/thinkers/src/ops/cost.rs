//! Cost and usage: tokens, calls, latency and spend from recorded model calls.
//!
//! [`report`] groups the calls by job class, catalog entry or workflow and sums each group
//! **per currency**: amounts in different currencies are never added, so a group whose calls
//! went to a USD entry and a EUR entry has two rows. Totals follow the same rule.
//!
//! A call to a catalog entry without prices has an unknown cost ([`LlmRun::cost`] is `None`,
//! its currency empty). Such calls form rows of their own (currency empty) whose
//! [`CostRow::cost`] is `None`, shown as "unknown" ([`spend_text`]): an unpriced call is never
//! counted as free, and a total over priced and unpriced calls reads "X USD" plus an "unknown"
//! row, that is at least X.
//!
//! Every row counts the input tokens whole ([`CostRow::input_tokens`]) and the parts of them
//! read from and written to the providers' prompt caches apart ([`CostRow::cache_read_tokens`],
//! [`CostRow::cache_write_tokens`]); the rest is [`CostRow::uncached_input_tokens`].
//!
//! What retries cost is attributed to their cause ([`CostReport::retries`], [`retry_causes`]):
//! each model call is its own job's attempt, so a job's call after its first was paid again,
//! either as an escalation after a truncated answer (`truncation`) or because the answer could
//! not be used (`correction`: unreadable, or refused by its check). Throttled attempts and
//! attempts that failed without an answer (server errors, timeouts) are billed nothing and
//! leave no call row: they cost time, which the runs explorer's limits view shows.
//!
//! Spend rolls up into the workflow that caused it: every model call row carries the workflow of
//! the job that made it (the root job's id, set at the submission door), so the calls of
//! sub-thinkers and tools deep in a workflow land in the workflow's row of a
//! [`GroupBy::Workflow`] report. For the spend of one part of a workflow,
//! [`rollup_by_ancestor`] follows the parent links of the job rows down from any job.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::stats::percentile_sorted;
use crate::job::JobId;
use crate::record::{JobRecord, LlmRun};
use crate::{Error, Result};

/// How [`report`] groups the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// By the class of the job that made the call.
    #[default]
    Class,
    /// By catalog entry.
    Entry,
    /// By workflow (the roll-up of every job in it).
    Workflow,
}

impl GroupBy {
    /// The lower-case name (`class`, `entry`, `workflow`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Class => "class",
            Self::Entry => "entry",
            Self::Workflow => "workflow",
        }
    }

    /// The value of `run` this grouping groups by (its class, entry or workflow id).
    pub fn key(self, run: &LlmRun) -> String {
        match self {
            Self::Class => run.class.clone(),
            Self::Entry => run.entry.clone(),
            Self::Workflow => run.workflow.to_string(),
        }
    }
}

impl fmt::Display for GroupBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for GroupBy {
    type Err = Error;

    /// Parses `class`, `entry` or `workflow` (ASCII case ignored); anything else is an
    /// [`Error::InvalidInput`] naming `by` and the value.
    fn from_str(s: &str) -> Result<Self> {
        [Self::Class, Self::Entry, Self::Workflow]
            .into_iter()
            .find(|g| g.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                Error::invalid_input(
                    "by",
                    Some(s.to_owned()),
                    "expected class, entry or workflow",
                )
            })
    }
}

/// Latency percentiles of a group's calls, in milliseconds (nearest rank).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Latency {
    /// The median.
    pub p50: u64,
    /// The 95th percentile.
    pub p95: u64,
    /// The 99th percentile.
    pub p99: u64,
}

/// Usage and spend of one group in one currency.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CostRow {
    /// The group: a class, an entry id, a workflow id, or `total`.
    pub group: String,
    /// The currency of [`CostRow::cost`] (ISO code as the catalog entry states it); empty for
    /// the calls of entries without prices.
    pub currency: String,
    /// Model calls.
    pub calls: u64,
    /// Input tokens, all of them: the uncached ones and the cache reads and writes
    /// ([`CostRow::uncached_input_tokens`] is the rest).
    pub input_tokens: u64,
    /// The part of `input_tokens` read from the providers' prompt caches (cache reads).
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the providers' prompt caches (cache writes).
    pub cache_write_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Reasoning tokens.
    pub reasoning_tokens: u64,
    /// Spend, in [`CostRow::currency`]; `None` (unknown) when the cost of any of the calls is
    /// unknown (their entry has no prices).
    pub cost: Option<f64>,
    /// Calls whose cost is unknown.
    pub unpriced_calls: u64,
    /// Latency percentiles.
    pub latency: Latency,
}

impl CostRow {
    /// Sum `runs` (all in one currency) into a row named `group`.
    fn sum(group: String, currency: String, runs: &[&LlmRun]) -> Self {
        let mut latencies: Vec<u64> = runs.iter().map(|r| r.latency_ms).collect();
        latencies.sort_unstable();
        Self {
            group,
            currency,
            calls: runs.len() as u64,
            input_tokens: runs.iter().map(|r| r.input_tokens).sum(),
            cache_read_tokens: runs.iter().map(|r| r.cached_tokens).sum(),
            cache_write_tokens: runs.iter().map(|r| r.cache_write_tokens).sum(),
            output_tokens: runs.iter().map(|r| r.output_tokens).sum(),
            reasoning_tokens: runs.iter().map(|r| r.reasoning_tokens).sum(),
            cost: runs.iter().map(|r| r.cost).sum(),
            unpriced_calls: runs.iter().filter(|r| r.cost.is_none()).count() as u64,
            latency: Latency {
                p50: percentile_sorted(&latencies, 50.0),
                p95: percentile_sorted(&latencies, 95.0),
                p99: percentile_sorted(&latencies, 99.0),
            },
        }
    }
}

impl CostRow {
    /// The input tokens neither read from nor written to a prompt cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cache_read_tokens)
            .saturating_sub(self.cache_write_tokens)
    }

    /// The spend as text: the amount to four decimals, or "unknown" (see [`spend_text`]).
    pub fn cost_text(&self) -> String {
        let known = self.cost.map(|c| format!("{c:.4}"));
        spend_text(known.as_deref(), self.unpriced_calls)
    }
}

/// How a spend is shown: `known` (the amount of the priced calls, `None` when there were none)
/// alone when no call's cost is unknown, "unknown" when nothing is known, and
/// "≥ {known} + unknown" when some calls are priced and `unpriced_calls` are not.
pub fn spend_text(known: Option<&str>, unpriced_calls: u64) -> String {
    match (known, unpriced_calls) {
        (Some(known), 0) => known.to_owned(),
        (None, 0) => "-".to_owned(),
        (None, _) => "unknown".to_owned(),
        (Some(known), _) => format!("≥ {known} + unknown"),
    }
}

/// Usage and spend grouped one way, one row per (group, currency).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CostReport {
    /// How the rows are grouped.
    pub by: GroupBy,
    /// One row per (group, currency), by group then currency.
    pub rows: Vec<CostRow>,
    /// One row per currency over every call, group `total`.
    pub totals: Vec<CostRow>,
    /// What was paid again, one row per (cause, currency): group `correction` or `truncation`
    /// (see [`RetryCause`]); no row for a cause nothing was paid for.
    pub retries: Vec<CostRow>,
}

/// Why a recorded call repeated an earlier call of its job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryCause {
    /// The earlier answer could not be used (unreadable, or refused by its check).
    Correction,
    /// The earlier answer was truncated: this call escalated its output budget.
    Truncation,
}

impl RetryCause {
    /// The cause's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Correction => "correction",
            Self::Truncation => "truncation",
        }
    }
}

/// For each call of `runs`, in order: `None` for its job's first call (by end time), else why
/// it was paid again.
pub fn retry_causes(runs: &[LlmRun]) -> Vec<Option<RetryCause>> {
    let mut by_job: HashMap<JobId, Vec<usize>> = HashMap::new();
    for (i, r) in runs.iter().enumerate() {
        by_job.entry(r.job).or_default().push(i);
    }
    let mut causes = vec![None; runs.len()];
    for calls in by_job.values_mut() {
        calls.sort_by_key(|&i| runs.get(i).map(|r| r.at_ms));
        for &i in calls.iter().skip(1) {
            if let (Some(slot), Some(r)) = (causes.get_mut(i), runs.get(i)) {
                *slot = Some(if r.escalated {
                    RetryCause::Truncation
                } else {
                    RetryCause::Correction
                });
            }
        }
    }
    causes
}

impl CostReport {
    /// The rows of `group` (one per currency).
    pub fn group(&self, group: &str) -> Vec<&CostRow> {
        self.rows.iter().filter(|r| r.group == group).collect()
    }

    /// The row of `group` in `currency`.
    pub fn row(&self, group: &str, currency: &str) -> Option<&CostRow> {
        self.rows
            .iter()
            .find(|r| r.group == group && r.currency == currency)
    }

    /// The total in `currency`.
    pub fn total(&self, currency: &str) -> Option<&CostRow> {
        self.totals.iter().find(|r| r.currency == currency)
    }
}

/// Group `runs` by `by` and sum each group per currency.
pub fn report(runs: &[LlmRun], by: GroupBy) -> CostReport {
    let mut groups: BTreeMap<(String, &str), Vec<&LlmRun>> = BTreeMap::new();
    for run in runs {
        groups
            .entry((by.key(run), run.currency.as_str()))
            .or_default()
            .push(run);
    }
    let rows = groups
        .into_iter()
        .map(|((group, currency), runs)| CostRow::sum(group, currency.to_owned(), &runs))
        .collect();
    let mut by_cause: BTreeMap<RetryCause, Vec<&LlmRun>> = BTreeMap::new();
    for (run, cause) in runs.iter().zip(retry_causes(runs)) {
        if let Some(cause) = cause {
            by_cause.entry(cause).or_default().push(run);
        }
    }
    let retries = by_cause
        .into_iter()
        .flat_map(|(cause, runs)| per_currency(cause.as_str(), runs.into_iter()))
        .collect();
    CostReport {
        by,
        rows,
        totals: per_currency("total", runs.iter()),
        retries,
    }
}

fn per_currency<'a>(group: &str, runs: impl Iterator<Item = &'a LlmRun>) -> Vec<CostRow> {
    let mut by_currency: BTreeMap<&str, Vec<&LlmRun>> = BTreeMap::new();
    for run in runs {
        by_currency
            .entry(run.currency.as_str())
            .or_default()
            .push(run);
    }
    by_currency
        .into_iter()
        .map(|(currency, runs)| CostRow::sum(group.to_owned(), currency.to_owned(), &runs))
        .collect()
}

/// The spend of one job and everything beneath it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubtreeCost {
    /// The job the subtree hangs from.
    pub ancestor: JobId,
    /// The jobs of the subtree, the ancestor first, then depth first.
    pub jobs: Vec<JobId>,
    /// One row per currency (group: the ancestor's id) over the calls of those jobs.
    pub rows: Vec<CostRow>,
}

impl SubtreeCost {
    /// The row in `currency`.
    pub fn in_currency(&self, currency: &str) -> Option<&CostRow> {
        self.rows.iter().find(|r| r.currency == currency)
    }
}

/// Sum the calls made by `ancestor` and by every job below it, found by following the parent
/// links of `jobs` downwards (pass at least the jobs of the ancestor's workflow, for example
/// from the `thinkers-store` crate's `RecordStore::workflow_jobs`). Calls of jobs outside the subtree are
/// ignored; currencies stay separate. An ancestor absent from `jobs` still counts its own calls.
pub fn rollup_by_ancestor(jobs: &[JobRecord], runs: &[LlmRun], ancestor: JobId) -> SubtreeCost {
    let mut children: HashMap<JobId, Vec<&JobRecord>> = HashMap::new();
    for job in jobs {
        if let Some(parent) = job.parent {
            children.entry(parent).or_default().push(job);
        }
    }
    for kids in children.values_mut() {
        kids.sort_by_key(|j| (j.ordinal.is_none(), j.ordinal, j.started_at_ms, j.id));
    }
    let mut seen: HashSet<JobId> = HashSet::new();
    let mut order = Vec::new();
    let mut stack = vec![ancestor];
    while let Some(id) = stack.pop() {
        // A cycle (only corrupt rows make one) is walked once.
        if !seen.insert(id) {
            continue;
        }
        order.push(id);
        if let Some(kids) = children.get(&id) {
            stack.extend(kids.iter().rev().map(|j| j.id));
        }
    }
    let rows = per_currency(
        &ancestor.to_string(),
        runs.iter().filter(|r| seen.contains(&r.job)),
    );
    SubtreeCost {
        ancestor,
        jobs: order,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::JobStatus;

    fn job(id: JobId, parent: Option<JobId>, workflow: JobId, class: &str) -> JobRecord {
        JobRecord {
            id,
            parent,
            workflow,
            class: class.to_owned(),
            ordinal: parent.map(|_| 1),
            status: JobStatus::Succeeded,
            error_kind: None,
            error: None,
            started_at_ms: 0,
            ended_at_ms: Some(1),
            attempts: 1,
        }
    }

    fn run(job: JobId, workflow: JobId, class: &str, cost: f64, currency: &str) -> LlmRun {
        LlmRun {
            job,
            workflow,
            class: class.to_owned(),
            entry: format!("{currency}-entry"),
            input_tokens: 100,
            output_tokens: 10,
            reasoning_tokens: 2,
            cached_tokens: 50,
            cache_write_tokens: 20,
            latency_ms: 100,
            cost: Some(cost),
            currency: currency.to_owned(),
            ..LlmRun::default()
        }
    }

    #[test]
    fn what_retries_cost_is_attributed_to_their_cause() {
        let (w, a, b, c) = (JobId::new(), JobId::new(), JobId::new(), JobId::new());
        let at = |mut r: LlmRun, at_ms: i64, escalated: bool| {
            r.at_ms = at_ms;
            r.escalated = escalated;
            r
        };
        let runs = [
            // Job a: answered, then truncated and escalated, in the record out of order.
            at(run(a, w, "x", 0.40, "USD"), 30, true),
            at(run(a, w, "x", 0.10, "USD"), 10, false),
            // Job b: an unusable answer, corrected twice.
            at(run(b, w, "x", 0.01, "USD"), 10, false),
            at(run(b, w, "x", 0.02, "USD"), 20, false),
            at(run(b, w, "x", 0.03, "EUR"), 30, false),
            // Job c: one call, no retry.
            at(run(c, w, "x", 5.0, "USD"), 10, false),
        ];
        assert_eq!(
            retry_causes(&runs),
            [
                Some(RetryCause::Truncation),
                None,
                None,
                Some(RetryCause::Correction),
                Some(RetryCause::Correction),
                None
            ]
        );
        let r = report(&runs, GroupBy::Class);
        let figures: Vec<_> = r
            .retries
            .iter()
            .map(|row| {
                (
                    row.group.as_str(),
                    row.currency.as_str(),
                    row.calls,
                    row.cost,
                )
            })
            .collect();
        assert_eq!(
            figures,
            [
                ("correction", "EUR", 1, Some(0.03)),
                ("correction", "USD", 1, Some(0.02)),
                ("truncation", "USD", 1, Some(0.40)),
            ]
        );
    }

    #[test]
    fn currencies_are_never_added_together() {
        let w = JobId::new();
        let runs = [
            run(w, w, "a", 1.0, "USD"),
            run(w, w, "a", 2.0, "EUR"),
            run(w, w, "a", 0.5, "USD"),
            run(w, w, "b", 4.0, "EUR"),
        ];
        let r = report(&runs, GroupBy::Class);
        assert_eq!(r.rows.len(), 3);
        assert_eq!(r.group("a").len(), 2);
        let a_usd = r.row("a", "USD").unwrap();
        assert_eq!(
            (a_usd.calls, a_usd.cost, a_usd.input_tokens),
            (2, Some(1.5), 200)
        );
        assert_eq!(
            (
                a_usd.cache_read_tokens,
                a_usd.cache_write_tokens,
                a_usd.uncached_input_tokens()
            ),
            (100, 40, 60)
        );
        assert_eq!(r.row("a", "EUR").unwrap().cost, Some(2.0));
        assert_eq!(r.total("USD").unwrap().cost, Some(1.5));
        assert_eq!(r.total("EUR").unwrap().cost, Some(6.0));
        assert_eq!(r.total("EUR").unwrap().calls, 2);
        let by_entry = report(&runs, GroupBy::Entry);
        assert_eq!(by_entry.row("USD-entry", "USD").unwrap().calls, 2);
    }

    #[test]
    fn an_unpriced_call_is_unknown_never_free() {
        let w = JobId::new();
        let unpriced = LlmRun {
            cost: None,
            ..run(w, w, "a", 0.0, "")
        };
        let runs = [run(w, w, "a", 1.5, "USD"), unpriced.clone(), unpriced];
        let r = report(&runs, GroupBy::Class);
        let known = r.row("a", "USD").unwrap();
        assert_eq!((known.cost, known.unpriced_calls), (Some(1.5), 0));
        assert_eq!(known.cost_text(), "1.5000");
        let unknown = r.row("a", "").unwrap();
        assert_eq!((unknown.calls, unknown.cost), (2, None));
        assert_eq!(unknown.unpriced_calls, 2);
        // Its tokens are counted all the same, cache reads and writes apart.
        assert_eq!(
            (unknown.cache_read_tokens, unknown.cache_write_tokens),
            (100, 40)
        );
        assert_eq!(unknown.cost_text(), "unknown");
        assert_eq!(r.total("").unwrap().cost, None);
        assert_eq!(r.total("USD").unwrap().cost, Some(1.5));
        assert_eq!(spend_text(Some("1.5 USD"), 2), "≥ 1.5 USD + unknown");
        assert_eq!(spend_text(None, 0), "-");
    }

    #[test]
    fn latency_percentiles_per_row() {
        let w = JobId::new();
        let runs: Vec<LlmRun> = (1..=100)
            .map(|n| LlmRun {
                latency_ms: n * 10,
                ..run(w, w, "c", 0.0, "USD")
            })
            .collect();
        let r = report(&runs, GroupBy::Class);
        let row = r.row("c", "USD").unwrap();
        assert_eq!(
            row.latency,
            Latency {
                p50: 500,
                p95: 950,
                p99: 990
            }
        );
    }

    #[test]
    fn a_subtree_sums_its_descendants_only() {
        let root = JobId::new();
        let sub = JobId::new();
        let tool = JobId::new();
        let sibling = JobId::new();
        let jobs = [
            job(root, None, root, "root"),
            job(sub, Some(root), root, "sub"),
            job(tool, Some(sub), root, "tool"),
            job(sibling, Some(root), root, "other"),
        ];
        let runs = [
            run(root, root, "root", 1.0, "USD"),
            run(sub, root, "sub", 2.0, "USD"),
            run(tool, root, "tool", 4.0, "USD"),
            run(tool, root, "tool", 3.0, "EUR"),
            run(sibling, root, "other", 8.0, "USD"),
        ];
        let s = rollup_by_ancestor(&jobs, &runs, sub);
        assert_eq!(s.jobs, [sub, tool]);
        assert_eq!(s.in_currency("USD").unwrap().cost, Some(6.0));
        assert_eq!(s.in_currency("EUR").unwrap().cost, Some(3.0));
        assert_eq!(s.in_currency("USD").unwrap().group, sub.to_string());
        let all = rollup_by_ancestor(&jobs, &runs, root);
        assert_eq!(all.jobs.len(), 4);
        assert_eq!(all.in_currency("USD").unwrap().cost, Some(15.0));
        assert_eq!(all.in_currency("USD").unwrap().calls, 4);
        // The by-workflow report is the same roll-up.
        let by_workflow = report(&runs, GroupBy::Workflow);
        assert_eq!(
            by_workflow.row(&root.to_string(), "USD").unwrap().cost,
            Some(15.0)
        );
    }

    #[test]
    fn group_by_parses_and_names_bad_values() {
        assert_eq!("Workflow".parse::<GroupBy>().unwrap(), GroupBy::Workflow);
        assert_eq!("entry".parse::<GroupBy>().unwrap(), GroupBy::Entry);
        let err = "model".parse::<GroupBy>().unwrap_err().to_string();
        assert!(err.contains("`by`") && err.contains("model"), "{err}");
    }
}
