//! Service processes sharing one limit through Redis.

use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use serde_json::json;
use thinkers_sim::Sim;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_service_processes_share_one_tpm_limit_through_redis() -> Result<()> {
    let _serial = ONE_AT_A_TIME.lock().await;
    let Some(db) = pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let redis = std::env::var("THINKERS_TEST_REDIS_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "redis://127.0.0.1:6379".to_owned());
    thinkers_redis::RedisBudgets::connect(&redis)
        .await
        .with_context(|| format!("Redis at {redis}"))?;
    // Workflows wait for admission far longer than 3 s here; the server may let them.
    let Some(restate) = RestateServer::start_with("2m").await? else {
        return Ok(());
    };
    const TPM: u64 = 150_000;
    const WINDOW: Duration = Duration::from_secs(60);
    let original = "tpm = 2000000";
    ensure!(
        BUNDLED_TOML.contains(original),
        "the bundled catalog changed"
    );
    // The first entry of the bundled catalog is sim-small-a.
    let toml = BUNDLED_TOML.replacen(original, &format!("tpm = {TPM}"), 1);
    let dir = tempfile::tempdir()?;
    let catalog = dir.path().join("catalog.toml");
    std::fs::write(&catalog, &toml)?;
    let mut config = SimConfig::from_catalog_toml(&toml)?.calm();
    let model = config
        .models
        .iter_mut()
        .find(|m| m.name == ENTRY)
        .context("sim-small-a")?;
    assert_eq!(model.tpm, Some(TPM));
    model
        .profile
        .get_or_insert_with(thinkers_sim::Profile::default)
        .latency_ms = [20, 60];
    let sim = Sim::start(config).await?;
    let url = sim.base_url();
    let prefix = support::cli::unique("thinkers-test-budget");
    let catalog = catalog.to_string_lossy().into_owned();
    let addr = service_addr()?;
    let mut services = Vec::new();
    for w in 0..3 {
        services.push(
            spawn_service(
                &db,
                &addr,
                &url,
                &format!("tpm-{w}"),
                &[
                    "--catalog",
                    &catalog,
                    "--redis",
                    &redis,
                    "--redis-prefix",
                    &prefix,
                ],
            )
            .await?,
        );
    }
    restate.register(&addr).await?;
    // More work than one window admits: ~110 tokens per call settle, so ~1,400 calls fill it
    // (48 × 50 = 2,400 calls).
    let store = thinkers_store::PgStore::open(&db).await?;
    let record = thinkers_workflows::Workflows::new(&store);
    let ingress = thinkers_workflows::restate::RestateIngress::new(&restate.ingress);
    // Every running invocation is journal traffic for the server, and 48 keep the budget busy. `THINKERS_RESTATE_WORKFLOWS` runs
    // more of them, each shorter (the same 2,400 calls), to measure utilisation at that load.
    let workflows: usize = std::env::var("THINKERS_RESTATE_WORKFLOWS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(48);
    let steps = (2_400 / workflows).max(10);
    let submissions = futures::stream::iter(0..workflows).map(|i| {
        let input = json!({"topic": format!("budget {i}"), "steps": steps, "entry": ENTRY});
        ingress.submit_unchecked(&record, "chain", input)
    });
    let ids: Vec<_> = submissions.buffer_unordered(16).collect().await;
    ensure!(ids.iter().all(Result::is_ok), "every submission was taken");
    wait_for("the first request", Duration::from_secs(30), || {
        std::future::ready(Ok(sim.stats().model(ENTRY).requests > 0))
    })
    .await?;
    // The window opens once all 240 are running (each first sets its row `running`).
    wait_for("every workflow to start", Duration::from_secs(60), || {
        count(
            &db,
            "SELECT COUNT(*) FROM workflows WHERE status = 'queued'",
        )
        .map(|n| Ok(n? == 0))
    })
    .await?;
    let t0 = std::time::Instant::now();
    let start = sim.stats().model(ENTRY);
    tokio::time::sleep(WINDOW.saturating_sub(t0.elapsed())).await;
    let end = sim.stats().model(ENTRY);
    let took_part = count(
        &db,
        "SELECT COUNT(DISTINCT worker) FROM workflows WHERE worker IS NOT NULL",
    )
    .await?;
    for mut s in services {
        s.start_kill()?;
        s.wait().await?;
    }
    let used = (end.input_tokens + end.output_tokens) - (start.input_tokens + start.output_tokens);
    let utilisation = used as f64 / TPM as f64;
    eprintln!(
        "3 Restate service processes over one {TPM} TPM entry, {workflows} workflows of {steps} \
         calls: {} requests, {used} tokens in the window ({:.1}% of the limit), {} 429s, \
         {took_part} processes ran workflows",
        end.requests,
        utilisation * 100.0,
        end.rate_limited
    );
    assert_eq!(end.rate_limited, 0, "the sim served no 429");
    assert_eq!(sim.stats().totals.rate_limited, 0);
    assert!(used <= TPM, "never above the limit: {used} tokens");
    assert!(
        utilisation >= 0.85,
        "utilisation {:.1}%",
        utilisation * 100.0
    );
    assert_eq!(took_part, 3, "every service process ran workflows");
    Ok(())
}
