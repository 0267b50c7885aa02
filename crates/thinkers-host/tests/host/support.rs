//! Starting a sim, a runtime on a SQLite file and a chat host on free ports; reading a chat's
//! event stream.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thinkers::Runtime;
use thinkers::dispatch::DispatchConfig;
use thinkers::model::catalog::BUNDLED_TOML;
use thinkers::model::{Catalog, Depth, Grade, ModelDependent, OutputSize};
use thinkers::thinker::{ChatThinker, ThinkerDeclaration};
use thinkers::tool::{Tool, ToolContext};
use thinkers_host::{ChatHost, HostConfig, RunningHost};
use thinkers_sim::{Script, ScriptAnswer, ScriptRule, Sim, SimConfig};
use thinkers_store::RuntimeBuilderExt as _;

/// What the sim answers to a question about the capital of France.
pub const PARIS: &str = "Paris is the capital of France.";

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct LookupInput {
    /// The term to look up.
    pub term: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Definition {
    pub term: String,
    pub meaning: String,
}

/// A read-only glossary lookup, a little slow.
#[derive(Debug, Default, Clone)]
pub struct Lookup;

impl Tool for Lookup {
    const NAME: &'static str = "lookup";
    type Input = LookupInput;
    type Output = Definition;
    fn description(&self) -> Cow<'static, str> {
        "Look a term up in the glossary.".into()
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(
        &self,
        input: &LookupInput,
        _cx: &ToolContext<'_>,
    ) -> thinkers::Result<Definition> {
        // Slow enough that a message posted right after the first one finds the turn open
        // (this widens a window; nothing is timed).
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(Definition {
            term: input.term.clone(),
            meaning: format!("the meaning of {}", input.term),
        })
    }
}

/// A calm sim serving the bundled catalog, answering questions about France from a script.
pub async fn sim() -> Sim {
    let script = Script::new(vec![ScriptRule::when_contains(
        "capital of France",
        ScriptAnswer::Text(PARIS.into()),
    )]);
    let config = SimConfig::from_catalog_toml(BUNDLED_TOML).unwrap().calm();
    Sim::start(SimConfig {
        script: Some(script),
        log_bodies: true,
        ..config
    })
    .await
    .unwrap()
}

/// A runtime on `db` bound to `sim`.
pub async fn runtime(sim: &Sim, db: &Path) -> Runtime {
    runtime_with(sim, db, thinkers::durable::ApprovalPolicy::new()).await
}

/// A runtime on `db` bound to `sim` whose tool calls wait for a person as `policy` says.
pub async fn runtime_with(
    sim: &Sim,
    db: &Path,
    policy: thinkers::durable::ApprovalPolicy,
) -> Runtime {
    Runtime::builder(Catalog::bundled().with_sim_url(&sim.base_url()))
        .database(db.to_str().unwrap())
        .approval_policy(policy)
        .config(DispatchConfig {
            transient_backoff: Duration::from_millis(10),
            throttle_backoff: Duration::from_millis(10),
            ..DispatchConfig::default()
        })
        .build()
        .await
        .unwrap()
}

/// The chats of the tests: Small, pinned to the OpenAI-dialect entry, with the lookup tool, at
/// quick depth (below the delegation threshold, so no `sub_thinker` for the sim to pick).
pub fn factory(pin: &'static str, tools: bool) -> thinkers_host::ChatFactory {
    Arc::new(move || {
        let mut chat = ChatThinker::new(
            ThinkerDeclaration::new(Grade::Small, OutputSize::Compact),
            "You are a helpful assistant.",
        )
        .depth(Depth::Quick);
        if tools {
            chat = chat.tool(Lookup);
        }
        chat.pin_model(pin.to_owned());
        chat
    })
}

pub struct Hosted {
    pub rt: Runtime,
    pub host: ChatHost,
    pub running: RunningHost,
    pub url: String,
}

/// A runtime on `db` and a host on a free port.
pub async fn host(sim: &Sim, db: &Path, tools: bool) -> Hosted {
    host_with(runtime(sim, db).await, tools).await
}

/// A host on a free port over `rt`.
pub async fn host_with(rt: Runtime, tools: bool) -> Hosted {
    let host = ChatHost::new(&rt, factory("sim-small-a", tools), HostConfig::default()).unwrap();
    let running = host
        .start("127.0.0.1:0".parse::<SocketAddr>().unwrap())
        .await
        .unwrap();
    let url = running.url();
    Hosted {
        rt,
        host,
        running,
        url,
    }
}

/// One server-sent event as read off the wire.
#[derive(Debug, Clone)]
pub struct Sse {
    pub id: u64,
    pub name: String,
    pub data: Value,
}

/// Read the chat's events after `after` until an `answer`, `approval` or `error` event (a hang
/// guard of 30 s stops a broken test, it is not a timing assertion).
pub async fn events_until_answer(url: &str, chat: &str, after: u64) -> Vec<Sse> {
    let resp = reqwest::get(format!("{url}/api/chats/{chat}/events?after={after}"))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut stream = resp.bytes_stream().eventsource();
    let mut out = Vec::new();
    let read = async {
        while let Some(ev) = stream.next().await {
            let ev = ev.unwrap();
            let done = ev.event == "answer" || ev.event == "error" || ev.event == "approval";
            out.push(Sse {
                id: ev.id.parse().unwrap(),
                name: ev.event,
                data: serde_json::from_str(&ev.data).unwrap(),
            });
            if done {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("no answer event within 30 s");
    out
}

pub async fn create_chat(url: &str, title: &str) -> String {
    let resp = reqwest::Client::new()
        .post(format!("{url}/api/chats"))
        .json(&serde_json::json!({ "title": title }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 201);
    let chat: Value = resp.json().await.unwrap();
    chat["id"].as_str().unwrap().to_owned()
}

pub async fn post_text(url: &str, chat: &str, text: &str) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{url}/api/chats/{chat}/messages"))
        .json(&serde_json::json!({ "text": text }))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

pub async fn history(url: &str, chat: &str) -> Value {
    let resp = reqwest::get(format!("{url}/api/chats/{chat}"))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}
