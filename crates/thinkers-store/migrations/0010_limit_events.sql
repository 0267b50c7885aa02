-- Admission events (`record::LimitEvent`): each throttle a call met (the wait the provider asked
-- and the wait applied) and each change of a budget's standing rate per axis (its first standing
-- in a process, then changes by more than a percent or of source), for the runs explorer.
-- Same rules as 0001: types PostgreSQL accepts unchanged (postgres/0010_limit_events.sql).
-- The columns of the other kind are NULL.

CREATE TABLE limit_events (
    at_ms              BIGINT NOT NULL,    -- milliseconds since the Unix epoch
    budget             TEXT NOT NULL,      -- `model:<entry>` for a model entry
    entry              TEXT,               -- the catalog entry, when known
    job                TEXT NOT NULL,      -- the call that met the event
    workflow           TEXT NOT NULL,
    kind               TEXT NOT NULL,      -- `throttle` or `rate`
    status             BIGINT,             -- throttle: the HTTP status its detail names
    asked_ms           BIGINT,             -- throttle: the wait the provider asked, if it said
    waited_ms          BIGINT,             -- throttle: the wait applied (after the caps)
    detail             TEXT,               -- throttle: one redacted line, at most 300 chars
    axis               TEXT,               -- rate: `tpm`, `itpm`, `otpm` or `rpm`
    per_minute         DOUBLE PRECISION,   -- rate: the rate paced at, per minute
    catalog_per_minute DOUBLE PRECISION,   -- rate: the catalog's figure, if any
    source             TEXT                -- rate: `catalog`, `header` or `throttle`
);

CREATE INDEX limit_events_at ON limit_events (at_ms);
CREATE INDEX limit_events_budget ON limit_events (budget, at_ms);
