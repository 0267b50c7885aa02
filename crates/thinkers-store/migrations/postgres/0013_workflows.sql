-- The PostgreSQL lease queue retired: Restate runs the workflows, and this table keeps their
-- record (what `thinkers status` reads). A row the queue held that no worker finished can no
-- longer run: it is failed with a reason that says so, rather than left `queued` for ever.
UPDATE workflow_queue
SET status = 'failed',
    error = 'the PostgreSQL workflow queue was retired before this workflow finished; submit it again (it now runs on Restate)',
    finished_at_ms = (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT
WHERE status IN ('queued', 'running', 'awaiting_approval') AND queue NOT LIKE 'restate:%';

ALTER TABLE workflow_queue RENAME TO workflows;
ALTER INDEX workflow_queue_pkey RENAME TO workflows_pkey;
DROP INDEX workflow_queue_claim;
ALTER TABLE workflows DROP COLUMN queue, DROP COLUMN max_attempts, DROP COLUMN lease_until;
ALTER TABLE workflows RENAME COLUMN claimed_at_ms TO started_at_ms;
CREATE INDEX workflows_status ON workflows (status);
