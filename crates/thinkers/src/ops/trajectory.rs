//! The trajectory of a workflow: its jobs as a tree, in the order they ran.
//!
//! Step ordinals are per parent (see [`crate::job::context`](thinkers_core::job::context)), so neither a flat sort by ordinal
//! (ordinals of different parents collide) nor a flat sort by start time (parallel branches
//! interleave) shows what happened. [`Trajectory::build`] instead walks the parent links depth
//! first and orders each parent's children by (ordinal, start time):
//!
//! * children with an ordinal come first, by ordinal; children sharing an ordinal ran in
//!   parallel and are ordered by start time;
//! * children without an ordinal (submitted through a raw door) come after, by start time;
//! * the job id (a time-ordered uuid v7) breaks the remaining ties, so the order is total.
//!
//! A job whose parent is not among the rows is treated as a root; roots are ordered by start
//! time (an orphan's ordinal counts steps of a parent that is not shown). Rows whose parent
//! links form a cycle (only corrupt data can do that) are still shown, each cycle broken at its
//! earliest job.
//!
//! The rows come from any store through [`JobRecord`]: the SQLite store returns them directly and
//! [`MemoryRecorder::records`] converts what an in-memory recorder holds.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::{self, Write as _};

use crate::job::JobId;
#[cfg(doc)]
use crate::record::MemoryRecorder;
use crate::record::{JobRecord, JobStatus};

/// The longest error text [`Trajectory::render`] shows, in characters.
const ERROR_WIDTH: usize = 160;

/// The sibling order of the trajectory: ordinal first (unstamped last), then start time, then
/// id.
fn sibling_order(a: &JobRecord, b: &JobRecord) -> Ordering {
    (a.ordinal.is_none(), a.ordinal, a.started_at_ms, a.id).cmp(&(
        b.ordinal.is_none(),
        b.ordinal,
        b.started_at_ms,
        b.id,
    ))
}

/// One line of a trajectory: a job and its place in the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrajectoryEntry {
    /// The job.
    pub record: JobRecord,
    /// Its depth: 0 for a root, 1 for a root's child, and so on.
    pub depth: usize,
    /// Whether it is the last of its siblings (roots: the last root).
    pub last_sibling: bool,
}

/// A workflow's jobs in depth-first order, each parent's children ordered by
/// (ordinal, start time). See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trajectory {
    entries: Vec<TrajectoryEntry>,
}

impl Trajectory {
    /// Build the tree from job rows in any order.
    pub fn build(rows: Vec<JobRecord>) -> Self {
        let n = rows.len();
        let mut index: HashMap<JobId, usize> = HashMap::with_capacity(n);
        for (i, row) in rows.iter().enumerate() {
            index.entry(row.id).or_insert(i);
        }
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut roots = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            match row.parent.and_then(|p| index.get(&p).copied()) {
                Some(p) if p != i => children[p].push(i),
                _ => roots.push(i),
            }
        }
        let order = |a: &usize, b: &usize| sibling_order(&rows[*a], &rows[*b]);
        let by_start = |a: &usize, b: &usize| {
            let (a, b) = (&rows[*a], &rows[*b]);
            (a.started_at_ms, a.id).cmp(&(b.started_at_ms, b.id))
        };
        roots.sort_by(by_start);
        for list in &mut children {
            list.sort_by(order);
        }

        let mut visited = vec![false; n];
        let mut placed: Vec<(usize, usize, bool)> = Vec::with_capacity(n);
        let root_count = roots.len();
        for (k, &root) in roots.iter().enumerate() {
            walk(
                root,
                k + 1 == root_count,
                &children,
                &mut visited,
                &mut placed,
            );
        }
        if placed.len() < n {
            // Only rows in a parent cycle are left; break each cycle at its earliest job.
            let mut rest: Vec<usize> = (0..n).filter(|&i| !visited[i]).collect();
            rest.sort_by(by_start);
            for i in rest {
                if !visited[i] {
                    walk(i, true, &children, &mut visited, &mut placed);
                }
            }
        }

        let mut slots: Vec<Option<JobRecord>> = rows.into_iter().map(Some).collect();
        let entries = placed
            .into_iter()
            .filter_map(|(i, depth, last_sibling)| {
                slots[i].take().map(|record| TrajectoryEntry {
                    record,
                    depth,
                    last_sibling,
                })
            })
            .collect();
        Self { entries }
    }

    /// The entries in depth-first order.
    pub fn entries(&self) -> &[TrajectoryEntry] {
        &self.entries
    }

    /// How many jobs the trajectory holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no job.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The tree as text, one job per line: class, `#ordinal` (`#-` when unstamped), status,
    /// duration, and for a job that did not succeed its error on one line.
    ///
    /// ```text
    /// review #- failed 2.4s: external service `pubmed` failed at efetch: HTTP 503
    /// ├─ plan #1 succeeded 310ms
    /// └─ fetch #2 failed 2.0s: external service `pubmed` failed at efetch: HTTP 503
    /// ```
    pub fn render(&self) -> String {
        let mut out = String::new();
        // For each depth from 1 up: whether the ancestor at that depth has later siblings.
        let mut open: Vec<bool> = Vec::new();
        for entry in &self.entries {
            if entry.depth == 0 {
                open.clear();
            } else {
                open.truncate(entry.depth - 1);
                for &more in &open {
                    out.push_str(if more { "│  " } else { "   " });
                }
                out.push_str(if entry.last_sibling {
                    "└─ "
                } else {
                    "├─ "
                });
                open.push(!entry.last_sibling);
            }
            write_line(&mut out, &entry.record);
            out.push('\n');
        }
        out
    }
}

impl fmt::Display for Trajectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

/// Depth-first walk from `root`, appending `(index, depth, last_sibling)`. Iterative, so a deep
/// tree cannot exhaust the stack; a visited set keeps a corrupt cycle from looping.
fn walk(
    root: usize,
    root_last: bool,
    children: &[Vec<usize>],
    visited: &mut [bool],
    placed: &mut Vec<(usize, usize, bool)>,
) {
    let mut stack = vec![(root, 0_usize, root_last)];
    while let Some((i, depth, last)) = stack.pop() {
        if visited[i] {
            continue;
        }
        visited[i] = true;
        placed.push((i, depth, last));
        let pending: Vec<usize> = children[i]
            .iter()
            .copied()
            .filter(|&c| !visited[c])
            .collect();
        let count = pending.len();
        for (k, &c) in pending.iter().enumerate().rev() {
            stack.push((c, depth + 1, k + 1 == count));
        }
    }
}

fn write_line(out: &mut String, r: &JobRecord) {
    // Writing to a String cannot fail.
    let _ = write!(out, "{} #", r.class);
    match r.ordinal {
        Some(n) => {
            let _ = write!(out, "{n}");
        }
        None => out.push('-'),
    }
    let _ = write!(out, " {}", r.status.as_str());
    if let Some(ms) = r.duration_ms() {
        out.push(' ');
        out.push_str(&format_duration(ms));
    }
    if r.attempts > 1 {
        let _ = write!(out, " ({} attempts)", r.attempts);
    }
    if r.status != JobStatus::Succeeded
        && let Some(err) = r.error.as_deref()
    {
        out.push_str(": ");
        out.push_str(&one_line(err, ERROR_WIDTH));
    }
}

/// `850ms`, `2.4s`.
fn format_duration(ms: i64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        // Precision loss past 2^53 ms is irrelevant for a display.
        #[allow(clippy::cast_precision_loss)]
        let secs = ms as f64 / 1000.0;
        format!("{secs:.1}s")
    }
}

/// The first non-empty line of `text`, cut to `width` characters with an ellipsis.
fn one_line(text: &str, width: usize) -> String {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    let first = first.unwrap_or("");
    let more_lines = text.trim().lines().nth(1).is_some();
    let mut line: String = first.chars().take(width).collect();
    if first.chars().count() > width || more_lines {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{JobEnd, JobStart, MemoryRecorder, Recorder};

    fn id(n: u128) -> JobId {
        JobId(uuid::Uuid::from_u128(n))
    }

    fn rec(n: u128, parent: Option<u128>, class: &str, ordinal: Option<u32>, at: i64) -> JobRecord {
        JobRecord {
            id: id(n),
            parent: parent.map(id),
            workflow: id(1),
            class: class.to_owned(),
            ordinal,
            status: JobStatus::Succeeded,
            error_kind: None,
            error: None,
            started_at_ms: at,
            ended_at_ms: Some(at + 5),
            attempts: 1,
        }
    }

    fn classes(t: &Trajectory) -> Vec<(&str, usize)> {
        t.entries()
            .iter()
            .map(|e| (e.record.class.as_str(), e.depth))
            .collect()
    }

    /// A workflow whose correct order disagrees with both flat sorts.
    fn nested_rows() -> Vec<JobRecord> {
        vec![
            // Given out of order on purpose.
            rec(9, Some(2), "b_child", Some(1), 150),
            rec(4, Some(1), "fan_b", Some(2), 112),
            rec(1, None, "root", None, 100),
            rec(3, Some(1), "fan_a", Some(2), 111),
            rec(5, Some(3), "a_step2", Some(2), 130),
            rec(6, Some(3), "a_step1", Some(1), 120),
            rec(2, Some(1), "prepare", Some(1), 101),
            rec(7, Some(1), "raw", None, 105),
            rec(8, Some(1), "finish", Some(3), 200),
            rec(10, Some(4), "b_only", Some(1), 113),
        ]
    }

    #[test]
    fn children_follow_ordinal_then_start_time_depth_first() {
        let t = Trajectory::build(nested_rows());
        assert_eq!(
            classes(&t),
            vec![
                ("root", 0),
                ("prepare", 1),
                ("b_child", 2),
                ("fan_a", 1),
                ("a_step1", 2),
                ("a_step2", 2),
                ("fan_b", 1),
                ("b_only", 2),
                ("finish", 1),
                ("raw", 1),
            ]
        );
        // A flat sort by ordinal or by start time would not give this order.
        let mut by_ordinal = nested_rows();
        by_ordinal.sort_by_key(|r| (r.ordinal, r.started_at_ms));
        let mut by_start = nested_rows();
        by_start.sort_by_key(|r| r.started_at_ms);
        let tree: Vec<JobId> = t.entries().iter().map(|e| e.record.id).collect();
        assert_ne!(tree, by_ordinal.iter().map(|r| r.id).collect::<Vec<_>>());
        assert_ne!(tree, by_start.iter().map(|r| r.id).collect::<Vec<_>>());
    }

    #[test]
    fn parallel_siblings_sharing_an_ordinal_are_ordered_by_start_time() {
        let rows = vec![
            rec(1, None, "root", None, 0),
            rec(2, Some(1), "late", Some(1), 30),
            rec(3, Some(1), "early", Some(1), 10),
            rec(4, Some(1), "middle", Some(1), 20),
        ];
        let t = Trajectory::build(rows);
        let order: Vec<&str> = t
            .entries()
            .iter()
            .map(|e| e.record.class.as_str())
            .collect();
        assert_eq!(order, ["root", "early", "middle", "late"]);
    }

    #[test]
    fn renders_an_indented_tree() {
        let mut rows = nested_rows();
        for r in &mut rows {
            if r.class == "fan_b" {
                r.status = JobStatus::Failed;
                r.error = Some("system failure in test: boom\nsecond line".into());
                r.ended_at_ms = Some(r.started_at_ms + 2_400);
            }
        }
        let text = Trajectory::build(rows).render();
        let expected = "\
root #- succeeded 5ms
├─ prepare #1 succeeded 5ms
│  └─ b_child #1 succeeded 5ms
├─ fan_a #2 succeeded 5ms
│  ├─ a_step1 #1 succeeded 5ms
│  └─ a_step2 #2 succeeded 5ms
├─ fan_b #2 failed 2.4s: system failure in test: boom…
│  └─ b_only #1 succeeded 5ms
├─ finish #3 succeeded 5ms
└─ raw #- succeeded 5ms
";
        assert_eq!(text, expected);
    }

    #[test]
    fn orphans_become_roots_and_cycles_are_broken() {
        let rows = vec![
            rec(5, Some(99), "orphan", Some(2), 50),
            rec(1, None, "root", None, 10),
            rec(2, Some(1), "child", Some(1), 11),
            // A corrupt cycle: 7 ↔ 8.
            rec(7, Some(8), "cycle_a", Some(1), 70),
            rec(8, Some(7), "cycle_b", Some(1), 80),
        ];
        let t = Trajectory::build(rows);
        assert_eq!(
            classes(&t),
            vec![
                ("root", 0),
                ("child", 1),
                ("orphan", 0),
                ("cycle_a", 0),
                ("cycle_b", 1),
            ]
        );
        let text = t.render();
        assert!(text.contains("orphan #2 succeeded"));
        assert!(text.contains("└─ cycle_b #1"));
    }

    #[test]
    fn running_and_long_errors_render_on_one_line() {
        let mut r = rec(1, None, "root", None, 0);
        r.status = JobStatus::Running;
        r.ended_at_ms = None;
        let mut f = rec(2, Some(1), "slow", Some(1), 0);
        f.status = JobStatus::TimedOut;
        f.error = Some("x".repeat(500));
        let text = Trajectory::build(vec![r, f]).render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "root #- running");
        assert!(lines[1].starts_with("└─ slow #1 timed_out 5ms: xxx"));
        assert!(lines[1].ends_with('…'));
        assert!(lines[1].chars().count() < 200);
    }

    #[test]
    fn memory_recorder_rows_convert() {
        let m = MemoryRecorder::new();
        m.job_started(JobStart {
            id: id(1),
            parent: None,
            workflow: id(1),
            class: "root".into(),
            ordinal: None,
            started_at_ms: 10,
        });
        m.job_started(JobStart {
            id: id(2),
            parent: Some(id(1)),
            workflow: id(1),
            class: "child".into(),
            ordinal: Some(1),
            started_at_ms: 11,
        });
        m.job_finished(JobEnd {
            id: id(2),
            status: JobStatus::Failed,
            error_kind: Some("system".into()),
            error: Some("boom".into()),
            ended_at_ms: 1_511,
            attempts: 2,
        });
        let records = m.records();
        assert_eq!(records[0].status, JobStatus::Running);
        assert_eq!(records[0].attempts, 0);
        assert_eq!(records[1].duration_ms(), Some(1_500));
        assert_eq!(records[1].attempts, 2);
        let text = Trajectory::build(records).render();
        assert_eq!(
            text,
            "root #- running\n└─ child #1 failed 1.5s (2 attempts): boom\n"
        );
    }
}
