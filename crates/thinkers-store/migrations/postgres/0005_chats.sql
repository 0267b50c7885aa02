-- Chats of the chat host: one row per chat, naming the durable conversation that holds its
-- messages (NULL until the chat's first turn has saved one).
--
-- The SQLite migration of the same number, unchanged: its types and statements are PostgreSQL's
-- too. Number 0004 belongs to the workflow queue; sqlx applies every migration a database has not
-- seen, whatever its number, so the two may land in either order.

CREATE TABLE chats (
    id              TEXT PRIMARY KEY NOT NULL,  -- uuid v7
    title           TEXT NOT NULL,
    conversation_id TEXT,                       -- conversations.id, once the first turn saved it
    created_at_ms   BIGINT NOT NULL,            -- milliseconds since the Unix epoch
    updated_at_ms   BIGINT NOT NULL
);

CREATE INDEX chats_by_update ON chats (updated_at_ms);
