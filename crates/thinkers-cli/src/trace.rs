//! `thinkers trace`: print a stored workflow's trajectory, or list recent workflows.

use std::path::Path;

use comfy_table::Table;
use thinkers::job::JobId;
use thinkers::ops::Trajectory;

pub(crate) async fn run(workflow: Option<&str>, list: bool, db: &Path) -> anyhow::Result<()> {
    let opened = crate::cost::open_store(db).await?;
    let store = opened.records();
    if list || workflow.is_none() {
        let rows = store.list_workflows(20).await?;
        if rows.is_empty() {
            // The store's location, never the raw `--db` (a PostgreSQL URL may hold a password).
            println!("no workflows recorded in {}", opened.location());
            return Ok(());
        }
        let mut table = Table::new();
        table.set_header(["workflow", "root class", "started", "status", "jobs"]);
        for w in rows {
            let started = chrono::DateTime::from_timestamp_millis(w.started_at_ms)
                .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                .unwrap_or_default();
            table.add_row([
                w.workflow.to_string(),
                w.root_class,
                started,
                w.status.as_str().to_owned(),
                w.job_count.to_string(),
            ]);
        }
        println!("{table}");
        return Ok(());
    }
    let id = workflow.unwrap_or_default();
    let id = JobId::parse(id).map_err(|e| anyhow::anyhow!("{e}"))?;
    let jobs = store.workflow_jobs(id).await?;
    print!("{}", Trajectory::build(jobs).render());
    // The calls this run stopped at for a person, and where each stands now.
    let asked: Vec<_> = opened
        .steps()
        .approvals(false)
        .await?
        .into_iter()
        .filter(|a| a.workflow == id.to_string())
        .collect();
    if !asked.is_empty() {
        println!("approvals asked in this run:");
        for a in asked {
            let decided = a
                .decided_at_ms
                .and_then(chrono::DateTime::from_timestamp_millis)
                .map(|t| format!(" at {}", t.format("%Y-%m-%d %H:%M:%S")))
                .unwrap_or_default();
            let reason = a
                .reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default();
            println!(
                "  {} {} (call {}): {}{decided}{reason}",
                a.id,
                a.tool,
                a.call_id,
                a.status.as_str()
            );
        }
    }
    Ok(())
}
