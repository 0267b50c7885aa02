use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use futures::task::ArcWake;

use super::*;
use crate::job::Limits;
use crate::job::Requirement;
use crate::job::kernel::budget::MemoryBudgets;

const BUDGET: &str = "service:one";

/// Admission over one budget of a single concurrency slot.
fn one_slot() -> (Admission, Arc<MemoryBudgets>) {
    let store = Arc::new(MemoryBudgets::new());
    store.configure(
        BUDGET,
        Limits {
            concurrency: Some(1),
            ..Limits::default()
        },
    );
    (Admission::new(store.clone()), store)
}

fn slot() -> Vec<Requirement> {
    vec![Requirement::Resource {
        budget: BUDGET.into(),
        default_limits: None,
    }]
}

/// A waker that counts how often it was woken.
#[derive(Default)]
struct Wakes(AtomicUsize);

impl ArcWake for Wakes {
    fn wake_by_ref(arc_self: &Arc<Self>) {
        arc_self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn poll<F: Future + Unpin>(f: &mut F, wakes: &Arc<Wakes>) -> Poll<F::Output> {
    let waker = futures::task::waker(wakes.clone());
    std::pin::Pin::new(f).poll(&mut Context::from_waker(&waker))
}

#[tokio::test]
async fn a_release_wakes_the_waiter_it_admits_and_no_other() -> anyhow::Result<()> {
    let (adm, _) = one_slot();
    let held = adm.acquire(slot()).await?;
    let (second_wakes, third_wakes) = (Arc::<Wakes>::default(), Arc::<Wakes>::default());
    let mut second = Box::pin(adm.acquire(slot()));
    let mut third = Box::pin(adm.acquire(slot()));
    assert!(poll(&mut second, &second_wakes).is_pending());
    assert!(poll(&mut third, &third_wakes).is_pending());
    drop(held);
    assert_eq!(second_wakes.0.load(Ordering::SeqCst), 1, "the admitted one");
    assert_eq!(
        third_wakes.0.load(Ordering::SeqCst),
        0,
        "no room for the next"
    );
    let Poll::Ready(granted) = poll(&mut second, &second_wakes) else {
        anyhow::bail!("the woken waiter holds its lease");
    };
    assert!(poll(&mut third, &third_wakes).is_pending());
    drop(granted?);
    assert_eq!(third_wakes.0.load(Ordering::SeqCst), 1);
    assert!(poll(&mut third, &third_wakes).is_ready());
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn a_seat_settled_early_gives_its_surplus_back_once_while_the_permit_is_held() {
    // otpm = 6,000: 100 a second. The seat books 1,000 output tokens (10 s of the axis) and
    // uses 100: settled early, the next ask waits 1 s although the permit is still held,
    // and the permit's own settle at the end gives nothing back twice.
    use crate::job::kernel::budget::Reservation;
    use crate::job::{Rate, Seat};
    let store = Arc::new(MemoryBudgets::new());
    let budget = Seat::budget_for("e");
    store.configure(
        &budget,
        Limits {
            output_tokens: Some(Rate::per_minute(6_000)),
            ..Limits::default()
        },
    );
    // The provider states a minute's room: its window holds both calls.
    store.observe(
        &budget,
        crate::job::kernel::RateObservation {
            output_tokens: crate::job::kernel::AxisObservation {
                remaining: Some(6_000),
                reset: None,
                limit: None,
                reset_slack: std::time::Duration::ZERO,
            },
            ..Default::default()
        },
    );
    let adm = Admission::new(store.clone());
    let seat = Seat {
        entry: "e".into(),
        budget: budget.as_str().into(),
        input_tokens: 5_000,
        output_tokens: 1_000,
        reasoning_tokens: 0,
    };
    let next = Requirement::Seat(seat.clone()).ask();
    let waits = |store: &MemoryBudgets| match store.try_reserve_local(&next) {
        Some(Reservation::Wait(Some(d))) => d.as_secs_f64(),
        other => panic!("expected a timed wait, got {other:?}"),
    };
    let permit = adm
        .acquire(vec![Requirement::Seat(seat)])
        .await
        .expect("granted");
    assert!((waits(&store) - 10.0).abs() < 1e-3);
    let used = SeatUse {
        input: 5_000,
        output: 100,
    };
    permit.settle_seat(used);
    assert!((waits(&store) - 1.0).abs() < 1e-3, "{}", waits(&store));
    permit.settle_seat(used);
    permit.settle(Some(used));
    assert!(
        (waits(&store) - 1.0).abs() < 1e-3,
        "settled once: {}",
        waits(&store)
    );
}

#[tokio::test]
async fn a_lease_handed_to_a_waiter_that_left_goes_on_to_the_next() -> anyhow::Result<()> {
    let (adm, store) = one_slot();
    let held = adm.acquire(slot()).await?;
    let wakes = Arc::<Wakes>::default();
    let mut second = Box::pin(adm.acquire(slot()));
    let mut third = Box::pin(adm.acquire(slot()));
    assert!(poll(&mut second, &wakes).is_pending());
    assert!(poll(&mut third, &wakes).is_pending());
    // The slot is handed to `second`, which is cancelled before it runs: the slot goes back
    // and on to `third`.
    drop(held);
    drop(second);
    let Poll::Ready(granted) = poll(&mut third, &wakes) else {
        anyhow::bail!("the slot reached the next waiter");
    };
    let granted = granted?;
    assert_eq!(store.headroom(BUDGET), Some(0.0), "one slot held, not two");
    drop(granted);
    assert_eq!(store.headroom(BUDGET), Some(1.0), "and none leaked");
    Ok(())
}
