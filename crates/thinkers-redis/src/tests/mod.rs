//! Tests against the real Redis: several stores (separate connections, as separate processes
//! would have) sharing one budget never exceed its limits; a dead holder's lease expires.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use tokio::time::Instant;

use super::*;
use crate::test_services::redis_url;
use thinkers::dispatch::{AxisObservation, Rate};
use thinkers::job::SeatUse;

/// A fresh key prefix, so tests running at once never share budgets.
fn prefix() -> String {
    format!("thinkers-test:{}", uuid::Uuid::new_v4().simple())
}

fn ask(budget: &str, tokens: u64, slots: u32) -> Ask {
    Ask {
        budget: budget.into(),
        tokens,
        input_tokens: tokens,
        output_tokens: 0,
        requests: 1,
        slots,
    }
}

async fn stores(
    n: usize,
    prefix: &str,
    ttl: Duration,
    limits: Limits,
) -> Result<Vec<RedisBudgets>> {
    let Some(url) = redis_url().await? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let s = RedisBudgets::connect_with(&url, prefix, ttl).await?;
        s.configure("entry", limits);
        out.push(s);
    }
    Ok(out)
}

/// The provider states a minute's room on the output axis of `store`'s budget `entry` (so its
/// window is a minute); returns once the shared axis holds it.
async fn states_a_minutes_output_room(store: &RedisBudgets, prefix: &str) -> Result<()> {
    let said = AxisObservation {
        remaining: Some(6_000),
        reset: None,
        limit: None,
        reset_slack: Duration::ZERO,
    };
    states(
        store,
        prefix,
        "out:b",
        RateObservation {
            output_tokens: said,
            ..RateObservation::default()
        },
    )
    .await
}

/// `store` observes `obs` for budget `entry`; returns once the shared axis `part` holds a room.
async fn states(
    store: &RedisBudgets,
    prefix: &str,
    part: &str,
    obs: RateObservation,
) -> Result<()> {
    store.observe("entry", obs);
    let Some(url) = redis_url().await? else {
        return Ok(());
    };
    let mut conn = redis::Client::open(url.as_str())?
        .get_multiplexed_async_connection()
        .await?;
    let key = format!("{prefix}:{{entry}}:{part}");
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let wide: Option<String> = redis::cmd("HGET")
            .arg(&key)
            .arg("wide")
            .query_async(&mut conn)
            .await?;
        if wide.is_some() {
            return Ok(());
        }
        if Instant::now() > until {
            bail!("the stated room never reached the shared axis");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The store's decision with the whole wait the shared state names (a waiter asks again sooner:
/// `RATE_POLL`).
async fn raw(store: &RedisBudgets, ask: &Ask) -> Result<Reservation> {
    Ok(store.inner.reserve(ask).await?.0)
}

/// Reserve until granted (waiting as told), giving up after `deadline`.
async fn reserve(store: &RedisBudgets, ask: &Ask, deadline: Duration) -> Result<Option<Lease>> {
    let until = Instant::now() + deadline;
    loop {
        match store.try_reserve(ask).await? {
            Reservation::Granted(lease) => return Ok(Some(lease)),
            Reservation::Never(why) => bail!("never: {why}"),
            Reservation::Wait(d) => {
                if Instant::now() >= until {
                    return Ok(None);
                }
                let d = d.unwrap_or(Duration::from_millis(10));
                tokio::time::sleep(d.min(Duration::from_millis(50))).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_never_exceed_a_shared_budget() -> Result<()> {
    let per = Duration::from_secs(1);
    let limits = Limits {
        tokens: Some(Rate {
            amount: 1_000,
            per,
            burst: None,
        }),
        input_tokens: None,
        output_tokens: None,
        requests: Some(Rate {
            amount: 30,
            per,
            burst: None,
        }),
        concurrency: Some(3),
    };
    let stores = stores(4, &prefix(), Duration::from_secs(5), limits).await?;
    if stores.is_empty() {
        return Ok(());
    }
    let run_for = Duration::from_millis(3_500);
    let start = Instant::now();
    let in_flight = Arc::new(AtomicU32::new(0));
    let max_in_flight = Arc::new(AtomicU32::new(0));
    let mut tasks = Vec::new();
    for (s, store) in stores.iter().enumerate() {
        for w in 0..3u64 {
            let store = store.clone();
            let (in_flight, max_in_flight) = (Arc::clone(&in_flight), Arc::clone(&max_in_flight));
            tasks.push(tokio::spawn(async move {
                let mut grants: Vec<(Instant, u64)> = Vec::new();
                let mut i = 0u64;
                while start.elapsed() < run_for {
                    i += 1;
                    let tokens = 20 + (i * 37 + s as u64 * 11 + w * 7) % 120;
                    let Some(lease) = reserve(&store, &ask("entry", tokens, 1), run_for).await?
                    else {
                        break;
                    };
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    max_in_flight.fetch_max(now, Ordering::SeqCst);
                    grants.push((Instant::now(), tokens));
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    store.release(&lease);
                }
                anyhow::Ok(grants)
            }));
        }
    }
    let mut grants = Vec::new();
    for t in tasks {
        grants.extend(t.await??);
    }
    grants.sort_by_key(|g| g.0);
    assert!(
        max_in_flight.load(Ordering::SeqCst) <= 3,
        "concurrency exceeded: {}",
        max_in_flight.load(Ordering::SeqCst)
    );
    // Every window of the period (less a margin for the round trip between the server's clock
    // and ours) holds at most what the buckets allow over it: the default bucket of a figure per
    // second holds 4 % of it and refills at the rest, and an ask larger than the bucket may take
    // a full one into debt, so a window holds at most the larger of the bucket and the largest
    // ask, plus the refill over a period.
    let window = per - Duration::from_millis(50);
    let (mut worst_tokens, mut worst_requests) = (0, 0);
    for (i, &(at, _)) in grants.iter().enumerate() {
        let inside = grants[i..].iter().take_while(|g| g.0 < at + window);
        let (tokens, requests) = inside.fold((0, 0), |(t, r), g| (t + g.1, r + 1));
        worst_tokens = worst_tokens.max(tokens);
        worst_requests = worst_requests.max(requests);
    }
    let largest = grants.iter().map(|g| g.1).max().unwrap_or(0);
    let token_bound = largest.max(40) + 960;
    assert!(
        worst_tokens <= token_bound,
        "token window held {worst_tokens} > {token_bound}"
    );
    assert!(worst_requests <= 30, "request window held {worst_requests}");
    // The budget was really used, not trivially respected: over three full periods the shared
    // budget granted most of what it allows.
    let total: u64 = grants.iter().map(|g| g.1).sum();
    assert!(total >= 2_400, "only {total} tokens granted in {run_for:?}");
    eprintln!(
        "4 stores x 3 workers: {} grants, {total} tokens; worst window {worst_tokens} tokens, \
         {worst_requests} requests",
        grants.len()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_holders_lease_expires_and_a_live_one_does_not() -> Result<()> {
    let limits = Limits {
        concurrency: Some(1),
        ..Limits::default()
    };
    let ttl = Duration::from_millis(300);
    let mut stores = stores(2, &prefix(), ttl, limits).await?;
    let (Some(b), Some(a)) = (stores.pop(), stores.pop()) else {
        return Ok(());
    };
    let one = ask("entry", 0, 1);
    let lease = reserve(&a, &one, Duration::from_secs(1))
        .await?
        .context("the first holder is granted")?;
    // While its holder heartbeats, the lease outlives several lease times.
    tokio::time::sleep(ttl * 4).await;
    assert!(
        matches!(b.try_reserve(&one).await?, Reservation::Wait(_)),
        "a heartbeating holder keeps its slot"
    );
    // The holder dies without releasing: its heartbeats stop, and the slot comes free.
    drop(a);
    let freed = reserve(&b, &one, ttl * 10).await?;
    assert!(freed.is_some(), "the dead holder's slot was never freed");
    // A live release frees a slot for the other process too.
    drop(lease);
    let held = freed.context("granted")?;
    b.release(&held);
    assert!(reserve(&b, &one, Duration::from_secs(2)).await?.is_some());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_pause_and_refusals_are_shared() -> Result<()> {
    // A bucket of the whole minute, refilling at 10 tokens per second.
    let limits = Limits {
        tokens: Some(Rate::per_minute(600).with_burst(Duration::from_secs(60))),
        ..Limits::default()
    };
    let mut stores = stores(2, &prefix(), DEFAULT_LEASE_TTL, limits).await?;
    let (Some(b), Some(a)) = (stores.pop(), stores.pop()) else {
        return Ok(());
    };
    // Over the whole limit: never; unknown budget: never.
    assert!(matches!(
        a.try_reserve(&ask("entry", 601, 0)).await?,
        Reservation::Never(_)
    ));
    assert!(matches!(
        a.try_reserve(&ask("other", 1, 0)).await?,
        Reservation::Never(_)
    ));
    // A reserves 500; B cannot have 400 until A settles at 100.
    let lease = reserve(&a, &ask("entry", 500, 0), Duration::from_secs(1))
        .await?
        .context("granted")?;
    match raw(&b, &ask("entry", 400, 0)).await? {
        // 300 short at 10 per second.
        Reservation::Wait(Some(d)) => assert!(d > Duration::from_secs(25), "{d:?}"),
        other => bail!("expected a wait of about 30 s, got {other:?}"),
    }
    a.settle(
        &lease,
        SeatUse {
            input: 100,
            output: 0,
        },
    );
    assert!(
        reserve(&b, &ask("entry", 400, 0), Duration::from_secs(2))
            .await?
            .is_some(),
        "the settled surplus is visible to the other process"
    );
    assert!(b.headroom("entry").is_some_and(|h| h < 0.2));
    // A pause set by one process holds the other back.
    a.pause("entry", Duration::from_secs(30));
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        match raw(&b, &ask("entry", 0, 0)).await? {
            Reservation::Wait(Some(d)) if d > Duration::from_secs(20) => break,
            _ if Instant::now() > until => bail!("the pause never reached the other process"),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_providers_smaller_allowance_is_booked_for_every_process() -> Result<()> {
    let limits = Limits {
        tokens: Some(Rate::per_minute(1_000).with_burst(Duration::from_secs(60))),
        ..Limits::default()
    };
    let mut stores = stores(2, &prefix(), DEFAULT_LEASE_TTL, limits).await?;
    let (Some(b), Some(a)) = (stores.pop(), stores.pop()) else {
        return Ok(());
    };
    // The provider says only 100 tokens remain (other clients share the key): A lowers the
    // shared bucket to it, and B then cannot have 500.
    a.observe(
        "entry",
        RateObservation {
            tokens: AxisObservation {
                remaining: Some(100),
                reset: Some(Duration::from_secs(60)),
                limit: None,
                reset_slack: Duration::ZERO,
            },
            ..RateObservation::default()
        },
    );
    // The booking is sent on a task: probe with empty asks until B's decisions see it.
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        b.try_reserve(&ask("entry", 0, 0)).await?;
        if b.headroom("entry").is_some_and(|h| h <= 0.12) {
            break;
        }
        if Instant::now() > until {
            bail!("the observation never reached the shared bucket");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    match raw(&b, &ask("entry", 500, 0)).await? {
        Reservation::Wait(Some(d)) => {
            // 400 short at 1,000 per minute.
            assert!(d > Duration::from_secs(20), "waits for the refill: {d:?}");
        }
        other => bail!("expected a wait for the refill, got {other:?}"),
    }
    assert!(
        reserve(&b, &ask("entry", 100, 0), Duration::from_secs(1))
            .await?
            .is_some(),
        "what the provider still has is granted"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_asks_again_soon_and_gets_what_another_process_did_not_use() -> Result<()> {
    // otpm = 6,000 (100 a second). A books 1,000 output tokens: the shared axis names a 10 s
    // wait, but B is told to ask again within `RATE_POLL` (no process can wake another), and
    // once A settled at 100 used, B is granted about a second after A's grant, not ten (the
    // provider stated a minute's room: its window holds both).
    let limits = Limits {
        output_tokens: Some(Rate::per_minute(6_000)),
        ..Limits::default()
    };
    let prefix = prefix();
    let mut stores = stores(2, &prefix, DEFAULT_LEASE_TTL, limits).await?;
    let (Some(b), Some(a)) = (stores.pop(), stores.pop()) else {
        return Ok(());
    };
    states_a_minutes_output_room(&a, &prefix).await?;
    let call = Ask {
        budget: "entry".into(),
        tokens: 1_100,
        input_tokens: 100,
        output_tokens: 1_000,
        requests: 1,
        slots: 0,
    };
    let t0 = Instant::now();
    let lease = reserve(&a, &call, Duration::from_secs(1))
        .await?
        .context("granted")?;
    match b.try_reserve(&call).await? {
        Reservation::Wait(Some(d)) => assert!(d <= RATE_POLL, "{d:?}"),
        other => bail!("expected a short wait, got {other:?}"),
    }
    a.settle(
        &lease,
        SeatUse {
            input: 100,
            output: 100,
        },
    );
    reserve(&b, &call, Duration::from_secs(5))
        .await?
        .context("granted once A's unused time came back")?;
    let took = t0.elapsed();
    assert!(
        took > Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_and_output_axes_are_shared_and_settled_apart() -> Result<()> {
    // otpm = 6,000 (100 a second) and itpm = 600,000: A books 1,000 output tokens; B waits
    // about 10 s for the output axis, then, once A settled at 100 used, about 1 s.
    let limits = Limits {
        input_tokens: Some(Rate::per_minute(600_000)),
        output_tokens: Some(Rate::per_minute(6_000)),
        ..Limits::default()
    };
    let prefix = prefix();
    let mut stores = stores(2, &prefix, DEFAULT_LEASE_TTL, limits).await?;
    let (Some(b), Some(a)) = (stores.pop(), stores.pop()) else {
        return Ok(());
    };
    states_a_minutes_output_room(&a, &prefix).await?;
    let call = Ask {
        budget: "entry".into(),
        tokens: 1_500,
        input_tokens: 500,
        output_tokens: 1_000,
        requests: 1,
        slots: 0,
    };
    assert!(matches!(
        a.try_reserve(&Ask {
            output_tokens: 6_001,
            ..call.clone()
        })
        .await?,
        Reservation::Never(why) if why.contains("otpm")
    ));
    let lease = reserve(&a, &call, Duration::from_secs(1))
        .await?
        .context("granted")?;
    match raw(&b, &call).await? {
        Reservation::Wait(Some(d)) => assert!(d > Duration::from_secs(9), "{d:?}"),
        other => bail!("expected a wait of about 10 s, got {other:?}"),
    }
    a.settle(
        &lease,
        SeatUse {
            input: 500,
            output: 100,
        },
    );
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        match raw(&b, &call).await? {
            Reservation::Wait(Some(d)) if d < Duration::from_millis(1_100) => break,
            Reservation::Granted(_) => bail!("granted before the output axis allowed it"),
            _ if Instant::now() > until => bail!("the settle never reached the shared axis"),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reservation_still_out_holds_its_place_for_every_process() -> Result<()> {
    // 2,500 tokens a second over a 1 s window. A's grants of 800 use a tenth: paced at 80 each,
    // but the provider counts each whole while it is out. After three are out (2,480 with the
    // settled one), B's ask waits for the window, not for the pace; once A's calls settle, B goes.
    let limits = Limits {
        tokens: Some(Rate::per_minute(150_000)),
        ..Limits::default()
    };
    let prefix = prefix();
    let mut stores = stores(2, &prefix, DEFAULT_LEASE_TTL, limits).await?;
    let (Some(b), Some(a)) = (stores.pop(), stores.pop()) else {
        return Ok(());
    };
    let said = AxisObservation {
        remaining: Some(2_500),
        reset: Some(Duration::from_secs(1)),
        limit: None,
        reset_slack: Duration::ZERO,
    };
    let obs = RateObservation {
        tokens: said,
        ..RateObservation::default()
    };
    states(&a, &prefix, "tok:b", obs).await?;
    let call = ask("entry", 800, 0);
    let first = reserve(&a, &call, Duration::from_secs(2))
        .await?
        .context("granted")?;
    a.settle(
        &first,
        SeatUse {
            input: 80,
            output: 0,
        },
    );
    let mut out = Vec::new();
    for _ in 0..3 {
        out.push(
            reserve(&a, &call, Duration::from_secs(2))
                .await?
                .context("granted")?,
        );
    }
    match raw(&b, &call).await? {
        Reservation::Wait(Some(d)) => assert!(d > Duration::from_millis(400), "{d:?}"),
        other => bail!("expected a wait for the window, got {other:?}"),
    }
    for lease in &out {
        a.settle(
            lease,
            SeatUse {
                input: 80,
                output: 0,
            },
        );
    }
    let t0 = Instant::now();
    reserve(&b, &call, Duration::from_secs(2))
        .await?
        .context("granted once A's calls settled")?;
    assert!(
        t0.elapsed() < Duration::from_millis(700),
        "{:?}",
        t0.elapsed()
    );
    Ok(())
}

mod throttles;
