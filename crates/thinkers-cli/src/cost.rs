//! `thinkers cost`: tokens, calls, latency and spend of recorded model calls, grouped by class,
//! catalog entry or workflow (one row per currency), or summed over one job's subtree.
//!
//! The input tokens are shown in three parts: those neither read from nor written to a prompt
//! cache ("uncached in"), the cache reads and the cache writes. The JSON carries `input_tokens`
//! (all of them), `cache_read_tokens` and `cache_write_tokens`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Args;
use comfy_table::{CellAlignment, Table};
use thinkers::job::JobId;
use thinkers::ops::caps;
use thinkers::ops::cost::{self, CostReport, CostRow, GroupBy};
use thinkers::ops::parse_since;
use thinkers::record::now_ms;
use thinkers_store::{LlmRunFilter, RecordStore, Store};

/// Flags of `thinkers cost`.
#[derive(Debug, Args)]
pub(crate) struct CostArgs {
    /// The database: a SQLite file or a `postgres://` URL.
    #[arg(long, default_value = "thinkers.db", env = "THINKERS_DB")]
    db: PathBuf,
    /// Only calls since then: a duration back from now (30m, 24h, 7d) or an RFC 3339 date.
    #[arg(long)]
    since: Option<String>,
    /// Group rows by job class, catalog entry or workflow (every job of a workflow, sub-thinkers
    /// and tools included, rolls up into it).
    #[arg(long, default_value = "class")]
    by: GroupBy,
    /// Sum the calls of this job and every job below it instead (a job id).
    #[arg(long, value_name = "JOB")]
    under: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// A catalog whose spending caps (`[spend]`, and `spend` on providers and entries) to show
    /// the standing of, with `--max-cost`/`--max-cost-per-day`.
    #[arg(long)]
    catalog: Option<PathBuf>,
    #[command(flatten)]
    caps: crate::caps::CapArgs,
}

/// Open the store `db` names: a `postgres://` URL, or a SQLite file, refusing one that does not
/// exist (opening would create it).
pub(crate) async fn open_store(db: &Path) -> anyhow::Result<Store> {
    let target = db.to_string_lossy();
    let postgres = target.starts_with("postgres://") || target.starts_with("postgresql://");
    if !postgres && !db.exists() {
        bail!(
            "no database at {} (run `thinkers demo` first, or pass --db)",
            db.display()
        );
    }
    thinkers_store::open(&target).await.with_context(|| {
        if postgres {
            "opening the PostgreSQL database".to_owned()
        } else {
            format!("opening {target}")
        }
    })
}

/// The start of the `--since` window, if one was given.
pub(crate) fn since_filter(since: Option<&str>) -> anyhow::Result<Option<i64>> {
    since
        .map(|s| parse_since(s, now_ms()).map_err(|e| anyhow::anyhow!("{e}")))
        .transpose()
}

pub(crate) async fn run(args: CostArgs) -> anyhow::Result<()> {
    let since = since_filter(args.since.as_deref())?;
    let opened = open_store(&args.db).await?;
    let store = opened.records();
    if let Some(job) = &args.under {
        return subtree(store.as_ref(), job, since, args.json).await;
    }
    let mut filter = LlmRunFilter::new();
    if let Some(at) = since {
        filter = filter.since_ms(at);
    }
    let runs = store.llm_runs(filter).await?;
    let report = cost::report(&runs, args.by);
    let standing = cap_standing(&args, store.as_ref(), &runs, since).await?;
    if args.json {
        let mut json = serde_json::to_value(&report)?;
        if let (Some(caps), Some(obj)) = (&standing, json.as_object_mut()) {
            obj.insert("caps".to_owned(), serde_json::to_value(caps)?);
        }
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(());
    }
    if let Some(caps) = &standing {
        print!("{}", render_caps(caps));
    }
    if report.rows.is_empty() {
        println!("no model calls recorded in {}", opened.location());
        return Ok(());
    }
    let labels = if args.by == GroupBy::Workflow {
        let ids: Vec<JobId> = report
            .rows
            .iter()
            .filter_map(|r| JobId::parse(&r.group).ok())
            .collect();
        store
            .job_classes(&ids)
            .await?
            .into_iter()
            .map(|(id, class)| (id.to_string(), class))
            .collect()
    } else {
        HashMap::new()
    };
    print!("{}", render(&report, &labels));
    Ok(())
}

/// Where the caps given (`--catalog`, `--max-cost`, `--max-cost-per-day`) stand by the record;
/// `None` when none was given. Today's calls are read even when `--since` starts later.
async fn cap_standing(
    args: &CostArgs,
    store: &dyn RecordStore,
    runs: &[thinkers::record::LlmRun],
    since: Option<i64>,
) -> anyhow::Result<Option<Vec<caps::CapStanding>>> {
    let catalog = args
        .catalog
        .as_deref()
        .map(|p| thinkers::model::Catalog::load(p).map_err(|e| anyhow::anyhow!("{e}")))
        .transpose()?;
    let mut all = catalog
        .as_ref()
        .map(|c| c.spend_caps().to_vec())
        .unwrap_or_default();
    all.extend(args.caps.caps());
    if all.is_empty() {
        return Ok(None);
    }
    let now = now_ms();
    let today = now - now.rem_euclid(86_400_000);
    let fetched;
    let runs = match since {
        Some(at) if at > today => {
            fetched = store.llm_runs(LlmRunFilter::new().since_ms(today)).await?;
            &fetched[..]
        }
        _ => runs,
    };
    let provider_of = |entry: &str| {
        catalog
            .as_ref()
            .and_then(|c| c.entry(entry).ok())
            .map(|e| e.provider().to_owned())
    };
    Ok(Some(caps::standing(&all, runs, provider_of, now)))
}

/// The caps' standing, one line each.
fn render_caps(caps: &[caps::CapStanding]) -> String {
    let mut out = String::from("Spending caps (recorded costs; calls in flight hold more):\n");
    for c in caps {
        let cur = &c.currency;
        let line = match (c.spent, c.left) {
            (Some(spent), Some(left)) => {
                let which = match (&c.costliest_run, c.runs) {
                    (Some(wf), n) => format!(" (the costliest of {n} runs: {wf})"),
                    (None, _) => String::new(),
                };
                format!(
                    "  {}: {spent:.6} of {} {cur} spent{which}, {left:.6} {cur} left",
                    c.cap, c.limit
                )
            }
            _ => format!(
                "  {}: {} {cur} each; not in the record (it keeps no scope axes)",
                c.cap, c.limit
            ),
        };
        out.push_str(&line);
        if c.unpriced_calls > 0 {
            out.push_str(&format!(" + {} unpriced calls", c.unpriced_calls));
        }
        out.push('\n');
    }
    out
}

/// `--under JOB`: the spend of one job's subtree.
async fn subtree(
    store: &dyn RecordStore,
    job: &str,
    since: Option<i64>,
    json: bool,
) -> anyhow::Result<()> {
    let id = JobId::parse(job).map_err(|e| anyhow::anyhow!("{e}"))?;
    let Some(record) = store.job(id).await? else {
        bail!("job {id} is not recorded in the store");
    };
    let jobs = store.workflow_jobs(record.workflow).await?;
    let mut filter = LlmRunFilter::new().workflow(record.workflow);
    if let Some(at) = since {
        filter = filter.since_ms(at);
    }
    let runs = store.llm_runs(filter).await?;
    let rollup = cost::rollup_by_ancestor(&jobs, &runs, id);
    if json {
        println!("{}", serde_json::to_string_pretty(&rollup)?);
        return Ok(());
    }
    println!(
        "Spend of {} {id} and the {} jobs below it:",
        record.class,
        rollup.jobs.len().saturating_sub(1)
    );
    if rollup.rows.is_empty() {
        println!("no model calls");
        return Ok(());
    }
    let mut table = table(&["currency"]);
    for row in &rollup.rows {
        table.add_row(cells(vec![row.currency.clone()], row));
    }
    println!("{table}");
    Ok(())
}

fn table(leading: &[&str]) -> Table {
    let mut table = Table::new();
    let mut header: Vec<&str> = leading.to_vec();
    header.extend([
        "calls",
        "uncached in",
        "cache read",
        "cache write",
        "out",
        "reasoning",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "cost",
    ]);
    table.set_header(header);
    for column in table.column_iter_mut().skip(leading.len()) {
        column.set_cell_alignment(CellAlignment::Right);
    }
    table
}

fn cells(mut leading: Vec<String>, row: &CostRow) -> Vec<String> {
    leading.extend([
        row.calls.to_string(),
        row.uncached_input_tokens().to_string(),
        row.cache_read_tokens.to_string(),
        row.cache_write_tokens.to_string(),
        row.output_tokens.to_string(),
        row.reasoning_tokens.to_string(),
        row.latency.p50.to_string(),
        row.latency.p95.to_string(),
        row.latency.p99.to_string(),
        row.cost_text(),
    ]);
    leading
}

/// One row per (group, currency), then the totals per currency; `labels` names workflows.
pub(crate) fn render(report: &CostReport, labels: &HashMap<String, String>) -> String {
    let workflow = report.by == GroupBy::Workflow;
    let mut leading = vec![report.by.as_str()];
    if workflow {
        leading.push("root class");
    }
    leading.push("currency");
    let mut table = table(&leading);
    let currency_cell = |row: &CostRow| {
        if row.currency.is_empty() {
            "-".to_owned()
        } else {
            row.currency.clone()
        }
    };
    for row in &report.rows {
        let mut lead = vec![row.group.clone()];
        if workflow {
            lead.push(labels.get(&row.group).cloned().unwrap_or_default());
        }
        lead.push(currency_cell(row));
        table.add_row(cells(lead, row));
    }
    for row in &report.totals {
        let mut lead = vec!["TOTAL".to_owned()];
        if workflow {
            lead.push(String::new());
        }
        lead.push(currency_cell(row));
        table.add_row(cells(lead, row));
    }
    let mut out = format!(
        "Model calls by {} (amounts in different currencies are never added):\n{table}\n",
        report.by
    );
    out.push_str(&render_retries(report));
    out
}

/// What was paid again, by cause; throttled and failed attempts are billed nothing.
fn render_retries(report: &CostReport) -> String {
    let mut out = String::from("Paid again:");
    if report.retries.is_empty() {
        out.push_str(" nothing");
    }
    for row in &report.retries {
        let what = match row.group.as_str() {
            "truncation" => "escalated after a truncated answer",
            _ => "corrections of an answer that could not be used",
        };
        let currency = if row.currency.is_empty() {
            String::new()
        } else {
            format!(" {}", row.currency)
        };
        out.push_str(&format!(
            "\n  {} calls {what}: {}{currency}",
            row.calls,
            row.cost_text()
        ));
    }
    out.push_str(
        "\n(throttled attempts and attempts that failed without an answer are not billed)\n",
    );
    out
}
