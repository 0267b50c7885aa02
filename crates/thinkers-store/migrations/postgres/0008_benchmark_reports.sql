-- Benchmark reports: what a finished benchmark found, kept so the runs explorer of
-- `thinkers serve` can show the table and the chart later. One row per benchmark job.
CREATE TABLE benchmark_reports (
    job      TEXT PRIMARY KEY NOT NULL,  -- the benchmark job's id
    workflow TEXT NOT NULL,              -- its workflow (the root job's id)
    report   TEXT NOT NULL,              -- the BenchmarkReport as JSON
    at_ms    BIGINT NOT NULL             -- when it was stored, milliseconds since the Unix epoch
);

CREATE INDEX benchmark_reports_at ON benchmark_reports (at_ms);
