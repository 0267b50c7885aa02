-- Which process holds which running job, so a process that dies without writing its jobs' ends
-- (SIGKILL, a crash, a power loss) leaves rows the next process can close.
--
-- Each recorder registers one owner row and beats its heartbeat; every job row it writes names
-- it. Opening a store closes the running jobs of owners that are gone: their heartbeat is
-- stale, or (same host) their process no longer exists. Those jobs end `interrupted`.

CREATE TABLE owners (
    id              TEXT PRIMARY KEY NOT NULL,  -- uuid v7, hyphenated
    host            TEXT NOT NULL,              -- the host name the process ran on
    pid             BIGINT NOT NULL,            -- its process id there
    process_start   TEXT,                       -- the kernel's start time of the process, when known
    started_at_ms   BIGINT NOT NULL,
    heartbeat_at_ms BIGINT NOT NULL,
    ended_at_ms     BIGINT,                     -- set by a clean close, or by the sweep that found it gone
    end_reason      TEXT
);

CREATE INDEX owners_open ON owners (ended_at_ms);

ALTER TABLE jobs ADD COLUMN owner TEXT;

CREATE INDEX jobs_status ON jobs (status);
