//! Two `thinkers serve` processes on one PostgreSQL schema serving one chat: a message posted to
//! each at the same moment gives two turns that run one after the other in one conversation.
//! Skipped (loudly) when PostgreSQL does not answer, unless `THINKERS_REQUIRE_SERVICES=1`.

use std::time::{Duration, Instant};

use sqlx::Connection as _;

use crate::support::host::{http, serve};

fn base_url() -> Option<String> {
    let url = std::env::var("THINKERS_TEST_PG_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let answers = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async { sqlx::PgConnection::connect(&url).await.map(|_| ()) });
    match answers {
        Ok(()) => Some(url),
        Err(e) if std::env::var("THINKERS_REQUIRE_SERVICES").is_ok_and(|v| v == "1") => {
            panic!("PostgreSQL is required but does not answer at {url}: {e}")
        }
        Err(e) => {
            eprintln!("\n*** SKIPPED: PostgreSQL does not answer at {url} ({e}) ***\n");
            None
        }
    }
}

fn sql(base: &str, statement: String) -> Vec<(String, i64, Option<i64>)> {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut c = sqlx::PgConnection::connect(base).await.unwrap();
        let rows = sqlx::query_as(sqlx::AssertSqlSafe(statement))
            .fetch_all(&mut c)
            .await
            .unwrap();
        c.close().await.unwrap();
        rows
    })
}

#[test]
fn two_serve_processes_on_one_postgres_chat_take_turns() {
    let Some(base) = base_url() else { return };
    let schema = format!("tserve_{}", std::process::id());
    sql(&base, format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
    sql(&base, format!("CREATE SCHEMA {schema}"));
    let db = format!("{base}?options[search_path]={schema}");
    let (a, b) = (serve(&db, &[]), serve(&db, &[]));

    let (status, created) = http(&a.addr, "POST", "/api/chats", r#"{"title": "shared"}"#);
    assert!(status.contains("201"), "{status} {created}");
    let id = created
        .split("\"id\":\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_owned();
    let path = format!("/api/chats/{id}/messages");
    let (to_a, to_b) = std::thread::scope(|s| {
        let one = s.spawn(|| http(&a.addr, "POST", &path, r#"{"text": "from A"}"#));
        let two = s.spawn(|| http(&b.addr, "POST", &path, r#"{"text": "from B"}"#));
        (one.join().unwrap(), two.join().unwrap())
    });
    assert!(
        to_a.0.contains("202") && to_a.1.contains("\"joined\":false"),
        "{to_a:?}"
    );
    assert!(
        to_b.0.contains("202") && to_b.1.contains("\"joined\":false"),
        "{to_b:?}"
    );

    // Both turns land in the chat's one conversation (a guard of 30 s stops a broken test).
    let started = Instant::now();
    let history = loop {
        let (_, h) = http(&b.addr, "GET", &format!("/api/chats/{id}"), "");
        // A turn may take tool rounds (the chat's thinker can delegate), so count the
        // assistant messages that carry text: each turn ends with one.
        let v: serde_json::Value = serde_json::from_str(&h).unwrap_or_default();
        let answers = v["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "assistant")
            .filter(|m| {
                m["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|b| b["type"] == "text"))
            })
            .count();
        if answers == 2 && v["turn_open"] == false {
            break h;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{h}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let asked = |m: &str| history.matches(&format!(r#""text":"{m}""#)).count();
    assert_eq!((asked("from A"), asked("from B")), (1, 1), "{history}");
    assert!(
        history.contains("from A") && history.contains("from B"),
        "{history}"
    );

    // The recorded turns, one per process, did not overlap. A turn's job row is finished as its
    // job returns, a moment after the chat shows the turn closed: wait for both rows to end
    // before stopping the processes.
    let query = format!(
        "SELECT status, started_at_ms, ended_at_ms FROM {schema}.jobs \
         WHERE class = 'chat' ORDER BY started_at_ms"
    );
    let settling = Instant::now();
    let turns = loop {
        let turns = sql(&base, query.clone());
        let ended = turns.len() == 2 && turns.iter().all(|t| t.2.is_some());
        if ended || settling.elapsed() > Duration::from_secs(30) {
            break turns;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    drop((a, b));
    sql(&base, format!("DROP SCHEMA {schema} CASCADE"));
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert!(turns.iter().all(|t| t.0 == "succeeded"), "{turns:?}");
    assert!(
        turns[0].2.unwrap() <= turns[1].1,
        "the turns overlap: {turns:?}"
    );
}
