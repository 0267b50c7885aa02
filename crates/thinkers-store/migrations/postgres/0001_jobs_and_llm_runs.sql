-- PostgreSQL form of ../0001_jobs_and_llm_runs.sql: same tables, columns and indexes.
--
-- Differences from the SQLite file: `llm_runs.id` is an identity column, and the small integer
-- columns (`ordinal`, `attempts`) are BIGINT so both backends decode them as i64.

CREATE TABLE jobs (
    id            TEXT PRIMARY KEY NOT NULL,
    parent        TEXT,
    workflow      TEXT,
    class         TEXT,
    ordinal       BIGINT,
    status        TEXT NOT NULL,
    error_kind    TEXT,
    error         TEXT,
    started_at_ms BIGINT,
    ended_at_ms   BIGINT,
    attempts      BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX jobs_workflow ON jobs (workflow);
CREATE INDEX jobs_parent ON jobs (parent);

CREATE TABLE llm_runs (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job              TEXT NOT NULL,
    workflow         TEXT NOT NULL,
    class            TEXT NOT NULL,
    entry            TEXT NOT NULL,
    model            TEXT NOT NULL,
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
