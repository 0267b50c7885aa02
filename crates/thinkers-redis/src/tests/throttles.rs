//! What a stated limit and a throttle teach the shared axes, for every process.

use anyhow::{Context as _, Result, bail};
use tokio::time::Instant;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stated_limit_and_a_throttle_pace_every_process() -> Result<()> {
    let limits = Limits {
        requests: Some(Rate::per_minute(600)),
        ..Limits::default()
    };
    let mut stores = stores(2, &prefix(), DEFAULT_LEASE_TTL, limits).await?;
    let (Some(b), Some(a)) = (stores.pop(), stores.pop()) else {
        return Ok(());
    };
    // The provider states 60 per minute (the catalog said 600): one request a second for both.
    a.observe(
        "entry",
        RateObservation {
            requests: AxisObservation {
                limit: Some(60),
                ..AxisObservation::default()
            },
            ..RateObservation::default()
        },
    );
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        // Grants go through while the observation is on its way; then one waits ~1 s.
        match raw(&b, &ask("entry", 0, 0)).await? {
            Reservation::Wait(Some(d)) if d > Duration::from_millis(500) => {
                assert!(d <= Duration::from_secs(1), "{d:?}");
                break;
            }
            _ if Instant::now() > until => {
                bail!("the stated limit never reached the other process")
            }
            _ => {}
        }
    }
    // A throttle of 300 ms holds both for that long and no longer.
    a.pause("entry", Duration::from_millis(300));
    tokio::time::sleep(Duration::from_millis(100)).await;
    match raw(&b, &ask("entry", 0, 0)).await? {
        Reservation::Wait(Some(d)) => assert!(d <= Duration::from_millis(1_000), "{d:?}"),
        other => bail!("expected a wait, got {other:?}"),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttle_on_a_budget_without_figures_paces_every_process_at_the_tokens_counted()
-> Result<()> {
    // No figure anywhere (Gemini states none). Each call reserves 600 tokens and uses 120; five
    // finished and five are still out when the provider refuses and asks for 1 s. Two of the
    // five come back refused too: its second held 5 x 120 + 3 x 600 = 2,400 tokens. Every
    // process then paces at that rate in tokens (a call's expected use of 120 every ~55 ms), not
    // at the ten requests a second that went through.
    let prefix = prefix();
    let mut stores = stores(2, &prefix, DEFAULT_LEASE_TTL, Limits::default()).await?;
    let (Some(b), Some(a)) = (stores.pop(), stores.pop()) else {
        return Ok(());
    };
    let used = SeatUse {
        input: 100,
        output: 20,
    };
    let call = ask("entry", 600, 0);
    for _ in 0..5 {
        let l = reserve(&a, &call, Duration::from_secs(2))
            .await?
            .context("an unpaced budget grants")?;
        a.settle(&l, used);
        a.release(&l);
    }
    let mut out = Vec::new();
    for _ in 0..5 {
        out.push(
            reserve(&a, &call, Duration::from_secs(2))
                .await?
                .context("an unpaced budget grants")?,
        );
    }
    // The settles and the pause are sent on spawned tasks: let those of the finished calls land
    // before the pause, and the pause before the late settles.
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.pause("entry", Duration::from_secs(1));
    tokio::time::sleep(Duration::from_millis(100)).await;
    for (i, l) in out.iter().enumerate() {
        a.settle(l, if i < 2 { SeatUse::NONE } else { used });
        a.release(l);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Per ms, over the ~1.1 s from the first grant to the pause's end.
    let learned = learned_rate(&prefix, "tok", None).await?;
    assert!((1.8..=2.4).contains(&learned), "{learned} tokens per ms");
    tokio::time::sleep(Duration::from_millis(900)).await;
    reserve(&b, &call, Duration::from_secs(2))
        .await?
        .context("the other process is granted once the pause ends")?;
    match raw(&b, &call).await? {
        Reservation::Wait(Some(d)) => {
            assert!(d <= Duration::from_millis(80), "{d:?}: paced as requests");
        }
        other => bail!("expected a paced wait, got {other:?}"),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_throttle_counts_what_went_through_from_the_end_of_the_first() -> Result<()> {
    // 100 requests a second in the catalog (Gemini states no limit to trust instead).
    let prefix = prefix();
    let limits = Limits {
        requests: Some(Rate::per_minute(6_000)),
        ..Limits::default()
    };
    let Some(a) = stores(1, &prefix, DEFAULT_LEASE_TTL, limits).await?.pop() else {
        return Ok(());
    };
    let send = |span: Duration| {
        let a = a.clone();
        async move {
            let call = ask("entry", 0, 0);
            let (mut n, until) = (0u32, Instant::now() + span);
            while Instant::now() < until {
                if reserve(&a, &call, span).await?.is_some() {
                    n += 1;
                }
            }
            anyhow::Ok(n)
        }
    };
    // Refused after 0.5 s for 0.5 s more: the first rate learned is what went through in 1 s.
    send(Duration::from_millis(500)).await?;
    a.pause("entry", Duration::from_millis(500));
    let first = learned_rate(&prefix, "req", None).await? * 1000.0;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Sending again once the pause ended, refused after 0.3 s for 0.2 s: what went through is
    // counted over those 0.5 s, not from the first refusal (nothing went while it held).
    let resumed = Instant::now();
    let sent = f64::from(send(Duration::from_millis(300)).await?);
    a.pause("entry", Duration::from_millis(200));
    let span = resumed.elapsed().as_secs_f64() + 0.2;
    let second = learned_rate(&prefix, "req", Some(first / 1000.0)).await? * 1000.0;
    // It paces a margin below what went through.
    let through = sent / span * thinkers::dispatch::bucket::THROTTLE_DECREASE;
    assert!(
        (second / through - 1.0).abs() < 0.25,
        "learned {second} a second, {sent} went through in {span} s (first {first})"
    );
    Ok(())
}

/// The rate a throttle taught the `axis` (`tok`, `req`) of budget `entry` under `prefix`, per
/// ms as the scripts keep it, once the pause that teaches it (one that changed it from `after`)
/// has reached the shared axis.
async fn learned_rate(prefix: &str, axis: &str, after: Option<f64>) -> Result<f64> {
    let Some(url) = redis_url().await? else {
        bail!("no Redis");
    };
    let mut conn = redis::Client::open(url.as_str())?
        .get_multiplexed_async_connection()
        .await?;
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let lr: Option<f64> = redis::cmd("HGET")
            .arg(format!("{prefix}:{{entry}}:{axis}:b"))
            .arg("lr")
            .query_async(&mut conn)
            .await?;
        if let Some(lr) = lr.filter(|lr| after.is_none_or(|a| (lr - a).abs() > 1e-9)) {
            return Ok(lr);
        }
        if Instant::now() > until {
            bail!("the throttle never taught the shared {axis} axis a rate");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
