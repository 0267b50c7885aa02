-- Durable conversations: one head row per conversation and one row per message, so appending a
-- message writes one row instead of rewriting the conversation.
--
-- Same rules as 0001: types and statements PostgreSQL accepts unchanged. JSON is stored as TEXT
-- (JSONB on PostgreSQL would also do).

CREATE TABLE conversations (
    id            TEXT PRIMARY KEY NOT NULL,   -- uuid v7 (or a caller's own id)
    objective     TEXT NOT NULL,               -- JSON: the slots, in the order first written
    stamps        TEXT NOT NULL,               -- JSON: grade, depth, output, window, trigger
    state         TEXT NOT NULL,               -- JSON object: what survives compaction
    version       BIGINT NOT NULL,             -- bumped by every write; optimistic versioning
    durable       BOOLEAN NOT NULL DEFAULT TRUE,
    message_count BIGINT NOT NULL,             -- rows in conversation_messages for this id
    created_at_ms BIGINT NOT NULL,             -- milliseconds since the Unix epoch
    updated_at_ms BIGINT NOT NULL
);

CREATE TABLE conversation_messages (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq             BIGINT NOT NULL,           -- 0-based position in the conversation
    message         TEXT NOT NULL,             -- JSON: role and content blocks, verbatim
    PRIMARY KEY (conversation_id, seq)
);
