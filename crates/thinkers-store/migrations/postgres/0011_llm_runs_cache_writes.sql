-- PostgreSQL form of ../0011_llm_runs_cache_writes.sql: the identical statement (the input tokens
-- a model call wrote to the provider's prompt cache, a part of `input_tokens` like
-- `cached_tokens`, the tokens read from it).
ALTER TABLE llm_runs ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0;
