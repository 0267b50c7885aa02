//! Two chat hosts on one PostgreSQL database (two runtimes with their own pools, as two
//! processes would have) serving one chat: a message posted to each at the same moment starts a
//! turn in each, and the turns run one after the other, the second continuing the conversation
//! the first saved. The sim takes 300 ms per answer, so overlapping turns would show.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result};
use serde_json::Value;
use thinkers::Runtime;
use thinkers::chat::{ChatHost, HostConfig, RunningHost};
use thinkers::dispatch::DispatchConfig;
use thinkers::model::Catalog;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::record::JobStatus;
use thinkers::store::{LlmRunFilter, Store};
use thinkers_sim::{Sim, SimConfig};

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
    let rt = Runtime::builder(Catalog::bundled().with_sim_url(&sim.base_url()))
        .database(db)
        .config(DispatchConfig {
            transient_backoff: Duration::from_millis(10),
            throttle_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await?;
    let host = ChatHost::new(&rt, factory("sim-small-a", false), HostConfig::default())?;
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
    assert!(calls.iter().all(|c| c.latency_ms >= LATENCY_MS as i64), "{calls:?}");
    assert!(
        calls[0].at_ms <= calls[1].at_ms - calls[1].latency_ms,
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
    assert_eq!(answers_seen, 1, "the first turn's answer is in the second request");

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
