-- Job rows and model-call rows: what the recorder writes and `thinkers trace` reads.
--
-- Kept to types and statements PostgreSQL accepts unchanged (TEXT, INTEGER, BIGINT,
-- DOUBLE PRECISION, BOOLEAN, CREATE INDEX). The one SQLite-specific phrase is the
-- `INTEGER PRIMARY KEY AUTOINCREMENT` of `llm_runs.id`; its PostgreSQL form is
-- `BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY`.
--
-- Later tables (conversations, chat turns) arrive as further numbered files.

-- One row per job. The start of a job inserts the row; its end updates it. An end that reaches
-- the store before its start inserts a partial row (no workflow, class or start time) which the
-- start completes, so the start-only columns are nullable.
CREATE TABLE jobs (
    id            TEXT PRIMARY KEY NOT NULL,  -- uuid v7, hyphenated
    parent        TEXT,                       -- the parent job, NULL for a workflow's root
    workflow      TEXT,                       -- the root job's id
    class         TEXT,
    ordinal       INTEGER,                    -- the step ordinal under the parent, if stamped
    status        TEXT NOT NULL,              -- running, succeeded, failed, cancelled, timed_out
    error_kind    TEXT,
    error         TEXT,
    started_at_ms BIGINT,                     -- milliseconds since the Unix epoch
    ended_at_ms   BIGINT,
    attempts      INTEGER NOT NULL DEFAULT 0
);

CREATE INDEX jobs_workflow ON jobs (workflow);
CREATE INDEX jobs_parent ON jobs (parent);

-- One row per model call.
CREATE TABLE llm_runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    job              TEXT NOT NULL,
    workflow         TEXT NOT NULL,
    class            TEXT NOT NULL,
    entry            TEXT NOT NULL,             -- the catalog entry id
    model            TEXT NOT NULL,             -- the provider's model name
    input_tokens     BIGINT NOT NULL,
    output_tokens    BIGINT NOT NULL,
    reasoning_tokens BIGINT NOT NULL,
    cached_tokens    BIGINT NOT NULL,
    output_budget    BIGINT NOT NULL,
    latency_ms       BIGINT NOT NULL,
    stop_reason      TEXT NOT NULL,
    cost             DOUBLE PRECISION NOT NULL,
    currency         TEXT NOT NULL,
    at_ms            BIGINT NOT NULL,
    escalated        BOOLEAN NOT NULL DEFAULT FALSE
);

CREATE INDEX llm_runs_workflow ON llm_runs (workflow);
CREATE INDEX llm_runs_class ON llm_runs (class);
CREATE INDEX llm_runs_entry ON llm_runs (entry);
