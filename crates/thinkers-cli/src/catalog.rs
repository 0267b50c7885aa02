//! `thinkers catalog`: list the catalog's entries by grade and, with `--check`, call each one.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use comfy_table::Table;
use indicatif::{ProgressBar, ProgressStyle};
use thinkers::Runtime;
use thinkers::conversation::Message;
use thinkers::dispatch::DispatchConfig;
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
    /// when any open entry is not. Each entry costs at most one `--timeout` (no retry of a
    /// server that failed or did not answer).
    #[arg(long)]
    check: bool,
    /// With `--check`: how long one entry may take to answer (the whole answer, or a stream's
    /// first event), e.g. `500ms`, `20s`, `2m` (a bare number is seconds).
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    timeout: Duration,
    /// With `--check`: the longest silence between two events of a streamed answer.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    idle_timeout: Duration,
}

/// The timeouts of `catalog --check`.
#[derive(Debug, Clone, Copy)]
struct CheckLimits {
    timeout: Duration,
    idle_timeout: Duration,
}

/// A duration as `500ms`, `20s`, `2m` or a bare number of seconds (decimals allowed).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(at) => t.split_at(at),
        None => (t, "s"),
    };
    let scale = match unit.trim() {
        "ms" => 0.001,
        "s" => 1.0,
        "m" | "min" => 60.0,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (use ms, s or m, e.g. `20s`)"
            ));
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. `500ms`, `20s`, `2m`)"))?;
    let d = Duration::try_from_secs_f64(value * scale)
        .map_err(|e| format!("`{text}` is not a usable duration: {e}"))?;
    if d.is_zero() {
        return Err(format!("`{text}`: a timeout must be longer than zero"));
    }
    Ok(d)
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
        let limits = CheckLimits {
            timeout: args.timeout,
            idle_timeout: args.idle_timeout,
        };
        check(catalog, limits).await?;
    }
    Ok(())
}

/// Calls each open entry once. A check is one bounded wait per entry: the attempt's timeout is
/// also the call's, and no failure is retried (a server that accepts and never answers costs one
/// `--timeout`, not one per retry); a throttled entry reports the throttle.
async fn check(catalog: Catalog, limits: CheckLimits) -> anyhow::Result<()> {
    let (catalog, sim) = simctl::bind(catalog).await?;
    let client = ModelClient::builder()
        .request_timeout(limits.timeout)
        .call_timeout(limits.timeout)
        .stream_idle_timeout(limits.idle_timeout)
        .max_retry_wait(limits.timeout)
        .connect_timeout(limits.timeout.min(thinkers::llm::CONNECT_TIMEOUT))
        .build()?;
    let rt = Runtime::builder(catalog.clone())
        .client(client)
        .config(DispatchConfig {
            max_transient_retries: 0,
            max_throttles: 0,
            max_unreadable_answers: 0,
            ..DispatchConfig::default()
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_with_their_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("3h").is_err());
    }
}
