//! The chat host's store on both backends: the chat list, and the turn lock that keeps a chat's
//! turns apart across processes (PostgreSQL) or holds nothing (SQLite, one process).

use std::time::Duration;

use anyhow::{Context as _, Result};

use super::Backend;
use crate::{ChatStore, open};
use thinkers::error::ErrorKind;

both!(chats_are_created_listed_and_touched);
async fn chats_are_created_listed_and_touched(b: &Backend) -> Result<()> {
    let chats = ChatStore::of(&b.store);
    assert!(chats.list().await?.is_empty());
    let first = chats.create("first").await?;
    let second = chats.create("second").await?;
    assert_eq!(first.title, "first");
    assert_eq!(first.conversation_id, None);
    assert_eq!(first.created_at_ms, first.updated_at_ms);
    assert_ne!(first.id, second.id);
    assert_eq!(chats.get(&first.id).await?, Some(first.clone()));
    assert_eq!(chats.get("no-such-chat").await?, None);

    // Most recently changed first; ids (uuid v7) break ties of one millisecond.
    let ids = |list: Vec<crate::ChatRecord>| list.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(
        ids(chats.list().await?),
        [second.id.clone(), first.id.clone()]
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    chats.touch(&first.id, Some("conv-1")).await?;
    assert_eq!(
        ids(chats.list().await?),
        [first.id.clone(), second.id.clone()]
    );
    let touched = chats.get(&first.id).await?.context("still there")?;
    assert_eq!(touched.conversation_id.as_deref(), Some("conv-1"));
    assert!(touched.updated_at_ms > first.updated_at_ms);
    assert_eq!(touched.created_at_ms, first.created_at_ms);
    // Touching without a conversation keeps the one recorded.
    chats.touch(&first.id, None).await?;
    let kept = chats.get(&first.id).await?.context("still there")?;
    assert_eq!(kept.conversation_id.as_deref(), Some("conv-1"));

    // Another handle on the same database (another process) sees the same chats.
    if let Some(target) = &b.target {
        let other = open(target).await?;
        let listed = ChatStore::of(&other).list().await?;
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].id, first.id);
        other.close().await;
    }
    Ok(())
}

both!(a_chat_turn_is_held_against_other_processes_sharing_the_store);
async fn a_chat_turn_is_held_against_other_processes_sharing_the_store(b: &Backend) -> Result<()> {
    let target = b.target.as_deref().context("a reopenable store")?;
    let here = ChatStore::of(&b.store);
    // A second store on the same database stands for a second host process.
    let elsewhere_store = open(target).await?;
    let elsewhere = ChatStore::of(&elsewhere_store);
    let chat = here.create("locked").await?;
    let short = Duration::from_millis(200);
    let long = Duration::from_secs(10);

    let held = here.lock_turn(&chat.id, long).await?;
    if !here.is_shared() {
        // SQLite has one process: the host's in-process lock is all there is.
        assert!(!elsewhere.is_shared());
        let also = elsewhere.lock_turn(&chat.id, short).await?;
        also.release().await?;
        held.release().await?;
        elsewhere_store.close().await;
        return Ok(());
    }

    // Held here: the other process waits, then is told the chat is busy, naming it.
    let err = elsewhere
        .lock_turn(&chat.id, short)
        .await
        .err()
        .context("the chat is held by the other store")?;
    assert_eq!(err.kind(), ErrorKind::ExternalService);
    let text = err.to_string();
    assert!(text.contains("busy") && text.contains(&chat.id), "{text}");
    // Another chat is not held.
    let other_chat = elsewhere.create("free").await?;
    elsewhere
        .lock_turn(&other_chat.id, short)
        .await?
        .release()
        .await?;

    // A waiting turn gets the chat as soon as the holder releases it.
    let waiting = {
        let elsewhere = elsewhere.clone();
        let id = chat.id.clone();
        tokio::spawn(async move { elsewhere.lock_turn(&id, long).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !waiting.is_finished(),
        "the second turn waits for the first"
    );
    held.release().await?;
    let second = waiting.await??;

    // A holder that goes away without releasing (a crashed process: its connection drops)
    // frees the chat too.
    drop(second);
    let third = here.lock_turn(&chat.id, long).await?;
    third.release().await?;
    elsewhere_store.close().await;
    Ok(())
}
