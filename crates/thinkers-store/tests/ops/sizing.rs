//! Sizing from history on a seeded store: recommendations, declared rungs, truncation flags and
//! escalation counts.

use anyhow::Result;
use thinkers::model::{Catalog, OutputSize};
use thinkers::ops::parse_since;
use thinkers::ops::sizing::{self, Declared, SizeChange};
use thinkers::record::now_ms;
use thinkers_store::LlmRunFilter;

use crate::support::{TempStore, call};

const DAY_MS: i64 = 86_400_000;

#[tokio::test]
async fn sizing_recommends_from_the_stored_history() -> Result<()> {
    let db = TempStore::new().await?;
    let now = now_ms();
    let mut rows = Vec::new();
    // A label declared at Standard that never needs more than a Verdict.
    for n in 0..20 {
        rows.push(call(
            "classify_ticket",
            "sim-small-a",
            40 + n * 15,
            16_384,
            now - n as i64,
        ));
    }
    // An extraction declared at Compact that keeps hitting the budget: three truncations, two
    // of them escalated to the entry's ceiling, where the real answer size shows.
    for n in 0..10 {
        rows.push(call(
            "extract_claims",
            "sim-medium-a",
            1_500 + n * 200,
            4_096,
            now - 100,
        ));
    }
    for _ in 0..3 {
        let mut cut = call("extract_claims", "sim-medium-a", 4_096, 4_096, now - 90);
        cut.stop_reason = "max_tokens".to_owned();
        rows.push(cut);
    }
    for output in [5_200, 6_100] {
        let mut escalated = call("extract_claims", "sim-medium-a", output, 16_384, now - 80);
        escalated.escalated = true;
        rows.push(escalated);
    }
    // A summary declared at Standard on an entry whose ceiling (8,192) caps it.
    for n in 0..8 {
        rows.push(call(
            "summarize_section",
            "sim-small-b",
            2_000 + n * 200,
            8_192,
            now - 50,
        ));
    }
    // An old class, outside a 7-day window.
    rows.push(call(
        "retired_class",
        "sim-small-a",
        100,
        1_024,
        now - 30 * DAY_MS,
    ));
    db.record(rows).await?;

    let stored = db.store.llm_runs(&LlmRunFilter::new()).await?;
    assert_eq!(stored.len(), 44);
    let report = sizing::report_with_catalog(&stored, &Catalog::bundled());
    let names: Vec<&str> = report.classes.iter().map(|c| c.class.as_str()).collect();
    assert_eq!(
        names,
        [
            "classify_ticket",
            "extract_claims",
            "retired_class",
            "summarize_section"
        ]
    );

    let label = report.class("classify_ticket").unwrap();
    assert_eq!(
        (label.calls, label.max_output, label.p95_output),
        (20, 325, 310)
    );
    assert_eq!(
        label.declared,
        Some(Declared::Rung {
            size: OutputSize::Standard
        })
    );
    assert_eq!(label.recommended, OutputSize::Verdict);
    assert_eq!(label.change, SizeChange::Lower);
    assert!(!label.truncated());

    let extract = report.class("extract_claims").unwrap();
    assert_eq!(extract.calls, 15);
    assert_eq!((extract.truncations, extract.escalations), (3, 2));
    assert!(extract.truncated());
    assert_eq!(extract.max_output, 6_100);
    assert_eq!(extract.declared_budget, Some(4_096));
    assert_eq!(
        extract.declared,
        Some(Declared::Rung {
            size: OutputSize::Compact
        })
    );
    assert_eq!(extract.recommended, OutputSize::Standard);
    assert_eq!(extract.change, SizeChange::Raise);

    let summary = report.class("summarize_section").unwrap();
    assert_eq!(
        summary.declared,
        Some(Declared::Capped {
            at_least: OutputSize::Standard,
            ceiling: 8_192
        })
    );
    assert_eq!(summary.recommended, OutputSize::Compact);
    assert_eq!(summary.entries, ["sim-small-b"]);

    // Without a catalog the capped budget reads as a raw count.
    let plain = sizing::report(&stored);
    assert_eq!(
        plain.class("summarize_section").unwrap().declared,
        Some(Declared::Tokens { tokens: 8_192 })
    );

    // A window drops the old class.
    let since = parse_since("7d", now)?;
    let recent = db
        .store
        .llm_runs(&LlmRunFilter::new().since_ms(since))
        .await?;
    let recent = sizing::report(&recent);
    assert!(recent.class("retired_class").is_none());
    assert_eq!(recent.calls(), 43);
    Ok(())
}
