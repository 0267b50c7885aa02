//! `thinkers sizing`: the output size each job class should declare, from its recorded model
//! calls.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use comfy_table::Table;
use thinkers::model::Catalog;
use thinkers::ops::sizing::{self, SizingReport};
use thinkers_store::LlmRunFilter;

use crate::cost::{open_store, since_filter};

/// Flags of `thinkers sizing`.
#[derive(Debug, Args)]
pub(crate) struct SizingArgs {
    /// The database: a SQLite file or a `postgres://` URL.
    #[arg(long, default_value = "thinkers.db", env = "THINKERS_DB")]
    db: PathBuf,
    /// A catalog whose entries translate rungs to tokens (added to the bundled catalog), so
    /// budgets capped at an entry's ceiling are recognised.
    #[arg(long)]
    catalog: Option<PathBuf>,
    /// Only calls since then: a duration back from now (30m, 24h, 7d) or an RFC 3339 date.
    #[arg(long)]
    since: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(args: SizingArgs) -> anyhow::Result<()> {
    let mut catalog = Catalog::bundled();
    if let Some(path) = &args.catalog {
        let user = Catalog::load(path).with_context(|| format!("loading {}", path.display()))?;
        catalog.merge(user)?;
    }
    let mut filter = LlmRunFilter::new();
    if let Some(since) = since_filter(args.since.as_deref())? {
        filter = filter.since_ms(since);
    }
    let store = open_store(&args.db).await?;
    let rows = store.records().llm_runs(filter).await?;
    let report = sizing::report_with_catalog(&rows, &catalog);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if report.classes.is_empty() {
        println!("no model calls recorded in {}", store.location());
    } else {
        print!("{}", render(&report));
    }
    Ok(())
}

/// The report as a table followed by one line per class whose calls hit the output budget.
fn render(report: &SizingReport) -> String {
    let mut table = Table::new();
    table.set_header([
        "class",
        "calls",
        "max out",
        "p95 out",
        "declared",
        "recommended",
        "change",
        "truncated",
        "escalated",
    ]);
    for c in &report.classes {
        table.add_row([
            c.class.clone(),
            c.calls.to_string(),
            c.max_output.to_string(),
            c.p95_output.to_string(),
            c.declared.map_or_else(|| "-".to_owned(), |d| d.to_string()),
            c.recommended.to_string(),
            c.change.to_string(),
            if c.truncated() {
                format!("YES ({})", c.truncations)
            } else {
                "-".to_owned()
            },
            c.escalations.to_string(),
        ]);
    }
    let mut out = format!(
        "Sizing from {} model calls over {} job classes:\n{table}\n",
        report.calls(),
        report.classes.len()
    );
    for c in report.classes.iter().filter(|c| c.truncated()) {
        out.push_str(&format!(
            "! {}: {} of {} calls stopped at the output budget (max_tokens); move its rung up to \
             {}.\n",
            c.class, c.truncations, c.calls, c.recommended
        ));
    }
    for c in report.classes.iter().filter(|c| c.escalations > 0) {
        out.push_str(&format!(
            "! {}: the truncation escalation re-ran {} calls at the model's ceiling.\n",
            c.class, c.escalations
        ));
    }
    out
}
