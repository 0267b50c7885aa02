//! `GET /api/runs/limits?since_ms=`: the admission machinery per entry, from the record.
//!
//! Per entry (or budget, for a service's): the limit per axis as it stands (the last recorded
//! rate event: its rate, the catalog's figure and where it came from), the rate events over
//! time, each throttle (the status, the wait asked and the wait applied, the provider's detail),
//! the utilisation over time (requests and tokens per minute of the recorded calls, in buckets,
//! beside the limit in force at each bucket's end), and what retries cost: throttled attempts
//! are billed nothing but waited; a job's calls after its first (a correction, an unreadable
//! answer or a truncation escalation: the runtime's call jobs make one call per attempt) were
//! paid again.
//!
//! Rate events are recorded per process (each records its budgets' first standing); a budget
//! store that cannot tell its rates (Redis) leaves the rates empty, its throttles still show.

use std::collections::BTreeMap;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router, routing::get};
use serde::Deserialize;
use serde_json::{Value, json};

use super::super::ChatHost;
use super::super::api::ApiError;
use thinkers::record::{LimitEvent, LimitEventKind, LlmRun};
use thinkers_store::LlmRunFilter;

/// The most throttles and rate events listed per entry (the latest); counts cover all.
const LISTED: usize = 200;

/// The narrowest utilisation bucket, in milliseconds.
const MIN_BUCKET_MS: i64 = 10_000;

/// About how many buckets the window is cut into.
const BUCKETS: i64 = 60;

pub(super) fn routes() -> Router<ChatHost> {
    Router::new().route("/api/runs/limits", get(limits))
}

#[derive(Debug, Deserialize)]
struct LimitsQuery {
    since_ms: Option<i64>,
}

async fn limits(
    State(host): State<ChatHost>,
    Query(q): Query<LimitsQuery>,
) -> Result<Response, ApiError> {
    let store = host.store();
    // Every event is read: the limit in force when the window opens may be older than it.
    let events = store.limit_events(None).await?;
    let mut filter = LlmRunFilter::new();
    if let Some(t) = q.since_ms {
        filter = filter.since_ms(t);
    }
    let runs = store.records().llm_runs(filter).await?;
    Ok(Json(report(&events, &runs, q.since_ms)).into_response())
}

/// One entry's (or service budget's) share of the record.
#[derive(Default)]
struct Group<'a> {
    budget: Option<&'a str>,
    entry: Option<&'a str>,
    /// Every rate event (the window's and the ones before it).
    rates: Vec<&'a LimitEvent>,
    /// The window's throttles.
    throttles: Vec<&'a LimitEvent>,
    /// The window's calls, each with whether it was a paid retry (a job's second or later).
    runs: Vec<(bool, &'a LlmRun)>,
}

/// The per-entry report of `events` and `runs` (see the module docs).
fn report(events: &[LimitEvent], runs: &[LlmRun], since_ms: Option<i64>) -> Value {
    let since = since_ms.unwrap_or(i64::MIN);
    let mut groups: BTreeMap<&str, Group<'_>> = BTreeMap::new();
    for e in events {
        let key = e.entry.as_deref().unwrap_or(&e.budget);
        let g = groups.entry(key).or_default();
        g.budget = Some(&e.budget);
        g.entry = g.entry.or(e.entry.as_deref());
        match e.kind {
            LimitEventKind::Rate { .. } => g.rates.push(e),
            LimitEventKind::Throttle { .. } if e.at_ms >= since => g.throttles.push(e),
            LimitEventKind::Throttle { .. } => {}
        }
    }
    for (r, retry) in runs.iter().zip(paid_retries(runs)) {
        let g = groups.entry(r.entry.as_str()).or_default();
        g.entry = Some(&r.entry);
        g.runs.push((retry, r));
    }
    // The window's span over what it shows, for one bucket grid across entries.
    let times = runs.iter().map(|r| r.at_ms).chain(
        events
            .iter()
            .filter(|e| e.at_ms >= since && matches!(e.kind, LimitEventKind::Throttle { .. }))
            .map(|e| e.at_ms),
    );
    let (first, last) = times.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    let bucket_ms = if first > last {
        MIN_BUCKET_MS
    } else {
        let wanted = (last - first) / BUCKETS + 1;
        ((wanted + MIN_BUCKET_MS - 1) / MIN_BUCKET_MS).max(1) * MIN_BUCKET_MS
    };
    let entries: Vec<Value> = groups
        .into_values()
        .map(|g| group_json(&g, since, bucket_ms))
        .collect();
    json!({
        "since_ms": since_ms,
        "bucket_ms": bucket_ms,
        "entries": entries,
    })
}

/// Whether each call of `runs` was its job's second or later (a paid retry), by end time.
fn paid_retries(runs: &[LlmRun]) -> Vec<bool> {
    thinkers::ops::cost::retry_causes(runs)
        .into_iter()
        .map(|c| c.is_some())
        .collect()
}

fn rate_json(e: &LimitEvent) -> Value {
    match &e.kind {
        LimitEventKind::Rate {
            axis,
            per_minute,
            catalog_per_minute,
            source,
        } => json!({
            "at_ms": e.at_ms,
            "axis": axis,
            "per_minute": per_minute,
            "catalog_per_minute": catalog_per_minute,
            "source": source,
            "job": e.job.to_string(),
            "workflow": e.workflow.to_string(),
        }),
        LimitEventKind::Throttle { .. } => Value::Null,
    }
}

fn throttle_json(e: &LimitEvent) -> Value {
    match &e.kind {
        LimitEventKind::Throttle {
            status,
            asked_ms,
            waited_ms,
            detail,
        } => json!({
            "at_ms": e.at_ms,
            "status": status,
            "asked_ms": asked_ms,
            "waited_ms": waited_ms,
            "detail": detail,
            "job": e.job.to_string(),
            "workflow": e.workflow.to_string(),
        }),
        LimitEventKind::Rate { .. } => Value::Null,
    }
}

/// The axis and per-minute figure of a rate event.
fn axis_rate(e: &LimitEvent) -> Option<(&str, f64)> {
    match &e.kind {
        LimitEventKind::Rate {
            axis, per_minute, ..
        } => Some((axis.as_str(), *per_minute)),
        LimitEventKind::Throttle { .. } => None,
    }
}

fn group_json(g: &Group<'_>, since: i64, bucket_ms: i64) -> Value {
    // The standing of each axis: its last rate event.
    let mut current: BTreeMap<&str, &LimitEvent> = BTreeMap::new();
    for e in &g.rates {
        if let Some((axis, _)) = axis_rate(e) {
            current.insert(axis, e);
        }
    }
    let listed = |list: Vec<Value>| -> Vec<Value> {
        let skip = list.len().saturating_sub(LISTED);
        list.into_iter().skip(skip).collect()
    };
    let window_rates: Vec<Value> = g
        .rates
        .iter()
        .filter(|e| e.at_ms >= since)
        .map(|e| rate_json(e))
        .collect();
    let throttles: Vec<Value> = g.throttles.iter().map(|e| throttle_json(e)).collect();
    let waited_ms: u64 = g
        .throttles
        .iter()
        .map(|e| match e.kind {
            LimitEventKind::Throttle { waited_ms, .. } => waited_ms,
            LimitEventKind::Rate { .. } => 0,
        })
        .sum();
    let repeats: Vec<&LlmRun> = g.runs.iter().filter(|r| r.0).map(|r| r.1).collect();
    let escalations: Vec<&LlmRun> = g.runs.iter().map(|r| r.1).filter(|r| r.escalated).collect();
    json!({
        "entry": g.entry,
        "budget": g.budget,
        "axes": current.values().map(|e| rate_json(e)).collect::<Vec<_>>(),
        "rate_events": window_rates.len(),
        "rates": listed(window_rates),
        "throttle_count": throttles.len(),
        "throttles": listed(throttles),
        "utilisation": utilisation(g, bucket_ms),
        "retries": {
            "throttled_attempts": g.throttles.len(),
            "throttle_wait_ms": waited_ms,
            "paid_retries": super::totals(repeats.iter().copied()),
            "escalations": super::totals(escalations.iter().copied()),
        },
    })
}

/// Requests and tokens per minute of the group's calls (throttled requests among the
/// requests: they reached the provider) in buckets of `bucket_ms`, from its first to its last
/// activity, each beside the per-minute limit per axis in force at the bucket's end.
fn utilisation(g: &Group<'_>, bucket_ms: i64) -> Vec<Value> {
    let times = g
        .runs
        .iter()
        .map(|r| r.1.at_ms)
        .chain(g.throttles.iter().map(|e| e.at_ms));
    let (first, last) = times.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    if first > last {
        return Vec::new();
    }
    let start = first.div_euclid(bucket_ms) * bucket_ms;
    let count = usize::try_from((last - start) / bucket_ms + 1).unwrap_or(1);
    #[derive(Default, Clone, Copy)]
    struct Bucket {
        calls: u64,
        throttled: u64,
        input: u64,
        output: u64,
    }
    let mut buckets = vec![Bucket::default(); count];
    let slot = |t: i64| usize::try_from((t - start) / bucket_ms).unwrap_or(0);
    for (_, r) in &g.runs {
        if let Some(b) = buckets.get_mut(slot(r.at_ms)) {
            b.calls += 1;
            b.input += r.input_tokens;
            b.output += r.output_tokens;
        }
    }
    for e in &g.throttles {
        if let Some(b) = buckets.get_mut(slot(e.at_ms)) {
            b.throttled += 1;
        }
    }
    let per_minute = |n: u64| n as f64 * 60_000.0 / bucket_ms as f64;
    buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let at_ms = start + i64::try_from(i).unwrap_or(0) * bucket_ms;
            let end = at_ms + bucket_ms;
            let mut limits: BTreeMap<&str, f64> = BTreeMap::new();
            for e in g.rates.iter().filter(|e| e.at_ms < end) {
                if let Some((axis, rate)) = axis_rate(e) {
                    limits.insert(axis, rate);
                }
            }
            json!({
                "at_ms": at_ms,
                "calls": b.calls,
                "throttled": b.throttled,
                "requests_per_minute": per_minute(b.calls + b.throttled),
                "tokens_per_minute": per_minute(b.input + b.output),
                "input_tokens_per_minute": per_minute(b.input),
                "output_tokens_per_minute": per_minute(b.output),
                "limits": limits,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use thinkers::job::JobId;

    fn event(at_ms: i64, job: JobId, kind: LimitEventKind) -> LimitEvent {
        LimitEvent {
            at_ms,
            budget: "model:e".to_owned(),
            entry: Some("e".to_owned()),
            job,
            workflow: job,
            kind,
        }
    }

    fn rate(axis: &str, per_minute: f64, source: &str) -> LimitEventKind {
        LimitEventKind::Rate {
            axis: axis.to_owned(),
            per_minute,
            catalog_per_minute: Some(600.0),
            source: source.to_owned(),
        }
    }

    fn call(job: JobId, at_ms: i64, cost: Option<f64>, escalated: bool) -> LlmRun {
        LlmRun {
            job,
            entry: "e".to_owned(),
            input_tokens: 100,
            cached_tokens: 30,
            cache_write_tokens: 10,
            output_tokens: 20,
            cost,
            currency: "USD".to_owned(),
            at_ms,
            escalated,
            ..LlmRun::default()
        }
    }

    #[test]
    fn the_report_sets_use_against_the_limit_in_force_and_prices_retries() {
        let (a, b) = (JobId::new(), JobId::new());
        let events = [
            event(1_000, a, rate("rpm", 600.0, "catalog")),
            event(
                2_000,
                a,
                LimitEventKind::Throttle {
                    status: Some(429),
                    asked_ms: Some(1_500),
                    waited_ms: 1_500,
                    detail: Some("HTTP 429: slow down".to_owned()),
                },
            ),
            event(25_000, a, rate("rpm", 60.0, "header")),
        ];
        let runs = [
            call(a, 1_100, Some(0.5), false),
            call(a, 5_000, Some(0.25), false),
            call(b, 26_000, None, true),
            call(b, 30_000, Some(1.0), true),
        ];
        let out = report(&events, &runs, None);
        let e = &out["entries"][0];
        assert_eq!(e["entry"], "e", "{out}");
        assert_eq!(e["axes"][0]["per_minute"], 60.0, "{out}");
        assert_eq!(e["axes"][0]["source"], "header", "{out}");
        assert_eq!(e["throttles"][0]["asked_ms"], 1_500, "{out}");
        assert_eq!(e["retries"]["throttle_wait_ms"], 1_500, "{out}");
        assert_eq!(e["retries"]["paid_retries"]["calls"], 2, "{out}");
        assert_eq!(
            e["retries"]["paid_retries"]["cost"],
            json!({"USD": 1.25}),
            "{out}"
        );
        assert_eq!(e["retries"]["escalations"]["unpriced_calls"], 1, "{out}");
        let paid = &e["retries"]["paid_retries"];
        assert_eq!(
            (&paid["cache_read_tokens"], &paid["cache_write_tokens"]),
            (&json!(60), &json!(20)),
            "{out}"
        );
        let buckets = e["utilisation"].as_array().unwrap();
        assert_eq!(out["bucket_ms"], 10_000);
        assert_eq!(buckets.len(), 4, "{out}");
        // Bucket one: two calls and a throttle in 10 s, under the catalog's 600 rpm.
        assert_eq!(buckets[0]["requests_per_minute"], 18.0, "{out}");
        assert_eq!(buckets[0]["limits"], json!({"rpm": 600.0}), "{out}");
        assert_eq!(buckets[2]["limits"], json!({"rpm": 60.0}), "{out}");

        // A window after the throttle keeps the limit in force but lists no throttle.
        let later = report(&events, &runs[2..], Some(20_000));
        let e = &later["entries"][0];
        assert_eq!(e["throttle_count"], 0, "{later}");
        assert_eq!(e["axes"][0]["per_minute"], 60.0, "{later}");
        assert_eq!(
            e["utilisation"][0]["limits"],
            json!({"rpm": 60.0}),
            "{later}"
        );
    }
}
