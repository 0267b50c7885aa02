-- Approvals bound to the arguments they cover, and pauses for calls whose outcome is unknown.
--
-- `kind` is `approval` (a person approves before the call runs) or `outcome_unknown` (the call
-- started and its process died before it finished). `arguments_hash` is SHA-256 of the call's
-- arguments as the model sent them: a decision covers that call only, and a replay whose call at
-- the same place differs asks again. Rows stored before this migration keep an empty hash and so
-- cover no call: the call they approved is asked again (their decision stays in the table).
-- `status` is pending, approved, denied, skipped or failed; `reason` holds a denial's or a
-- failure's reason, or the result a skipped call was answered with.
--
-- The table is rebuilt because its uniqueness changes (dropping the old one drops its indexes). The statements are the same on SQLite and
-- PostgreSQL.
CREATE TABLE approvals_bound (
    id              TEXT PRIMARY KEY NOT NULL,
    run             TEXT NOT NULL,
    place           TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    tool            TEXT NOT NULL,
    arguments       TEXT NOT NULL,   -- the call's arguments as JSON
    arguments_hash  TEXT NOT NULL,
    job             TEXT NOT NULL,   -- the thinker job that asked
    workflow        TEXT NOT NULL,   -- that job's workflow (root job id)
    read_only_scope BIGINT NOT NULL, -- 1 when the scope was read-only
    status          TEXT NOT NULL,
    reason          TEXT,
    requested_at_ms BIGINT NOT NULL,
    decided_at_ms   BIGINT,
    UNIQUE (run, place, call_id, kind, arguments_hash)
);

INSERT INTO approvals_bound (id, run, place, call_id, kind, tool, arguments, arguments_hash, job,
                       workflow, read_only_scope, status, reason, requested_at_ms, decided_at_ms)
SELECT id, run, place, call_id, 'approval', tool, arguments, '', job, workflow, read_only_scope,
       status, reason, requested_at_ms, decided_at_ms
FROM approvals;

DROP TABLE approvals;
ALTER TABLE approvals_bound RENAME TO approvals;

CREATE INDEX approvals_status ON approvals (status, requested_at_ms);
CREATE INDEX approvals_run ON approvals (run, status);
