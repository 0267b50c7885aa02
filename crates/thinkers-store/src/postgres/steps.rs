//! [`PgSteps`]: the journal and the approvals on PostgreSQL (the statements and the body are
//! shared with SQLite, see `store/steps.rs`). A decision also marks the run's workflow `queued`
//! once no call of the run is still pending (its next round is about to start).

use super::{PgStore, pg_error};
use thinkers::Result;

/// A decided run's workflow is `queued` when nothing of it is pending any more.
const REQUEUE_SQL: &str = "UPDATE workflows SET status = 'queued', error = NULL \
     WHERE id = $1 AND status = 'awaiting_approval' \
     AND NOT EXISTS (SELECT 1 FROM approvals WHERE run = $1 AND status = 'pending')";

/// The journal and the approvals in a [`PgStore`]. Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct PgSteps {
    store: PgStore,
}

impl PgSteps {
    /// The step store in `store`'s database (its tables were created when it was opened).
    pub fn new(store: &PgStore) -> Self {
        Self {
            store: store.clone(),
        }
    }

    fn pool(&self) -> &sqlx::PgPool {
        self.store.pool()
    }

    /// After a decision: mark the run's workflow `queued` when nothing of it is pending (what
    /// `thinkers status` shows until its next round starts). Should the round park the run at
    /// the same moment with a stale view, the park reads the approvals in the same statement,
    /// so the row never stays parked with nothing pending.
    async fn after_decision(&self, run: &str) -> Result<()> {
        sqlx::query(REQUEUE_SQL)
            .bind(run)
            .execute(self.pool())
            .await
            .map_err(|e| pg_error("mark a decided workflow queued", e))?;
        Ok(())
    }
}

crate::steps::steps_queries!(PgSteps, super::pg_error);
