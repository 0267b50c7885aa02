//! Where each spending cap stands by the record: what the calls it counts cost, and what is left.
//!
//! The figures are the recorded costs of answered calls. The caps' own sums (in the process or
//! in Redis) also hold the worst case of calls in flight, so while calls run a cap refuses
//! earlier than the record's "left" suggests; when nothing runs the two agree. A per-scope-value
//! cap has no standing here: the record does not keep a call's scope axes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::dispatch::{CapOn, CapScope, SpendCap};
use crate::record::LlmRun;

/// One cap, as the record stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapStanding {
    /// What it bounds: `run`, `day YYYY-MM-DD` or `<axis> (each value)`, then which calls
    /// (`on provider …`, `on entry …`) when it does not count every call.
    pub cap: String,
    /// Its amount.
    pub limit: f64,
    /// Its currency.
    pub currency: String,
    /// The recorded cost under it: today's for a day cap, the costliest run's for a run cap;
    /// `None` for a per-scope-value cap (the record keeps no scope axes).
    pub spent: Option<f64>,
    /// `limit - spent`, never below 0.
    pub left: Option<f64>,
    /// For a run cap, the run that spent the most (its workflow id) and how many runs it saw.
    pub costliest_run: Option<String>,
    /// The runs the figures cover (run caps), 0 otherwise.
    pub runs: usize,
    /// Calls it counts whose cost is unknown (not priced): their cost is not in `spent`.
    pub unpriced_calls: u64,
}

/// Where each of `caps` stands over `runs` (the recorded calls, any window: a day cap reads only
/// those of the UTC day holding `now_ms`). `provider_of` names an entry's provider (from the
/// catalog); a provider cap counts no call whose provider it cannot name.
pub fn standing(
    caps: &[SpendCap],
    runs: &[LlmRun],
    provider_of: impl Fn(&str) -> Option<String>,
    now_ms: i64,
) -> Vec<CapStanding> {
    let day_start = now_ms - now_ms.rem_euclid(86_400_000);
    let day = chrono::DateTime::from_timestamp_millis(day_start)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_default();
    caps.iter()
        .map(|cap| {
            let counts = |r: &LlmRun| {
                r.currency.eq_ignore_ascii_case(cap.currency())
                    || (r.cost.is_none() && r.currency.is_empty())
            };
            let on = |r: &LlmRun| match cap.on() {
                CapOn::Every => true,
                CapOn::Entry(e) => &r.entry == e,
                CapOn::Provider(p) => provider_of(&r.entry).is_some_and(|q| &q == p),
            };
            let mine = runs.iter().filter(|r| counts(r) && on(r));
            let unpriced = |rs: &[&LlmRun]| rs.iter().filter(|r| r.cost.is_none()).count() as u64;
            let sum = |rs: &[&LlmRun]| rs.iter().filter_map(|r| r.cost).sum::<f64>();
            let (name, spent, costliest, n, unpriced_calls) = match cap.scope() {
                CapScope::Day => {
                    let today: Vec<&LlmRun> = mine.filter(|r| r.at_ms >= day_start).collect();
                    (
                        format!("day {day}"),
                        Some(sum(&today)),
                        None,
                        0,
                        unpriced(&today),
                    )
                }
                CapScope::Run => {
                    let mut by_run: BTreeMap<String, Vec<&LlmRun>> = BTreeMap::new();
                    for r in mine {
                        by_run.entry(r.workflow.to_string()).or_default().push(r);
                    }
                    let costliest = by_run
                        .iter()
                        .map(|(wf, rs)| (wf.clone(), sum(rs), unpriced(rs)))
                        .max_by(|a, b| a.1.total_cmp(&b.1));
                    let n = by_run.len();
                    match costliest {
                        Some((wf, spent, unpriced)) => {
                            ("run".to_owned(), Some(spent), Some(wf), n, unpriced)
                        }
                        None => ("run".to_owned(), Some(0.0), None, 0, 0),
                    }
                }
                CapScope::Axis(axis) => (format!("{axis} (each value)"), None, None, 0, 0),
            };
            let name = match cap.on() {
                CapOn::Every => name,
                CapOn::Provider(p) => format!("{name} on provider `{p}`"),
                CapOn::Entry(e) => format!("{name} on entry `{e}`"),
            };
            CapStanding {
                cap: name,
                limit: cap.amount(),
                currency: cap.currency().to_owned(),
                spent,
                left: spent.map(|s| (cap.amount() - s).max(0.0)),
                costliest_run: costliest,
                runs: n,
                unpriced_calls,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobId;

    fn call(workflow: JobId, entry: &str, cost: Option<f64>, at_ms: i64) -> LlmRun {
        LlmRun {
            job: JobId::new(),
            workflow,
            class: "c".into(),
            entry: entry.into(),
            model: "m".into(),
            input_tokens: 10,
            output_tokens: 10,
            reasoning_tokens: 0,
            cached_tokens: 0,
            cache_write_tokens: 0,
            output_budget: 100,
            latency_ms: 1,
            stop_reason: "end".into(),
            cost,
            currency: if cost.is_some() {
                "USD".into()
            } else {
                String::new()
            },
            at_ms,
            escalated: false,
        }
    }

    #[test]
    fn day_and_run_caps_stand_by_the_recorded_cost() {
        let day = 86_400_000_i64;
        let now = 20_000 * day + 3_600_000;
        let (a, b) = (JobId::new(), JobId::new());
        let runs = vec![
            call(a, "fast", Some(0.10), now - 1_000),
            call(a, "fast", Some(0.05), now - 2_000),
            call(b, "big", Some(0.30), now - 3_000),
            call(b, "big", None, now - 4_000),
            // Yesterday: not under today's cap, still in its run.
            call(b, "big", Some(1.00), now - day),
        ];
        let provider_of = |e: &str| Some(if e == "big" { "p2" } else { "p1" }.to_owned());
        let caps = [
            SpendCap::per_day(2.0, "USD"),
            SpendCap::per_run(1.5, "USD"),
            SpendCap::per_day(1.0, "USD").on_provider("p1"),
            SpendCap::per_run(0.5, "usd").on_entry("fast"),
            SpendCap::per_axis("tenant", 3.0, "USD"),
        ];
        let s = standing(&caps, &runs, provider_of, now);
        let figures: Vec<_> = s
            .iter()
            .map(|c| (c.cap.as_str(), c.spent.map(|x| (x * 100.0).round() / 100.0)))
            .collect();
        assert_eq!(
            figures,
            vec![
                ("day 2024-10-04", Some(0.45)),
                ("run", Some(1.3)),
                ("day 2024-10-04 on provider `p1`", Some(0.15)),
                ("run on entry `fast`", Some(0.15)),
                ("tenant (each value)", None),
            ]
        );
        assert_eq!(
            s[0].unpriced_calls, 1,
            "the unpriced call is named, not added"
        );
        assert!((s[1].left.unwrap() - 0.2).abs() < 1e-9);
        assert_eq!(s[1].costliest_run, Some(b.to_string()));
        assert_eq!(s[1].runs, 2);
        assert_eq!(s[3].runs, 1);
        assert_eq!(s[4].left, None);
    }
}
