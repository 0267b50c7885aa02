use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holds_made_at_once_never_pass_the_limit_together() {
    let store = Arc::new(MemorySpend::new());
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let s = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut held = 0u64;
            for _ in 0..100 {
                if s.hold("k", 1_000, 7).await.unwrap() == Held::Yes {
                    held += 7;
                }
            }
            held
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, 994, "142 holds of 7 fit in 1,000");
    assert_eq!(store.hold("k", 1_000, 7).await.unwrap(), Held::No(994));
}

#[tokio::test]
async fn a_settle_replaces_the_hold_by_the_cost() {
    let store = MemorySpend::new();
    assert_eq!(store.hold("k", 100, 80).await.unwrap(), Held::Yes);
    assert_eq!(store.hold("k", 100, 80).await.unwrap(), Held::No(80));
    store.settle("k", 80, 5).await;
    assert_eq!(store.hold("k", 100, 80).await.unwrap(), Held::Yes);
    store.settle("k", 80, 0).await;
    assert_eq!(store.hold("k", 100, 96).await.unwrap(), Held::No(5));
    // The largest amounts saturate instead of wrapping past the limit.
    assert_eq!(
        store.hold("k", u64::MAX, u64::MAX).await.unwrap(),
        Held::No(5)
    );
}

#[test]
fn amounts_are_counted_in_billionths() {
    assert_eq!(nanos(0.0082), 8_200_000);
    assert_eq!(nanos(2e-9), 2);
    assert_eq!(nanos(-3.0), 0);
    assert_eq!(nanos(f64::MAX), u64::MAX);
}
