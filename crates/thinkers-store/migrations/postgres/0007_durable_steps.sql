-- Durable steps and human approval.
--
-- `step_journal`: one row per finished tool call of a durable run, keyed by the run (a queue
-- workflow's id, or the key a program passed to `Runtime::run_durable`), the call's place in the
-- trajectory (the path of step ordinals and classes from the run's root to the calling job) and
-- the tool-call id. A replay of the run answers the call from here instead of running it again.
-- The first result stored wins.
CREATE TABLE step_journal (
    run             TEXT NOT NULL,
    place           TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    tool            TEXT NOT NULL,
    arguments_hash  TEXT NOT NULL,   -- SHA-256 of the arguments' JSON: a diverged replay misses
    outcome         TEXT NOT NULL,   -- {"output": …} or {"error": "…"}, as JSON
    job             TEXT NOT NULL,   -- the tool job that ran
    recorded_at_ms  BIGINT NOT NULL,
    PRIMARY KEY (run, place, call_id)
);

-- One row per tool call that waited for a person. `status` is pending, approved or denied.
CREATE TABLE approvals (
    id              TEXT PRIMARY KEY NOT NULL,
    run             TEXT NOT NULL,
    place           TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    tool            TEXT NOT NULL,
    arguments       TEXT NOT NULL,   -- the call's arguments as JSON
    job             TEXT NOT NULL,   -- the thinker job that asked
    workflow        TEXT NOT NULL,   -- that job's workflow (root job id)
    read_only_scope BIGINT NOT NULL, -- 1 when the scope was read-only
    status          TEXT NOT NULL,
    reason          TEXT,            -- why it was denied
    requested_at_ms BIGINT NOT NULL,
    decided_at_ms   BIGINT,
    UNIQUE (run, place, call_id)
);

CREATE INDEX approvals_status ON approvals (status, requested_at_ms);
CREATE INDEX approvals_run ON approvals (run, status);
