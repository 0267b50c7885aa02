//! [`PgSteps`]: the journal and the approvals on PostgreSQL (the statements and the body are
//! shared with SQLite, see `store/steps.rs`). A decision also puts the run's workflow back on
//! its queue once no call of the run is still pending.

use super::{PgStore, pg_error};
use crate::Result;

/// A decided run goes back on its queue when nothing of it is pending any more.
const REQUEUE_SQL: &str = "UPDATE workflow_queue SET status = 'queued', error = NULL \
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

    /// After a decision: queue the run's workflow again when nothing of it is pending (what
    /// `thinkers status` then shows). Should a worker park the run at the same moment with a
    /// stale view, the claim statement takes a parked workflow with nothing pending as well, so
    /// it never stays parked.
    async fn after_decision(&self, run: &str) -> Result<()> {
        sqlx::query(REQUEUE_SQL)
            .bind(run)
            .execute(self.pool())
            .await
            .map_err(|e| pg_error("requeue a decided workflow", e))?;
        Ok(())
    }
}

crate::store::steps::steps_queries!(PgSteps, super::pg_error);
