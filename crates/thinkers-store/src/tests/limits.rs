//! Admission's events ([`LimitEvent`]) through the batching recorder and back, on both backends.

use anyhow::Result;

use super::Backend;
use thinkers::job::JobId;
use thinkers::record::{LimitEvent, LimitEventKind};

fn event(at_ms: i64, job: JobId, workflow: JobId, kind: LimitEventKind) -> LimitEvent {
    LimitEvent {
        at_ms,
        budget: "model:sim-limited".to_owned(),
        entry: Some("sim-limited".to_owned()),
        job,
        workflow,
        kind,
    }
}

both!(limit_events_round_trip);
/// Throttles and rate events come back as written, oldest first, every column of their kind
/// kept (an unknown status, an unstated wait, no catalog figure, a service budget without an
/// entry), and `since_ms` leaves out the older ones.
async fn limit_events_round_trip(b: &Backend) -> Result<()> {
    let (job, workflow) = (JobId::new(), JobId::new());
    let first = event(
        1_000,
        job,
        workflow,
        LimitEventKind::Rate {
            axis: "tpm".to_owned(),
            per_minute: 90_000.0,
            catalog_per_minute: Some(90_000.0),
            source: "catalog".to_owned(),
        },
    );
    let throttle = event(
        2_000,
        job,
        workflow,
        LimitEventKind::Throttle {
            status: Some(429),
            asked_ms: Some(120_000),
            waited_ms: 60_000,
            detail: Some("provider `sim` throttled the request: HTTP 429: slow down".to_owned()),
        },
    );
    let learned = event(
        2_000,
        job,
        workflow,
        LimitEventKind::Rate {
            axis: "rpm".to_owned(),
            per_minute: 12.5,
            catalog_per_minute: None,
            source: "throttle".to_owned(),
        },
    );
    let service = LimitEvent {
        at_ms: 3_000,
        budget: "service:pubmed".to_owned(),
        entry: None,
        job,
        workflow,
        kind: LimitEventKind::Throttle {
            status: None,
            asked_ms: None,
            waited_ms: 1_000,
            detail: None,
        },
    };
    // Written out of order: the read sorts by time.
    for e in [&service, &learned, &throttle, &first] {
        b.recorder.limit_event(e.clone());
    }
    b.recorder.flush().await?;

    let all = b.store.limit_events(None).await?;
    assert_eq!(
        all,
        vec![first, learned.clone(), throttle.clone(), service.clone()]
    );
    let later = b.store.limit_events(Some(2_000)).await?;
    assert_eq!(later, vec![learned, throttle, service]);
    assert!(b.store.limit_events(Some(3_001)).await?.is_empty());
    Ok(())
}
