-- Conversation compactions: one row each time a run's older turns were folded into a summary,
-- with the request size before and after. Same rules as 0001: types PostgreSQL accepts unchanged.

CREATE TABLE compactions (
    job                 TEXT NOT NULL,      -- the run whose conversation was compacted
    workflow            TEXT NOT NULL,
    conversation_id     TEXT NOT NULL,
    before_tokens       BIGINT NOT NULL,
    after_tokens        BIGINT NOT NULL,
    summarized_messages BIGINT NOT NULL,
    at_ms               BIGINT NOT NULL     -- milliseconds since the Unix epoch
);

CREATE INDEX compactions_workflow ON compactions (workflow);
