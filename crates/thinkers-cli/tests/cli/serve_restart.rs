//! A chat survives its host: a `thinkers serve` stopped (SIGTERM) or killed (SIGKILL) in the
//! middle of a turn, then started again on the same database, still shows the person's message,
//! closes the cut turn with the `[no answer: …]` marker, and answers the next message normally.
//! Everything through the host's HTTP API, against a thinkers-sim whose model takes 1.5 s.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use thinkers_sim::{Sim, SimConfig};

use crate::support::host::{Serve, http, serve};

/// One chat model, answering after 1.5 s, without calling tools.
const CATALOG: &str = r#"
[providers.sim]
dialect = "openai"
base_url = "{sim}/v1"
api_key_env = "THINKERS_SIM_KEY"

[[entries]]
id = "sim-chat"
provider = "sim"
model = "sim-chat"
grade = "small"
context_window = 128000
output_ceiling = 4096
tpm = 2000000
rpm = 10000
concurrency = 64
price_in = 0.15
price_out = 0.60
currency = "USD"
native_tools = true

[entries.sim]
latency_ms = [1500, 1500]
tool_rounds = 0
"#;

/// (role, text) of each message of the chat.
fn messages(addr: &str, chat: &str) -> Vec<(String, String)> {
    let (status, body) = http(addr, "GET", &format!("/api/chats/{chat}"), "");
    assert!(status.contains("200"), "{status} {body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text: String = m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect();
            (m["role"].as_str().unwrap_or_default().to_owned(), text)
        })
        .collect()
}

/// SIGTERM, and the exit code it asks for (128 + 15).
fn terminate(host: &mut Serve) {
    let pid = host.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let code = host.child.wait().unwrap().code();
    assert_eq!(code, Some(143), "SIGTERM exits with 128 + 15");
}

fn jobs_running(db: &str) -> i64 {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        use sqlx::Connection as _;
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{db}"))
            .await
            .unwrap();
        let n = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE status = 'running'")
            .fetch_one(&mut c)
            .await
            .unwrap();
        c.close().await.unwrap();
        n
    })
}

fn host_cut_mid_turn(kill: bool) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let sim = runtime
        .block_on(Sim::start(SimConfig::from_catalog_toml(CATALOG).unwrap()))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.toml");
    std::fs::write(&catalog, CATALOG).unwrap();
    let (catalog, db) = (
        catalog.to_string_lossy().into_owned(),
        dir.path().join("chats.db").to_string_lossy().into_owned(),
    );
    let sim_url = sim.base_url();

    let mut first = serve(&db, &["--catalog", &catalog, "--sim-url", &sim_url]);
    let (status, created) = http(&first.addr, "POST", "/api/chats", r#"{"title": "cut"}"#);
    assert!(status.contains("201"), "{status} {created}");
    let chat = serde_json::from_str::<Value>(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/api/chats/{chat}/messages");
    let (status, _) = http(&first.addr, "POST", &path, r#"{"text": "are you there?"}"#);
    assert!(status.contains("202"), "{status}");
    // The model takes 1.5 s: stop the host in the middle of the turn.
    std::thread::sleep(Duration::from_millis(700));
    if kill {
        first.child.kill().unwrap();
        first.child.wait().unwrap();
    } else {
        terminate(&mut first);
    }
    drop(first);

    let mut second = serve(&db, &["--catalog", &catalog, "--sim-url", &sim_url]);
    let after = messages(&second.addr, &chat);
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(after[0], ("user".to_owned(), "are you there?".to_owned()));
    assert_eq!(after[1].0, "assistant");
    assert!(
        after[1].1.starts_with("[no answer: ") && after[1].1.contains("host stopped"),
        "{after:?}"
    );
    // The next message runs a normal turn on top of it.
    let (status, _) = http(&second.addr, "POST", &path, r#"{"text": "and now?"}"#);
    assert!(status.contains("202"), "{status}");
    let started = Instant::now();
    let answered = loop {
        let now = messages(&second.addr, &chat);
        if now
            .last()
            .is_some_and(|(role, text)| role == "assistant" && !text.is_empty())
            && now.len() >= 4
        {
            break now;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no answer: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(answered[2], ("user".to_owned(), "and now?".to_owned()));
    assert!(
        !answered[3].1.is_empty() && !answered[3].1.starts_with("[no answer"),
        "{answered:?}"
    );
    terminate(&mut second);
    // The cut turn's jobs are closed (cancelled on SIGTERM, interrupted after SIGKILL).
    assert_eq!(jobs_running(&db), 0);
    runtime.block_on(sim.shutdown()).unwrap();
}

#[test]
fn a_chat_survives_its_host_stopped_mid_turn() {
    host_cut_mid_turn(false);
}

#[test]
fn a_chat_survives_its_host_killed_mid_turn() {
    host_cut_mid_turn(true);
}
