//! `thinkers catalog`: list the catalog's entries by grade and, with `--check`, call each one.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use comfy_table::Table;
use indicatif::{ProgressBar, ProgressStyle};
use thinkers::Runtime;
use thinkers::conversation::Message;
use thinkers::llm::{ChatRequest, LlmCall, ModelClient};
use thinkers::model::{Catalog, OutputSize};

use crate::simctl;

/// Options of `thinkers catalog`.
#[derive(Debug, clap::Args)]
pub(crate) struct CatalogArgs {
    /// A catalog file; the bundled catalog (served by the simulated provider) when omitted.
    #[arg(long, env = "THINKERS_CATALOG")]
    catalog: Option<PathBuf>,
    /// Send each open entry a tiny request and report which are callable; the command fails
    /// when any open entry is not.
    #[arg(long)]
    check: bool,
}

pub(crate) async fn run(args: CatalogArgs) -> anyhow::Result<()> {
    let catalog = simctl::load_catalog(args.catalog.as_deref())?;
    let mut table = Table::new();
    table.set_header([
        "grade",
        "id",
        "dialect",
        "model",
        "context",
        "ceiling",
        "in/out per M",
        "tpm",
        "tools",
        "thinking",
        "open",
    ]);
    for (grade, entries) in catalog.entries_by_grade() {
        for e in entries {
            let dialect = catalog
                .provider(e.provider())
                .map(|p| p.dialect.as_str().to_owned())
                .unwrap_or_default();
            let prices = e.pricing().map_or_else(
                || "unknown".to_owned(),
                |p| format!("{:.2}/{:.2} {}", p.input, p.output, p.currency),
            );
            table.add_row([
                grade.as_str().to_owned(),
                e.id().to_owned(),
                dialect,
                e.model().to_owned(),
                e.context_window().to_string(),
                e.output_ceiling().to_string(),
                prices,
                e.tpm().map_or_else(|| "-".to_owned(), |t| t.to_string()),
                if e.native_tools() { "native" } else { "text" }.to_owned(),
                if e.thinking() { "yes" } else { "no" }.to_owned(),
                if e.is_open() { "open" } else { "closed" }.to_owned(),
            ]);
        }
    }
    println!("{table}");
    if args.check {
        check(catalog).await?;
    }
    Ok(())
}

async fn check(catalog: Catalog) -> anyhow::Result<()> {
    let (catalog, sim) = simctl::bind(catalog).await?;
    let client = ModelClient::builder()
        .request_timeout(Duration::from_secs(30))
        .build()?;
    let rt = Runtime::builder(catalog.clone())
        .client(client)
        .build()
        .await?;
    crate::lifecycle::register(&rt);
    let open: Vec<_> = catalog.entries().iter().filter(|e| e.is_open()).collect();
    let bar = ProgressBar::new(open.len() as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut table = Table::new();
    table.set_header(["id", "callable", "detail"]);
    let rt = Arc::new(rt);
    let mut failed = Vec::new();
    for e in open {
        bar.set_message(e.id().to_owned());
        let req = ChatRequest::new("Reply with the word OK.", vec![Message::user_text("Ping.")]);
        let call = LlmCall::new(e.grade(), OutputSize::Verdict, req)
            .pinned(e.id())
            .class("catalog_check");
        match rt.run(call).await {
            Ok(out) => table.add_row([
                e.id().to_owned(),
                "yes".to_owned(),
                format!(
                    "{} ms, {} tokens",
                    out.latency.as_millis(),
                    out.response.usage.input + out.response.usage.output
                ),
            ]),
            Err(err) => {
                failed.push(e.id().to_owned());
                table.add_row([e.id().to_owned(), "NO".to_owned(), err.to_string()])
            }
        };
        bar.inc(1);
    }
    bar.finish_and_clear();
    println!("{table}");
    if let Some(sim) = sim {
        sim.shutdown().await?;
    }
    if !failed.is_empty() {
        anyhow::bail!(
            "{} of {} open entries are not callable: {}",
            failed.len(),
            bar.length().unwrap_or_default(),
            failed.join(", ")
        );
    }
    Ok(())
}
