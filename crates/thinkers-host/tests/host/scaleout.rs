//! Two chat hosts on one PostgreSQL database (two runtimes with their own pools, as two
//! processes would have) serving one chat: a message posted to each at the same moment starts a
//! turn in each, and the turns run one after the other, the second continuing the conversation
//! the first saved. The sim takes 300 ms per answer, so overlapping turns would show.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result};
use serde_json::Value;
use thinkers::Runtime;
use thinkers::dispatch::DispatchConfig;
use thinkers::model::Catalog;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::record::JobStatus;
use thinkers_host::{ChatHost, HostConfig, RunningHost};
use thinkers_sim::{Sim, SimConfig};
use thinkers_store::{LlmRunFilter, Store};
use thinkers_store::{RuntimeBuilderExt as _, RuntimeExt as _};

use crate::support::{create_chat, events_until_answer, factory, history, post_text};

/// How long the sim takes to answer each request.
const LATENCY_MS: u64 = 300;

async fn slow_sim() -> Result<Sim> {
    let mut config = SimConfig::from_catalog_toml(BUNDLED_TOML)?.calm();
    for m in &mut config.models {
        if let Some(p) = &mut m.profile {
            p.latency_ms = [LATENCY_MS, LATENCY_MS];
        }
    }
    if let Some(p) = &mut config.default_profile {
        p.latency_ms = [LATENCY_MS, LATENCY_MS];
    }
    Ok(Sim::start(SimConfig {
        log_bodies: true,
        ..config
    })
    .await?)
}

struct PgHost {
    rt: Runtime,
    running: RunningHost,
    url: String,
}

async fn pg_host(sim: &Sim, db: &str) -> Result<PgHost> {
    pg_host_with(sim, db, HostConfig::default()).await
}

async fn pg_host_with(sim: &Sim, db: &str, config: HostConfig) -> Result<PgHost> {
    let rt = Runtime::builder(Catalog::bundled().with_sim_url(&sim.base_url()))
        .database(db)
        .config(DispatchConfig {
            transient_backoff: Duration::from_millis(10),
            throttle_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await?;
    let host = ChatHost::new(&rt, factory("sim-small-a", false), config)?;
    let running = host.start("127.0.0.1:0".parse::<SocketAddr>()?).await?;
    let url = running.url();
    Ok(PgHost { rt, running, url })
}

/// The text of every user message in a logged request body.
fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_on_one_postgres_chat_serialise_its_turns() -> Result<()> {
    let Some(db) = crate::pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let sim = slow_sim().await?;
    let a = pg_host(&sim, &db).await?;
    let b = pg_host(&sim, &db).await?;

    // A chat made through one host is served by the other.
    let chat = create_chat(&a.url, "shared").await;
    let listed: Value = reqwest::get(format!("{}/api/chats", b.url))
        .await?
        .json()
        .await?;
    assert_eq!(listed["chats"][0]["id"], chat.as_str());

    // One message to each host at the same moment: each starts a turn of its own.
    let (to_a, to_b) = tokio::join!(
        post_text(&a.url, &chat, "Tell me about alpha."),
        post_text(&b.url, &chat, "Tell me about beta."),
    );
    assert_eq!(to_a.0, 202, "{to_a:?}");
    assert_eq!(to_b.0, 202, "{to_b:?}");
    assert_eq!(to_a.1["joined"], false);
    assert_eq!(to_b.1["joined"], false);

    // Both turns answer (each host streams the events of its own turn).
    let (events_a, events_b) = tokio::join!(
        events_until_answer(&a.url, &chat, 0),
        events_until_answer(&b.url, &chat, 0),
    );
    for events in [&events_a, &events_b] {
        let last = events.last().context("events")?;
        assert_eq!(last.name, "answer", "{events:?}");
    }
    a.running.shutdown().await?;
    b.running.shutdown().await?;
    a.rt.flush().await?;
    b.rt.flush().await?;

    // The two turns, as recorded in the shared database: both succeeded, one after the other.
    let store = a.rt.open_store().context("a store")?;
    assert!(matches!(store, Store::Postgres(_)));
    let mut turns = store.records().list_workflows(10).await?;
    turns.retain(|w| w.root_class == "chat");
    assert_eq!(turns.len(), 2, "{turns:?}");
    turns.sort_by_key(|w| w.started_at_ms);
    assert!(turns.iter().all(|w| w.status == JobStatus::Succeeded));
    let first_end = turns[0].ended_at_ms.context("first turn ended")?;
    assert!(
        first_end <= turns[1].started_at_ms,
        "the turns overlap: {turns:?}"
    );
    // Their model calls too: each took the sim's latency, and none began before the
    // previous one ended.
    let mut calls = store
        .records()
        .llm_runs(LlmRunFilter::new().class("chat.turn"))
        .await?;
    assert_eq!(calls.len(), 2, "{calls:?}");
    calls.sort_by_key(|c| c.at_ms);
    assert!(
        calls.iter().all(|c| c.latency_ms >= LATENCY_MS),
        "{calls:?}"
    );
    assert!(
        calls[0].at_ms <= calls[1].at_ms - i64::try_from(calls[1].latency_ms)?,
        "the model calls overlap: {calls:?}"
    );

    // The second turn's request carried the first turn's exchange: serialised, not lost.
    let requests = sim.requests();
    assert_eq!(requests.len(), 2, "one model call per turn");
    let first = user_texts(&requests[0].body);
    let second = user_texts(&requests[1].body);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(second.len(), 2, "{second:?}");
    assert_eq!(second[0], first[0], "the second turn continues the first");
    assert_ne!(second[1], first[0]);
    let answers_seen = requests[1].body["messages"]
        .as_array()
        .context("messages")?
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    assert_eq!(
        answers_seen, 1,
        "the first turn's answer is in the second request"
    );

    // One conversation holds both exchanges, in the order they ran: a third host reads them.
    let again = pg_host(&sim, &db).await?;
    let h = history(&again.url, &chat).await;
    let roles: Vec<&str> = h["messages"]
        .as_array()
        .context("messages")?
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"], "{h}");
    assert!(h["chat"]["conversation_id"].is_string(), "{h}");
    again.running.shutdown().await?;
    Ok(())
}

/// Post `text` to the chat on `url` and wait for the turn's last event.
async fn turn(url: &str, chat: &str, text: &str) -> Result<crate::support::Sse> {
    let after = history(url, chat).await["last_event_id"]
        .as_u64()
        .context("last_event_id")?;
    let (status, body) = post_text(url, chat, text).await;
    assert_eq!(status, 202, "{body}");
    let events = events_until_answer(url, chat, after).await;
    events.last().cloned().context("events")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_continues_what_another_host_added_to_a_chat_it_served_before() -> Result<()> {
    let Some(db) = crate::pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let sim = slow_sim().await?;
    let a = pg_host(&sim, &db).await?;
    let b = pg_host(&sim, &db).await?;
    let chat = create_chat(&a.url, "taking turns").await;
    // A serves the first turn and keeps the conversation in memory; B serves the second; the
    // third, on A again, must read the second from the store rather than A's copy.
    for (host, text) in [(&a, "one"), (&b, "two"), (&a, "three")] {
        let last = turn(&host.url, &chat, text).await?;
        assert_eq!(last.name, "answer", "{last:?}");
    }
    let requests = sim.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        user_texts(&requests[2].body),
        ["\"one\"", "\"two\"", "\"three\""],
        "the third turn read every earlier message"
    );
    let h = history(&a.url, &chat).await;
    assert_eq!(h["messages"].as_array().map(Vec::len), Some(6), "{h}");
    a.running.shutdown().await?;
    b.running.shutdown().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_waiting_too_long_for_another_host_is_given_up_with_an_error() -> Result<()> {
    let Some(db) = crate::pg::fresh_schema_url().await? else {
        return Ok(());
    };
    let sim = slow_sim().await?;
    let a = pg_host(&sim, &db).await?;
    let impatient = HostConfig {
        turn_wait: Duration::from_millis(50),
        ..HostConfig::default()
    };
    let b = pg_host_with(&sim, &db, impatient).await?;
    let chat = create_chat(&a.url, "busy").await;

    // A's turn holds the chat once it has read its message (the sim then takes 300 ms).
    let (status, _) = post_text(&a.url, &chat, "a slow question").await;
    assert_eq!(status, 202);
    let mut a_events = reqwest::get(format!("{}/api/chats/{chat}/events?after=0", a.url))
        .await?
        .bytes_stream();
    let mut seen = String::new();
    while !seen.contains("event: message") {
        use futures::StreamExt as _;
        let chunk = a_events.next().await.context("A's stream ended")??;
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    drop(a_events);
    // B's turn waits 50 ms for it, then gives up and says so.
    let (status, _) = post_text(&b.url, &chat, "an impatient question").await;
    assert_eq!(status, 202);
    let b_events = events_until_answer(&b.url, &chat, 0).await;
    let last = b_events.last().context("B's events")?;
    assert_eq!(last.name, "error", "{b_events:?}");
    let message = last.data["message"].as_str().context("message")?;
    assert!(
        message.contains("1 message(s) were not answered") && message.contains("busy"),
        "{message}"
    );
    // A's turn answers; B's message was not put in the conversation.
    let a_events = events_until_answer(&a.url, &chat, 0).await;
    assert_eq!(a_events.last().map(|e| e.name.as_str()), Some("answer"));
    a.running.shutdown().await?;
    // The chat is free again: B's next message starts a turn that answers.
    let last = turn(&b.url, &chat, "again").await?;
    assert_eq!(last.name, "answer", "{last:?}");
    let requests = sim.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        user_texts(&requests[1].body),
        ["\"a slow question\"", "\"again\""]
    );
    b.running.shutdown().await?;
    Ok(())
}
