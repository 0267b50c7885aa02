//! Spending caps (issue 45, item 5): a call holds its worst-case cost on every cap that applies
//! before it is sent; one that would pass a cap is not sent and fails with
//! `Error::SpendCapReached`, naming the cap, what was spent and what it needed. The record's
//! total under a cap never passes it, on one process and on three sharing Redis.

use thinkers::dispatch::SpendCap;
use thinkers::job::{ScopeGuard, doer};
use thinkers::{ErrorKind, Runtime};

use crate::spend_support::{WORST, cap_error, capped, spent};
use crate::support::{call, entry, fault_catalog_toml, fault_sim, model};

#[tokio::test]
async fn a_run_cap_stops_a_runaway_loop_before_the_call_that_would_pass_it() {
    let sim = fault_sim().await;
    let toml = fault_catalog_toml(&sim.openai_base_url(), &sim.base_url(), "THINKERS_SIM_KEY");
    let limit = 0.009;
    let (rt, recorder) = capped(&toml, vec![SpendCap::per_run(limit, "usd")], None).await;
    let e = entry(false, 0);
    let target = e.clone();
    // A loop that would make a thousand calls in one run.
    let err = rt
        .run(doer("runaway", move |cx| {
            let target = target.clone();
            async move {
                for _ in 0..1_000 {
                    cx.submit(call(&target)).await?;
                }
                Ok(())
            }
        }))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SpendCapReached, "{err}");
    let (cap, cap_limit, was_spent, needed) = cap_error(&err);
    assert!(cap.starts_with("run "), "{cap}");
    assert!((cap_limit - limit).abs() < 1e-12);
    assert!(was_spent + needed > limit && needed > WORST * 0.9, "{err}");
    let sent = sim.stats().model(&model(false, 0)).requests;
    let recorded = spent(&recorder, &e);
    assert!(sent > 1 && sent < 1_000, "{sent} calls sent");
    assert!(
        recorded <= limit,
        "recorded {recorded} under a cap of {limit}"
    );
    assert!(
        (recorded - was_spent).abs() < 1e-6,
        "{recorded} vs {was_spent}"
    );
    // The message names the cap and the figures.
    let text = err.to_string();
    assert!(text.contains("run ") && text.contains("USD"), "{text}");
    // Another run starts from nothing.
    rt.run(call(&e)).await.unwrap();
}

#[tokio::test]
async fn a_call_worse_than_a_day_cap_is_never_sent() {
    let sim = fault_sim().await;
    let toml = fault_catalog_toml(&sim.openai_base_url(), &sim.base_url(), "THINKERS_SIM_KEY");
    let (rt, _) = capped(&toml, vec![SpendCap::per_day(0.005, "USD")], None).await;
    let err = rt.run(call(&entry(true, 1))).await.unwrap_err();
    let (cap, _, was_spent, needed) = cap_error(&err);
    assert!(cap.starts_with("day "), "{cap}");
    assert_eq!(was_spent, 0.0);
    assert!(needed > 0.005, "{needed}");
    assert_eq!(sim.stats().model(&model(true, 1)).requests, 0);
}

#[tokio::test]
async fn an_axis_cap_spans_the_runs_of_one_value_and_no_other() {
    let sim = fault_sim().await;
    let toml = fault_catalog_toml(&sim.openai_base_url(), &sim.base_url(), "THINKERS_SIM_KEY");
    let limit = 0.009;
    let (rt, recorder) = capped(
        &toml,
        vec![SpendCap::per_axis("tenant", limit, "USD")],
        None,
    )
    .await;
    let e = entry(false, 2);
    let acme = ScopeGuard::unbound().with_axis("tenant", "acme");
    let mut refused = None;
    for i in 0..1_000 {
        match rt.dispatcher().submit_scoped(call(&e), acme.clone()).await {
            Ok(_) => {}
            Err(err) => {
                refused = Some((i, err));
                break;
            }
        }
    }
    let (runs, err) = refused.expect("the tenant's cap stops its runs");
    assert!(runs > 1, "{runs} runs before the cap");
    assert_eq!(cap_error(&err).0, "tenant=acme");
    assert!(spent(&recorder, &e) <= limit);
    // Another tenant, and a run bound to none, are not under acme's cap.
    let other = ScopeGuard::unbound().with_axis("tenant", "globex");
    rt.dispatcher()
        .submit_scoped(call(&e), other)
        .await
        .unwrap();
    rt.run(call(&e)).await.unwrap();
}

#[tokio::test]
async fn a_cap_refuses_an_unpriced_entry_and_a_negative_amount() {
    let sim = fault_sim().await;
    let toml = fault_catalog_toml(&sim.openai_base_url(), &sim.base_url(), "THINKERS_SIM_KEY")
        .replace("price_in = 1.0\nprice_out = 2.0\ncurrency = \"USD\"\n", "");
    let (rt, _) = capped(&toml, vec![SpendCap::per_run(1.0, "USD")], None).await;
    let err = rt.run(call(&entry(false, 3))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unadmittable, "{err}");
    assert!(err.to_string().contains("has no prices"), "{err}");
    assert_eq!(sim.stats().model(&model(false, 3)).requests, 0);
    let catalog = thinkers::model::Catalog::from_toml_str(&toml, "spend.toml").unwrap();
    let built = Runtime::builder(catalog)
        .spend_cap(SpendCap::per_day(-1.0, "USD"))
        .build()
        .await;
    assert!(matches!(built, Err(e) if e.kind() == ErrorKind::InvalidInput));
}

#[tokio::test]
async fn a_catalog_cap_on_one_provider_counts_its_calls_and_no_other() {
    let sim = fault_sim().await;
    let limit = 0.009;
    // The Anthropic provider is capped per run in the catalog; the OpenAI one is not.
    let toml = fault_catalog_toml(&sim.openai_base_url(), &sim.base_url(), "THINKERS_SIM_KEY")
        .replacen(
            "dialect = \"anthropic\"\n",
            &format!(
                "dialect = \"anthropic\"\nspend = {{ currency = \"USD\", per_run = {limit} }}\n"
            ),
            1,
        );
    let (rt, recorder) = capped(&toml, Vec::new(), None).await;
    let (capped_entry, free_entry) = (entry(true, 5), entry(false, 5));
    let (a, b) = (capped_entry.clone(), free_entry.clone());
    let err = rt
        .run(doer("two providers", move |cx| {
            let (a, b) = (a.clone(), b.clone());
            async move {
                // The uncapped provider's calls go on past the cap's amount...
                for _ in 0..6 {
                    cx.submit(call(&b)).await?;
                }
                // ... and the capped one's stop before passing it.
                for _ in 0..1_000 {
                    cx.submit(call(&a)).await?;
                }
                Ok(())
            }
        }))
        .await
        .unwrap_err();
    let (cap, _, was_spent, _) = cap_error(&err);
    assert!(
        cap.starts_with("run ") && cap.ends_with("on provider `fault-anthropic`"),
        "{cap}"
    );
    let (capped_spent, free_spent) = (
        spent(&recorder, &capped_entry),
        spent(&recorder, &free_entry),
    );
    assert_eq!(sim.stats().model(&model(false, 5)).requests, 6);
    assert!(free_spent > 1e-5, "{free_spent}");
    // What the cap counted is the capped provider's spend alone.
    assert!(
        (was_spent - capped_spent).abs() < 1e-9,
        "{was_spent} vs {capped_spent}"
    );
    assert!(capped_spent <= limit, "{capped_spent}");
    assert!(sim.stats().model(&model(true, 5)).requests > 1);
}
