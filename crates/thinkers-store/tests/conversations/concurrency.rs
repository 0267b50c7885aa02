//! Two writers on one conversation in one SQLite file: every message lands exactly once. Each
//! writer resumes, adds its message and saves; the loser of a race gets the version conflict,
//! reloads and retries. One writer also changes the state each time, so both write paths (append
//! and full save) race.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::Result;
use serde_json::json;
use thinkers::conversation::{
    ConversationId, ConversationService, Message, VersionConflict, is_version_conflict,
};
use tokio::sync::Barrier;

use crate::support::{sqlite_at, stamps};

const PER_WRITER: usize = 40;

async fn writer(
    svc: ConversationService,
    id: ConversationId,
    name: &'static str,
    touch_state: bool,
    start: Arc<Barrier>,
    conflicts: Arc<AtomicU32>,
) -> Result<()> {
    for i in 0..PER_WRITER {
        let mut first_attempt = true;
        loop {
            let mut c = svc.resume(&id).await?;
            c.push(Message::user_text(format!("{name}-{i}")));
            if touch_state {
                c.set_state(name, json!(i));
            }
            if i == 0 && first_attempt {
                // Both writers hold the same version before either saves: one must lose.
                start.wait().await;
            }
            first_attempt = false;
            match svc.save(&mut c).await {
                Ok(()) => break,
                Err(e) if is_version_conflict(&e) => {
                    let conflict = VersionConflict::find(&e).unwrap();
                    assert_eq!(conflict.conversation, id);
                    assert!(conflict.found > Some(conflict.expected));
                    conflicts.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_lose_no_message() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (_store, conversations) = sqlite_at(dir.path()).await?;
    two_writers_on(conversations).await
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_lose_no_message_on_postgres() -> Result<()> {
    match crate::pg::pg_conversations().await? {
        Some(conversations) => two_writers_on(conversations).await,
        None => Ok(()),
    }
}

async fn two_writers_on(
    conversations: Arc<dyn thinkers::conversation::ConversationStore>,
) -> Result<()> {
    let svc = ConversationService::new(conversations);
    let mut c = svc.obtain_new(stamps(), true);
    c.push(Message::user_text("start"));
    svc.save(&mut c).await?;

    let start = Arc::new(Barrier::new(2));
    let conflicts = Arc::new(AtomicU32::new(0));
    let a = tokio::spawn(writer(
        svc.clone(),
        c.id().clone(),
        "a",
        false,
        Arc::clone(&start),
        Arc::clone(&conflicts),
    ));
    let b = tokio::spawn(writer(
        svc.clone(),
        c.id().clone(),
        "b",
        true,
        Arc::clone(&start),
        Arc::clone(&conflicts),
    ));
    a.await??;
    b.await??;

    let done = svc.resume(c.id()).await?;
    let texts: Vec<String> = done.messages().iter().map(Message::text).collect();
    assert_eq!(texts.len(), 1 + 2 * PER_WRITER);
    assert_eq!(texts[0], "start");
    for name in ["a", "b"] {
        // Each writer's messages are all there, once each, in the writer's order.
        let mine: Vec<&String> = texts
            .iter()
            .filter(|t| t.starts_with(&format!("{name}-")))
            .collect();
        let expected: Vec<String> = (0..PER_WRITER).map(|i| format!("{name}-{i}")).collect();
        assert_eq!(mine, expected.iter().collect::<Vec<_>>());
    }
    assert_eq!(done.state_value("b"), Some(&json!(PER_WRITER - 1)));
    // One version per successful write.
    assert_eq!(done.version(), 1 + 2 * PER_WRITER as u64);
    assert!(
        conflicts.load(Ordering::Relaxed) >= 1,
        "the first race has a loser"
    );
    Ok(())
}
