-- The workflow queue of `thinkers submit` / `thinkers worker` and the response cache that keeps a
-- replayed workflow from paying twice for model calls (PostgreSQL only: the embedded SQLite
-- default runs one process and needs neither).

-- One row per submitted workflow. A worker claims a row (FOR UPDATE SKIP LOCKED) by setting
-- `worker`, `attempt` and `lease_until` (the database's clock); it extends the lease with
-- heartbeats. A row whose lease has passed is claimed again by any worker. `attempt` fences the
-- writes of a worker that lost its lease: they name the attempt they belong to.
CREATE TABLE workflow_queue (
    id              TEXT PRIMARY KEY NOT NULL,
    queue           TEXT NOT NULL,
    name            TEXT NOT NULL,
    input           TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempt         BIGINT NOT NULL DEFAULT 0,
    max_attempts    BIGINT NOT NULL,
    worker          TEXT,
    lease_until     TIMESTAMPTZ,
    claimed_at_ms   BIGINT,
    run_workflow    TEXT,
    output          TEXT,
    error           TEXT,
    submitted_at_ms BIGINT NOT NULL,
    finished_at_ms  BIGINT
);

CREATE INDEX workflow_queue_claim ON workflow_queue (queue, status, id);

-- Model answers by SHA-256 of endpoint and exact body; the first answer stored wins.
CREATE TABLE response_cache (
    key          BYTEA PRIMARY KEY NOT NULL,
    entry        TEXT NOT NULL,
    response     TEXT NOT NULL,
    workflow     TEXT NOT NULL,
    job          TEXT NOT NULL,
    stored_at_ms BIGINT NOT NULL
);

-- One row per model call answered from the cache.
CREATE TABLE response_cache_hits (
    id       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key      BYTEA NOT NULL,
    workflow TEXT NOT NULL,
    job      TEXT NOT NULL,
    at_ms    BIGINT NOT NULL
);

CREATE INDEX response_cache_hits_workflow ON response_cache_hits (workflow);
