-- Chats of the chat host: one row per chat, naming the durable conversation that holds its
-- messages (NULL until the chat's first turn has saved one).
--
-- Same rules as 0001: types and statements PostgreSQL accepts unchanged.

CREATE TABLE chats (
    id              TEXT PRIMARY KEY NOT NULL,  -- uuid v7
    title           TEXT NOT NULL,
    conversation_id TEXT,                       -- conversations.id, once the first turn saved it
    created_at_ms   BIGINT NOT NULL,            -- milliseconds since the Unix epoch
    updated_at_ms   BIGINT NOT NULL
);

CREATE INDEX chats_by_update ON chats (updated_at_ms);
