//! Resume by id across two OS processes: a child process (this same test binary, re-run with
//! an environment variable selecting [`child_writer`]) writes a conversation to a SQLite file and
//! exits; the parent resumes it by id, continues it, saves, and reads it back on a fresh
//! connection.

use std::process::Command;
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use serde_json::json;
use thinkers::conversation::{ConversationId, ConversationService, Message, Objective};
use thinkers_store::{SqliteConversationStore, SqliteStore};

use crate::support::{every_block, stamps};

/// Set to a database path, it turns [`child_writer`] from a no-op into the writer.
const CHILD_DB: &str = "THINKERS_CONVERSATIONS_CHILD_DB";
const ID_LINE: &str = "conversation-id=";
const PID_LINE: &str = "writer-pid=";

async fn service_at(db: &str) -> Result<(SqliteStore, ConversationService)> {
    let store = SqliteStore::open(db).await?;
    let svc = ConversationService::new(Arc::new(SqliteConversationStore::new(&store)));
    Ok((store, svc))
}

/// The child's half. Does nothing in a normal run.
#[tokio::test]
async fn child_writer() -> Result<()> {
    let Ok(db) = std::env::var(CHILD_DB) else {
        return Ok(());
    };
    let (store, svc) = service_at(&db).await?;
    let mut c = svc.obtain_new(stamps(), true);
    c.objective_mut()
        .put(Objective::TASK, "Report the weather, written by the child.");
    c.set_state("discovered_tools", json!(["get_weather"]));
    c.extend(every_block());
    svc.save(&mut c).await?;
    store.close().await;
    println!("{ID_LINE}{}", c.id());
    println!("{PID_LINE}{}", std::process::id());
    Ok(())
}

fn line_value<'a>(stdout: &'a str, prefix: &str) -> Result<&'a str> {
    stdout
        .lines()
        // With --nocapture the harness prints the test's name on the same line first.
        .find_map(|l| l.split_once(prefix).map(|(_, rest)| rest.trim()))
        .with_context(|| format!("no `{prefix}` line in the child's output:\n{stdout}"))
}

#[tokio::test]
async fn a_second_process_resumes_by_id_and_continues() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("shared.db");
    let db = db.to_str().context("utf-8 path")?.to_owned();

    let out = Command::new(std::env::current_exe()?)
        .args([
            "--exact",
            "resume::child_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DB, &db)
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "child failed: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let id = ConversationId::parse(line_value(&stdout, ID_LINE)?)?;
    let child_pid: u32 = line_value(&stdout, PID_LINE)?.parse()?;
    assert_ne!(child_pid, std::process::id(), "written by another process");

    // This process resumes it by id and continues.
    let (store, svc) = service_at(&db).await?;
    let mut c = svc.resume(&id).await?;
    assert_eq!(c.messages(), every_block().as_slice());
    assert_eq!(
        c.objective().get(Objective::TASK),
        Some("Report the weather, written by the child.")
    );
    assert_eq!(
        c.state_value("discovered_tools"),
        Some(&json!(["get_weather"]))
    );
    assert_eq!(*c.stamps(), stamps());
    assert_eq!(c.version(), 1);
    c.push(Message::user_text("Challenge: are you sure?"));
    c.push(Message::assistant_text("Yes, the tool said so."));
    svc.save(&mut c).await?;
    store.close().await;

    // A fresh connection sees both processes' work.
    let (_store, svc) = service_at(&db).await?;
    let back = svc.resume(&id).await?;
    assert_eq!(back.version(), 2);
    assert_eq!(back.messages().len(), every_block().len() + 2);
    assert_eq!(back.messages()[..every_block().len()], every_block()[..]);
    assert_eq!(back, c);
    Ok(())
}
