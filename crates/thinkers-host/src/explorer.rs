//! The runs explorer's routes: what the store recorded (workflows, trajectories, model calls,
//! benchmark reports, spend and sizing, approvals), read from the runtime's store (SQLite or
//! PostgreSQL), so it shows workflows run by any process writing there.
//!
//! | method and path | what it returns |
//! |---|---|
//! | `GET /runs` | the explorer page |
//! | `GET /static/{file}` | the vendored Markdown renderer and sanitiser, and their licences |
//! | `GET /api/runs/workflows?status=&class=&page=&per_page=` | a page of workflows, newest first, with their calls, tokens and cost per currency |
//! | `GET /api/runs/workflows/{id}` | the trajectory (depth-first, siblings by ordinal then start), its model calls, approvals and benchmark report |
//! | `GET /api/runs/workflows/{id}/events` | server-sent `snapshot` events (the same JSON) whenever the record changes, then `end` once the root job ended |
//! | `GET /api/runs/benchmarks` | stored benchmark reports, newest first |
//! | `GET /api/runs/cost` | spend per entry and per class, cumulative over time, and sizing per class |
//! | `GET /api/runs/limits?since_ms=` | per entry: each axis's limit as learned and its source, rate changes, throttles, utilisation over time, what retries cost ([`limits`]) |
//! | `GET /api/runs/approvals` | every approval, pending ones first |
//! | `POST /api/runs/approvals/{id}` | `{"decision": "approve"}` or `{"decision": "deny", "reason": …}`; then the host's [`super::DecisionHook`], if any |
//!
//! The record keeps no request or response bodies of model calls; the call view says so. API
//! keys are never recorded, so none can be shown.

mod limits;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::ChatHost;
use super::api::ApiError;
use thinkers::job::JobId;
use thinkers::ops::Trajectory;
use thinkers::ops::caps::CapStanding;
use thinkers::ops::cost::{self, GroupBy};
use thinkers::record::{JobStatus, LlmRun};
use thinkers_store::{LlmRunFilter, WorkflowQuery};

const RUNS_PAGE: &str = include_str!("runs.html");

/// The vendored files `/static/` serves: name, content type, bytes.
const STATIC: &[(&str, &str, &str)] = &[
    (
        "marked.min.js",
        "text/javascript; charset=utf-8",
        include_str!("static/marked.min.js"),
    ),
    (
        "purify.min.js",
        "text/javascript; charset=utf-8",
        include_str!("static/purify.min.js"),
    ),
    (
        "marked.LICENSE.md",
        "text/plain; charset=utf-8",
        include_str!("static/marked.LICENSE.md"),
    ),
    (
        "purify.LICENSE",
        "text/plain; charset=utf-8",
        include_str!("static/purify.LICENSE"),
    ),
    (
        "purify.LICENSE-MPL",
        "text/plain; charset=utf-8",
        include_str!("static/purify.LICENSE-MPL"),
    ),
];

/// How often a workflow's event stream reads the record.
const POLL: Duration = Duration::from_millis(250);

pub(super) fn routes() -> Router<ChatHost> {
    Router::new()
        .route("/runs", get(page))
        .route("/static/{file}", get(asset))
        .route("/api/runs/workflows", get(workflows))
        .route("/api/runs/workflows/{id}", get(workflow))
        .route("/api/runs/workflows/{id}/events", get(workflow_events))
        .route("/api/runs/benchmarks", get(benchmarks))
        .route("/api/runs/cost", get(spend))
        .route("/api/runs/approvals", get(approvals))
        .route("/api/runs/approvals/{id}", post(decide))
        .merge(limits::routes())
}

async fn page() -> impl IntoResponse {
    ([(header::CACHE_CONTROL, "no-store")], Html(RUNS_PAGE))
}

async fn asset(Path(file): Path<String>) -> Response {
    match STATIC.iter().find(|(name, _, _)| *name == file) {
        Some((_, kind, body)) => ([(header::CONTENT_TYPE, *kind)], *body).into_response(),
        None => ApiError::new(
            StatusCode::NOT_FOUND,
            "file",
            format!("no static file {file}"),
        )
        .into_response(),
    }
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    status: Option<String>,
    class: Option<String>,
    page: Option<u64>,
    per_page: Option<u32>,
}

fn workflow_id(id: &str) -> Result<JobId, ApiError> {
    JobId::parse(id).map_err(|_| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "workflow",
            format!("`{id}` is not a workflow id"),
        )
    })
}

/// Calls, tokens and cost per currency of `runs`; the calls whose cost is unknown (entries
/// without prices) are counted in `unpriced_calls`, not in `cost`. `input_tokens` counts all
/// input, `cache_read_tokens` and `cache_write_tokens` the parts of it read from and written to
/// the providers' prompt caches (as in the cost report's rows).
fn totals<'a, I>(runs: I) -> Value
where
    I: IntoIterator<Item = &'a LlmRun>,
    I::IntoIter: Clone,
{
    let runs = runs.into_iter();
    let mut cost: BTreeMap<&str, f64> = BTreeMap::new();
    for r in runs.clone() {
        if let Some(c) = r.cost {
            *cost.entry(r.currency.as_str()).or_default() += c;
        }
    }
    json!({
        "calls": runs.clone().count(),
        "input_tokens": runs.clone().map(|r| r.input_tokens).sum::<u64>(),
        "output_tokens": runs.clone().map(|r| r.output_tokens).sum::<u64>(),
        "reasoning_tokens": runs.clone().map(|r| r.reasoning_tokens).sum::<u64>(),
        "cache_read_tokens": runs.clone().map(|r| r.cached_tokens).sum::<u64>(),
        "cache_write_tokens": runs.clone().map(|r| r.cache_write_tokens).sum::<u64>(),
        "cost": cost,
        "unpriced_calls": runs.filter(|r| r.cost.is_none()).count(),
    })
}

async fn workflows(
    State(host): State<ChatHost>,
    Query(q): Query<ListQuery>,
) -> Result<Response, ApiError> {
    let status = match q.status.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => Some(JobStatus::parse(s).ok_or_else(|| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "status",
                format!("`{s}` is not a job status (running, succeeded, failed, …)"),
            )
        })?),
    };
    let per_page = q.per_page.unwrap_or(25).clamp(1, 200);
    let page = q.page.unwrap_or(1).max(1);
    let query = WorkflowQuery {
        status,
        class: q.class.filter(|c| !c.trim().is_empty()),
        limit: per_page,
        offset: (page - 1).saturating_mul(u64::from(per_page)),
    };
    let store = host.store();
    let found = store.workflow_page(&query).await?;
    // The model calls of the whole page in one query, then per workflow.
    let ids = found.workflows.iter().map(|w| w.workflow);
    let mut calls: std::collections::HashMap<JobId, Vec<LlmRun>> = std::collections::HashMap::new();
    for run in store
        .records()
        .llm_runs(LlmRunFilter::new().workflows(ids))
        .await?
    {
        calls.entry(run.workflow).or_default().push(run);
    }
    let mut rows = Vec::with_capacity(found.workflows.len());
    for w in found.workflows {
        let runs = calls.remove(&w.workflow).unwrap_or_default();
        let mut row = serde_json::to_value(&w).unwrap_or_default();
        row["duration_ms"] = json!(w.ended_at_ms.map(|e| e - w.started_at_ms));
        row["usage"] = totals(&runs);
        rows.push(row);
    }
    Ok(Json(json!({
        "workflows": rows,
        "total": found.total,
        "page": page,
        "per_page": per_page,
        "classes": store.root_classes().await?,
    }))
    .into_response())
}

/// Everything the explorer shows of one workflow.
async fn snapshot(host: &ChatHost, id: JobId) -> Result<Value, ApiError> {
    let store = host.store();
    let records = store.records();
    let jobs = records.workflow_jobs(id).await.map_err(|e| match e {
        // An unknown workflow is a 404 naming it; a store that fails is a 500.
        thinkers::Error::InvalidInput { .. } => {
            ApiError::new(StatusCode::NOT_FOUND, "workflow", e.to_string())
        }
        other => ApiError::from(other),
    })?;
    let runs = records.llm_runs(LlmRunFilter::new().workflow(id)).await?;
    let finished = jobs
        .iter()
        .find(|j| j.id == id)
        .is_some_and(|root| root.status != JobStatus::Running);
    let tree: Vec<Value> = Trajectory::build(jobs)
        .entries()
        .iter()
        .map(|e| {
            let r = &e.record;
            json!({
                "id": r.id.to_string(),
                "parent": r.parent.map(|p| p.to_string()),
                "depth": e.depth,
                "class": r.class,
                "ordinal": r.ordinal,
                "status": r.status.as_str(),
                "attempts": r.attempts,
                "started_at_ms": r.started_at_ms,
                "ended_at_ms": r.ended_at_ms,
                "duration_ms": r.duration_ms(),
                "error_kind": r.error_kind,
                "error": r.error,
            })
        })
        .collect();
    let wid = id.to_string();
    let mut asked = host.steps().approvals(false).await?;
    asked.retain(|a| a.workflow == wid);
    let benchmark = store
        .benchmark_reports(Some(id), 1)
        .await?
        .into_iter()
        .next();
    Ok(json!({
        "workflow": wid,
        "finished": finished,
        "jobs": tree,
        "calls": runs,
        "usage": totals(&runs),
        "caps": cap_standing(host, &runs, true),
        "approvals": asked,
        "benchmark": benchmark,
        "bodies_kept": false,
    }))
}

async fn workflow(
    State(host): State<ChatHost>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = workflow_id(&id)?;
    Ok(Json(snapshot(&host, id).await?).into_response())
}

/// A `snapshot` whenever the record of the workflow changes (first at once), then `end` when
/// its root job has ended. A read that fails is sent as an `error` event and the stream ends.
async fn workflow_events(
    State(host): State<ChatHost>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = workflow_id(&id)?;
    let first = snapshot(&host, id).await?;
    let stop = host.stopping();
    let state = (host, Some(first), String::new(), false);
    let stream =
        futures::stream::unfold(state, move |(host, mut next, mut last, done)| async move {
            if done {
                return None;
            }
            loop {
                let current = match next.take() {
                    Some(v) => v,
                    None => {
                        tokio::time::sleep(POLL).await;
                        match snapshot(&host, id).await {
                            Ok(v) => v,
                            Err(e) => {
                                let ev = Event::default().event("error").data(e.message());
                                return Some((ev, (host, None, last, true)));
                            }
                        }
                    }
                };
                let text = current.to_string();
                if text == last {
                    continue;
                }
                last = text.clone();
                let finished = current["finished"] == json!(true);
                let ev = Event::default().event("snapshot").data(text);
                return Some((ev, (host, None, last, finished)));
            }
        });
    let end = futures::stream::once(async { Event::default().event("end").data("{}") });
    use futures::StreamExt as _;
    let stream = stream
        .chain(end)
        .map(Ok::<_, Infallible>)
        .take_until(stop.cancelled_owned());
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

async fn benchmarks(State(host): State<ChatHost>) -> Result<Response, ApiError> {
    let reports = host.store().benchmark_reports(None, 50).await?;
    Ok(Json(json!({ "benchmarks": reports })).into_response())
}

/// Cumulative cost over time of each (group, currency), sampled at `points` instants spread
/// over the window of the calls. Calls whose cost is unknown draw no line (the tables show them
/// as unknown); they are never drawn as free.
fn series(runs: &[LlmRun], by: GroupBy, points: usize) -> Value {
    let (Some(first), Some(last)) = (
        runs.iter().map(|r| r.at_ms).min(),
        runs.iter().map(|r| r.at_ms).max(),
    ) else {
        return json!([]);
    };
    let step = ((last - first).max(1) as f64) / (points.max(2) - 1) as f64;
    let times: Vec<i64> = (0..points.max(2))
        .map(|i| first + (step * i as f64).round() as i64)
        .collect();
    let mut groups: BTreeMap<(String, String), Vec<(i64, f64)>> = BTreeMap::new();
    for r in runs {
        if let Some(cost) = r.cost {
            groups
                .entry((by.key(r), r.currency.clone()))
                .or_default()
                .push((r.at_ms, cost));
        }
    }
    let lines: Vec<Value> = groups
        .into_iter()
        .map(|((group, currency), mut calls)| {
            calls.sort_by_key(|c| c.0);
            let points: Vec<Value> = times
                .iter()
                .map(|t| {
                    let spent: f64 = calls.iter().filter(|c| c.0 <= *t).map(|c| c.1).sum();
                    json!({"at_ms": t, "cost": spent})
                })
                .collect();
            json!({"group": group, "currency": currency, "points": points})
        })
        .collect();
    json!(lines)
}

/// Where the host runtime's spending caps stand by the recorded `runs` (only its run caps with
/// `runs_only`, for the calls of one run); empty without caps.
fn cap_standing(host: &ChatHost, runs: &[LlmRun], runs_only: bool) -> Vec<CapStanding> {
    let services = host.inner.dispatcher.services();
    let Some(caps) = services.get::<thinkers::dispatch::SpendCaps>() else {
        return Vec::new();
    };
    let caps: Vec<_> = caps
        .caps()
        .iter()
        .filter(|c| !runs_only || *c.scope() == thinkers::dispatch::CapScope::Run)
        .cloned()
        .collect();
    let models = services.get::<thinkers::llm::ModelServices>();
    let provider_of = |entry: &str| {
        let models = models.as_ref()?;
        let entry = models.router().catalog().entry(entry).ok()?;
        Some(entry.provider().to_owned())
    };
    thinkers::ops::caps::standing(&caps, runs, provider_of, thinkers::record::now_ms())
}

async fn spend(State(host): State<ChatHost>) -> Result<Response, ApiError> {
    let runs = host.store().records().llm_runs(LlmRunFilter::new()).await?;
    Ok(Json(json!({
        "caps": cap_standing(&host, &runs, false),
        "by_entry": cost::report(&runs, GroupBy::Entry),
        "by_class": cost::report(&runs, GroupBy::Class),
        "over_time": {
            "entry": series(&runs, GroupBy::Entry, 24),
            "class": series(&runs, GroupBy::Class, 24),
        },
        "sizing": thinkers::ops::sizing::report(&runs),
    }))
    .into_response())
}

async fn approvals(State(host): State<ChatHost>) -> Result<Response, ApiError> {
    let mut all = host.steps().approvals(false).await?;
    // Pending first, then the latest decisions.
    all.sort_by_key(|a| {
        (
            a.status != thinkers::durable::ApprovalStatus::Pending,
            std::cmp::Reverse(a.decided_at_ms),
        )
    });
    Ok(Json(json!({ "approvals": all })).into_response())
}

/// Decide a pending call of a workflow (as [`thinkers::Runtime::approve`] and
/// [`thinkers::Runtime::deny`] do); a chat's calls are decided in the chat, where the turn goes on.
async fn decide(
    State(host): State<ChatHost>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let decision = super::api::decision_of(&body, host.config())?;
    let steps = host.steps();
    let known = steps
        .approvals(false)
        .await?
        .into_iter()
        .find(|a| a.id == id.trim());
    let Some(known) = known else {
        return Err(thinkers::durable::unknown_approval(&id).into());
    };
    if known.run.starts_with("conversation:") {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "approval",
            "this call belongs to a chat: decide it in the chat, where the turn goes on",
        ));
    }
    let decided = steps.decide(&known.id, &decision).await?;
    if let Some(hook) = host.decision_hook() {
        hook(decided.clone()).await.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                "approval",
                format!(
                    "the decision is stored, but the workflow's engine was not told: {e}; \
                     deciding again the same way retries"
                ),
            )
        })?;
    }
    Ok(super::api::decided_json(&decided))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(entry: &str, cost: Option<f64>, currency: &str, at_ms: i64) -> LlmRun {
        LlmRun {
            entry: entry.to_owned(),
            cost,
            currency: currency.to_owned(),
            at_ms,
            input_tokens: 1_000,
            cached_tokens: 400,
            cache_write_tokens: 100,
            ..LlmRun::default()
        }
    }

    #[test]
    fn calls_of_unknown_cost_are_counted_apart_and_never_drawn_as_free() {
        let runs = [
            call("gpt", Some(0.5), "USD", 1),
            call("local", None, "", 2),
            call("local", None, "", 3),
        ];
        let usage = totals(&runs);
        assert_eq!(usage["calls"], 3);
        assert_eq!(usage["cost"], json!({"USD": 0.5}), "{usage}");
        assert_eq!(usage["unpriced_calls"], 2, "{usage}");
        // Cache reads and writes are their own figures, the unpriced calls' included.
        assert_eq!(usage["input_tokens"], 3_000, "{usage}");
        assert_eq!(usage["cache_read_tokens"], 1_200, "{usage}");
        assert_eq!(usage["cache_write_tokens"], 300, "{usage}");
        let report = cost::report(&runs, GroupBy::Entry);
        let local = serde_json::to_value(report.row("local", "").unwrap()).unwrap();
        assert_eq!(
            (&local["cache_read_tokens"], &local["cache_write_tokens"]),
            (&json!(800), &json!(200)),
            "{local}"
        );
        let lines = series(&runs, GroupBy::Entry, 4);
        let groups: Vec<&str> = lines
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["group"].as_str().unwrap())
            .collect();
        assert_eq!(groups, ["gpt"], "{lines}");
    }
}
