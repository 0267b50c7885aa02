//! Which process holds which running job: owner rows, heartbeats and the sweep that closes the
//! jobs of a process that is gone.
//!
//! Every batching recorder registers one owner row (its process's host, pid and kernel start
//! time), names it in every job row it writes, and beats the row's heartbeat every
//! [`HEARTBEAT`]. Opening a store runs [`sweep`]: an open owner is gone when its heartbeat is
//! older than [`STALE_AFTER`], or when it ran on this host and its process no longer exists
//! (the pid is free, or now belongs to a process started at another time). The running jobs of
//! a gone owner end [`JobStatus::Interrupted`](thinkers::record::JobStatus::Interrupted) at its
//! last heartbeat (or their start, if later), and the owner row is closed, so no reader shows
//! work as running that nothing runs.

use std::time::Duration;

use futures::future::BoxFuture;

use thinkers::Result;
use thinkers::record::now_ms;

/// How often a recorder's writer beats its owner row.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(5);

/// How old a heartbeat may be before its owner counts as gone, whatever host it ran on.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(30);

/// This process, as an owner row describes it.
#[derive(Debug, Clone)]
pub(crate) struct Owner {
    pub(crate) id: String,
    pub(crate) host: String,
    pub(crate) pid: i64,
    pub(crate) process_start: Option<String>,
    pub(crate) started_at_ms: i64,
}

impl Owner {
    /// A fresh owner id for this process.
    pub(crate) fn this_process() -> Self {
        let pid = std::process::id();
        Self {
            id: uuid::Uuid::now_v7().to_string(),
            host: host_name(),
            pid: i64::from(pid),
            process_start: process_start(i64::from(pid)),
            started_at_ms: now_ms(),
        }
    }
}

/// An owner row not yet closed.
#[derive(Debug, Clone)]
pub(crate) struct OwnerRow {
    pub(crate) id: String,
    pub(crate) host: String,
    pub(crate) pid: i64,
    pub(crate) process_start: Option<String>,
    pub(crate) heartbeat_at_ms: i64,
}

/// The owner-row statements of one backend.
pub(crate) trait OwnerOps: Send + Sync {
    /// Insert `owner` as open.
    fn register<'a>(&'a self, owner: &'a Owner) -> BoxFuture<'a, Result<()>>;
    /// Beat `id`'s heartbeat (reopening it if a sweep closed it while this process was stalled).
    fn heartbeat<'a>(&'a self, id: &'a str, at_ms: i64) -> BoxFuture<'a, Result<()>>;
    /// Every owner row not closed.
    fn open_owners(&self) -> BoxFuture<'_, Result<Vec<OwnerRow>>>;
    /// In one transaction: end `id`'s running jobs as interrupted at `at_ms` (or their start,
    /// if later) with `error`, and close the owner row with `reason`. Returns the jobs closed.
    fn close_owner<'a>(
        &'a self,
        id: &'a str,
        at_ms: i64,
        reason: &'a str,
        error: &'a str,
    ) -> BoxFuture<'a, Result<u64>>;
}

/// Why `row` is gone, or `None` while it may still run.
pub(crate) fn gone(row: &OwnerRow, now_ms: i64, here: &str) -> Option<String> {
    let stale_ms = i64::try_from(STALE_AFTER.as_millis()).unwrap_or(i64::MAX);
    if now_ms.saturating_sub(row.heartbeat_at_ms) > stale_ms {
        return Some(format!(
            "its heartbeat stopped more than {} s ago",
            STALE_AFTER.as_secs()
        ));
    }
    // Only a process on this host can be looked up; one whose start time was not known cannot
    // be told from a later process given the same pid.
    if row.host == here
        && let Some(started) = &row.process_start
        && process_start(row.pid).as_ref() != Some(started)
    {
        return Some(format!("its process (pid {}) no longer exists", row.pid));
    }
    None
}

/// Close the running jobs of every owner that is gone. Returns how many jobs were closed.
pub(crate) async fn sweep(ops: &dyn OwnerOps) -> Result<u64> {
    let here = host_name();
    let now = now_ms();
    let mut closed = 0;
    for row in ops.open_owners().await? {
        let Some(why) = gone(&row, now, &here) else {
            continue;
        };
        let error = format!(
            "the process that ran it (pid {} on {}) stopped without recording its end: {why}",
            row.pid, row.host
        );
        let n = ops
            .close_owner(&row.id, row.heartbeat_at_ms, "gone", &error)
            .await?;
        if n > 0 {
            tracing::warn!(owner = %row.id, pid = row.pid, host = %row.host, jobs = n, %why,
                "closed the running jobs of a process that is gone as interrupted");
        }
        closed += n;
    }
    Ok(closed)
}

/// Run [`sweep`] at a store's opening: a failure is logged, never fatal (a reader of a store it
/// cannot write still reads).
pub(crate) async fn sweep_at_open(ops: &dyn OwnerOps, backend: &str) {
    if let Err(e) = sweep(ops).await {
        tracing::warn!(error = %e, backend, "could not close the jobs of processes that are gone");
    }
}

/// This host's name (the kernel's, else `$HOSTNAME`, else `unknown`).
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The kernel's start time of process `pid` (field 22 of `/proc/PID/stat`, in clock ticks since
/// boot), or `None` where there is no such process or no `/proc`.
pub(crate) fn process_start(pid: i64) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(heartbeat_at_ms: i64, host: &str, pid: i64, start: Option<&str>) -> OwnerRow {
        OwnerRow {
            id: "o".into(),
            host: host.into(),
            pid,
            process_start: start.map(str::to_owned),
            heartbeat_at_ms,
        }
    }

    #[test]
    fn this_process_is_alive_and_a_stale_heartbeat_is_gone() {
        let me = Owner::this_process();
        assert!(me.process_start.is_some(), "no /proc start time here");
        let now = now_ms();
        let alive = row(now, &me.host, me.pid, me.process_start.as_deref());
        assert_eq!(gone(&alive, now, &me.host), None);
        let stale = row(now - 31_000, &me.host, me.pid, me.process_start.as_deref());
        let why = gone(&stale, now, &me.host).unwrap_or_default();
        assert!(why.contains("heartbeat"), "{why}");
    }

    #[test]
    fn a_pid_reused_by_another_process_or_free_is_gone_on_this_host_only() {
        let me = Owner::this_process();
        let now = now_ms();
        let reused = row(now, &me.host, me.pid, Some("1"));
        let why = gone(&reused, now, &me.host).unwrap_or_default();
        assert!(why.contains("no longer exists"), "{why}");
        // On another host the pid cannot be checked: only the heartbeat decides.
        assert_eq!(gone(&reused, now, "elsewhere.example"), None);
        // A start time that was never known cannot be checked either.
        assert_eq!(gone(&row(now, &me.host, me.pid, None), now, &me.host), None);
    }
}
