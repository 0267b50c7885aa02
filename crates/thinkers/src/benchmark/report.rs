//! [`BenchmarkReport`]: one row per run, means per model, as a text table, JSON or CSV.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::model::Grade;

/// Which run a row describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunRole {
    /// The unpinned run whose output the benchmark returns; the ground truth, never judged.
    Reference,
    /// A run pinned to one entry of the grade.
    Candidate,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    /// Reference or candidate.
    pub role: RunRole,
    /// The catalog entry the run was pinned to, or for the reference the entry that served most
    /// of its calls (`-` when it made none).
    pub model: String,
    /// The run's number among the runs of its model, from 1 (0 for the reference).
    pub run: u32,
    /// The run's job id.
    pub job: String,
    /// Whether the run produced an answer.
    pub succeeded: bool,
    /// Why the run failed.
    pub error: Option<String>,
    /// Model calls made by the run and every job below it.
    pub calls: u64,
    /// Loop iterations (a thinker's turns), or the calls when the subject does not count them.
    pub iterations: u64,
    /// Input tokens over all calls, cache reads and writes included.
    pub input_tokens: u64,
    /// The part of `input_tokens` read from the providers' prompt caches (cache reads).
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the providers' prompt caches (cache writes).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Output tokens over all calls.
    pub output_tokens: u64,
    /// Summed call latency, milliseconds.
    pub latency_ms: u64,
    /// Wall time from submission to the end of the run, milliseconds.
    pub wall_ms: u64,
    /// Cost per currency of the calls whose cost is known; a run pinned to one entry costs in
    /// that entry's currency.
    pub cost: BTreeMap<String, f64>,
    /// Calls whose cost is unknown (their entry has no prices): with any, the cost is at least
    /// [`Self::cost`], shown as "≥ … + unknown" or "unknown".
    #[serde(default)]
    pub unpriced_calls: u64,
    /// Submission time, milliseconds since the Unix epoch.
    pub started_at_ms: i64,
    /// When the run's result reached the benchmark, milliseconds since the Unix epoch.
    pub ended_at_ms: i64,
    /// The judge's total, 0 to 10.
    pub judge_score: Option<u8>,
    /// The judge's accuracy points, 0 to 7.
    pub judge_accuracy: Option<u8>,
    /// The judge's points for shown work, 0 to 3.
    pub judge_work: Option<u8>,
    /// The judge's reason.
    pub judge_reason: Option<String>,
    /// Why the run has no judge score (its judge failed, the run failed, the reference failed).
    pub unjudged: Option<String>,
    /// When the judge was submitted, milliseconds since the Unix epoch.
    pub judge_started_at_ms: Option<i64>,
    /// When the judge's result arrived, milliseconds since the Unix epoch.
    pub judge_ended_at_ms: Option<i64>,
    /// The scorer's score, when a scorer was given and both answers exist.
    pub scorer_score: Option<f64>,
}

impl RunRow {
    /// The input tokens neither read from nor written to a prompt cache.
    pub fn uncached_input_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_sub(self.cache_read_tokens)
            .saturating_sub(self.cache_write_tokens)
    }

    /// The cost as text: `0.000123 USD`, several currencies joined with ` + `; "unknown" or
    /// "≥ … + unknown" when some calls' cost is unknown.
    pub fn cost_text(&self) -> String {
        cost_text(&self.cost, self.unpriced_calls)
    }
}

/// Means over the candidate runs of one model. Failed runs count in `runs` and `failed` only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMeans {
    /// The catalog entry.
    pub model: String,
    /// Candidate runs of the model.
    pub runs: u32,
    /// How many of them failed.
    pub failed: u32,
    /// Mean model calls per successful run.
    pub calls: f64,
    /// Mean iterations.
    pub iterations: f64,
    /// Mean input tokens, cache reads and writes included.
    pub input_tokens: f64,
    /// Mean cache reads (the part of the input read from the providers' prompt caches).
    #[serde(default)]
    pub cache_read_tokens: f64,
    /// Mean cache writes (the part of the input written to the providers' prompt caches).
    #[serde(default)]
    pub cache_write_tokens: f64,
    /// Mean output tokens.
    pub output_tokens: f64,
    /// Mean summed call latency, milliseconds.
    pub latency_ms: f64,
    /// Mean wall time, milliseconds.
    pub wall_ms: f64,
    /// Mean cost per currency over the calls whose cost is known.
    pub cost: BTreeMap<String, f64>,
    /// Calls of the successful runs whose cost is unknown: with any, the mean cost is a lower
    /// bound.
    #[serde(default)]
    pub unpriced_calls: u64,
    /// Mean judge score over the judged runs.
    pub judge_score: Option<f64>,
    /// How many runs were judged.
    pub judged: u32,
    /// Mean scorer score over the scored runs.
    pub scorer_score: Option<f64>,
}

impl ModelMeans {
    /// The mean input tokens neither read from nor written to a prompt cache.
    pub fn uncached_input_tokens(&self) -> f64 {
        (self.input_tokens - self.cache_read_tokens - self.cache_write_tokens).max(0.0)
    }

    /// The mean cost as text, as [`RunRow::cost_text`] shows a run's.
    pub fn cost_text(&self) -> String {
        cost_text(&self.cost, self.unpriced_calls)
    }
}

/// What a benchmark found: rows, means per model, and the failures that concern the whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkReport {
    /// The rung raced (`Ceiling` resolved).
    pub grade: Grade,
    /// Runs per candidate entry.
    pub times: u32,
    /// The reference first, then the candidates in submission order.
    pub rows: Vec<RunRow>,
    /// Means per candidate model, in catalog order.
    pub means: Vec<ModelMeans>,
    /// Why the reference failed, when it did (the benchmark then fails).
    pub reference_failure: Option<String>,
    /// Set only when every judge that ran failed: the first failure's reason.
    pub judge_failure: Option<String>,
}

impl BenchmarkReport {
    /// Assemble a report and compute the means.
    pub fn new(
        grade: Grade,
        times: u32,
        rows: Vec<RunRow>,
        reference_failure: Option<String>,
        judge_failure: Option<String>,
    ) -> Self {
        let means = means(&rows);
        Self {
            grade,
            times,
            rows,
            means,
            reference_failure,
            judge_failure,
        }
    }

    /// The reference's row.
    pub fn reference(&self) -> Option<&RunRow> {
        self.rows.iter().find(|r| r.role == RunRole::Reference)
    }

    /// The candidate rows.
    pub fn candidates(&self) -> impl Iterator<Item = &RunRow> {
        self.rows.iter().filter(|r| r.role == RunRole::Candidate)
    }

    /// The means of one model.
    pub fn means_of(&self, model: &str) -> Option<&ModelMeans> {
        self.means.iter().find(|m| m.model == model)
    }

    /// The rows and the means as fixed-width text tables.
    pub fn table(&self) -> String {
        let mut rows = vec![ROW_HEADER.map(str::to_owned).to_vec()];
        rows.extend(self.rows.iter().map(row_cells));
        let mut out = format!(
            "benchmark over grade {} ({} run(s) per entry)\n",
            self.grade, self.times
        );
        out.push_str(&render(&rows));
        let mut means = vec![MEANS_HEADER.map(str::to_owned).to_vec()];
        means.extend(self.means.iter().map(means_cells));
        out.push_str("\nmeans per model\n");
        out.push_str(&render(&means));
        if let Some(f) = &self.reference_failure {
            let _ = writeln!(out, "\nthe reference run failed: {f}");
        }
        if let Some(f) = &self.judge_failure {
            let _ = writeln!(out, "\nevery judge failed: {f}");
        }
        out
    }

    /// The rows as CSV (a header line, then one line per run).
    pub fn rows_csv(&self) -> String {
        let mut out = CSV_HEADER.join(",");
        out.push('\n');
        for r in &self.rows {
            let cells = [
                role_name(r.role).to_owned(),
                r.model.clone(),
                r.run.to_string(),
                r.job.clone(),
                if r.succeeded { "ok" } else { "failed" }.to_owned(),
                r.error.clone().unwrap_or_default(),
                r.calls.to_string(),
                r.iterations.to_string(),
                r.input_tokens.to_string(),
                r.output_tokens.to_string(),
                r.latency_ms.to_string(),
                r.wall_ms.to_string(),
                amount(&r.cost),
                r.cost.keys().cloned().collect::<Vec<_>>().join(";"),
                opt(r.judge_score),
                opt(r.judge_accuracy),
                opt(r.judge_work),
                r.judge_reason.clone().unwrap_or_default(),
                r.unjudged.clone().unwrap_or_default(),
                r.scorer_score.map(|s| format!("{s}")).unwrap_or_default(),
                r.unpriced_calls.to_string(),
                r.cache_read_tokens.to_string(),
                r.cache_write_tokens.to_string(),
            ];
            let line: Vec<String> = cells.iter().map(|c| csv_field(c)).collect();
            out.push_str(&line.join(","));
            out.push('\n');
        }
        out
    }
}

/// The CSV columns of [`BenchmarkReport::rows_csv`].
/// `cost` and `currency` cover the calls whose cost is known; `unpriced_calls` counts the others
/// (entries without prices), so a row with any has a cost of at least `cost`. `input_tokens`
/// counts all input; `cache_read_tokens` and `cache_write_tokens` are the parts of it read from
/// and written to the providers' prompt caches.
pub(crate) const CSV_HEADER: [&str; 23] = [
    "role",
    "model",
    "run",
    "job",
    "status",
    "error",
    "calls",
    "iterations",
    "input_tokens",
    "output_tokens",
    "latency_ms",
    "wall_ms",
    "cost",
    "currency",
    "judge_score",
    "judge_accuracy",
    "judge_work",
    "judge_reason",
    "unjudged",
    "scorer_score",
    "unpriced_calls",
    "cache_read_tokens",
    "cache_write_tokens",
];

/// The input in three parts: uncached, cache reads (`cache rd`), cache writes (`cache wr`).
const ROW_HEADER: [&str; 14] = [
    "run",
    "model",
    "status",
    "calls",
    "iter",
    "uncached in",
    "cache rd",
    "cache wr",
    "tok out",
    "latency",
    "wall",
    "cost",
    "judge",
    "scorer",
];

const MEANS_HEADER: [&str; 13] = [
    "model",
    "runs",
    "failed",
    "calls",
    "iter",
    "uncached in",
    "cache rd",
    "cache wr",
    "tok out",
    "latency",
    "wall",
    "cost",
    "judge",
];

fn role_name(role: RunRole) -> &'static str {
    match role {
        RunRole::Reference => "reference",
        RunRole::Candidate => "candidate",
    }
}

fn row_cells(r: &RunRow) -> Vec<String> {
    let run = match r.role {
        RunRole::Reference => "reference".to_owned(),
        RunRole::Candidate => format!("#{}", r.run),
    };
    let status = match &r.error {
        None => "ok".to_owned(),
        Some(e) => format!("failed: {}", short(e, 40)),
    };
    let judge = match (r.judge_score, &r.unjudged) {
        (Some(s), _) => format!(
            "{s}/10 {}",
            short(r.judge_reason.as_deref().unwrap_or(""), 40)
        ),
        (None, Some(why)) => format!("- ({})", short(why, 40)),
        (None, None) => "-".to_owned(),
    };
    vec![
        run,
        r.model.clone(),
        status,
        r.calls.to_string(),
        r.iterations.to_string(),
        r.uncached_input_tokens().to_string(),
        r.cache_read_tokens.to_string(),
        r.cache_write_tokens.to_string(),
        r.output_tokens.to_string(),
        format!("{} ms", r.latency_ms),
        format!("{} ms", r.wall_ms),
        r.cost_text(),
        judge,
        r.scorer_score
            .map_or_else(|| "-".to_owned(), |s| format!("{s:.2}")),
    ]
}

fn means_cells(m: &ModelMeans) -> Vec<String> {
    vec![
        m.model.clone(),
        m.runs.to_string(),
        m.failed.to_string(),
        format!("{:.1}", m.calls),
        format!("{:.1}", m.iterations),
        format!("{:.0}", m.uncached_input_tokens()),
        format!("{:.0}", m.cache_read_tokens),
        format!("{:.0}", m.cache_write_tokens),
        format!("{:.0}", m.output_tokens),
        format!("{:.0} ms", m.latency_ms),
        format!("{:.0} ms", m.wall_ms),
        m.cost_text(),
        m.judge_score
            .map_or_else(|| "-".to_owned(), |s| format!("{s:.1}/10 ({})", m.judged)),
    ]
}

fn means(rows: &[RunRow]) -> Vec<ModelMeans> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&RunRow>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.role == RunRole::Candidate) {
        if !groups.contains_key(&r.model) {
            order.push(r.model.clone());
        }
        groups.entry(r.model.clone()).or_default().push(r);
    }
    order
        .into_iter()
        .map(|model| {
            let all = groups.remove(&model).unwrap_or_default();
            let ok: Vec<&RunRow> = all.iter().copied().filter(|r| r.succeeded).collect();
            let mean = |f: &dyn Fn(&RunRow) -> f64| {
                if ok.is_empty() {
                    0.0
                } else {
                    ok.iter().map(|r| f(r)).sum::<f64>() / ok.len() as f64
                }
            };
            let mut cost: BTreeMap<String, f64> = BTreeMap::new();
            for r in &ok {
                for (cur, v) in &r.cost {
                    *cost.entry(cur.clone()).or_insert(0.0) += v;
                }
            }
            for v in cost.values_mut() {
                *v /= ok.len().max(1) as f64;
            }
            let judged: Vec<f64> = all
                .iter()
                .filter_map(|r| r.judge_score.map(f64::from))
                .collect();
            let scored: Vec<f64> = all.iter().filter_map(|r| r.scorer_score).collect();
            ModelMeans {
                runs: u32::try_from(all.len()).unwrap_or(u32::MAX),
                failed: u32::try_from(all.len() - ok.len()).unwrap_or(u32::MAX),
                calls: mean(&|r| r.calls as f64),
                iterations: mean(&|r| r.iterations as f64),
                input_tokens: mean(&|r| r.input_tokens as f64),
                cache_read_tokens: mean(&|r| r.cache_read_tokens as f64),
                cache_write_tokens: mean(&|r| r.cache_write_tokens as f64),
                output_tokens: mean(&|r| r.output_tokens as f64),
                latency_ms: mean(&|r| r.latency_ms as f64),
                wall_ms: mean(&|r| r.wall_ms as f64),
                cost,
                unpriced_calls: ok.iter().map(|r| r.unpriced_calls).sum(),
                judge_score: average(&judged),
                judged: u32::try_from(judged.len()).unwrap_or(u32::MAX),
                scorer_score: average(&scored),
                model,
            }
        })
        .collect()
}

fn average(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn cost_text(cost: &BTreeMap<String, f64>, unpriced_calls: u64) -> String {
    let known = (!cost.is_empty()).then(|| {
        cost.iter()
            .map(|(cur, v)| format!("{v:.6} {cur}"))
            .collect::<Vec<_>>()
            .join(" + ")
    });
    crate::ops::cost::spend_text(known.as_deref(), unpriced_calls)
}

fn amount(cost: &BTreeMap<String, f64>) -> String {
    cost.values()
        .map(|v| format!("{v}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn opt(v: Option<u8>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn short(text: &str, max: usize) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}

/// Columns padded to their widest cell, separated by two spaces.
fn render(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let width = widths.get(c).copied().unwrap_or(0);
            let _ = write!(line, "{cell:<width$}  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
