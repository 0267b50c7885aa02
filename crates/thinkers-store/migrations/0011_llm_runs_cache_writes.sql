-- The input tokens a model call wrote to the provider's prompt cache (Anthropic
-- `cache_creation_input_tokens`, Bedrock `cacheWriteInputTokens`, OpenAI `cache_write_tokens`),
-- beside `cached_tokens` (the input tokens read from it). Both are parts of `input_tokens`, which
-- counts every input token. Rows written before this column existed recorded no writes, hence
-- the default. The statement is the same on PostgreSQL (postgres/0011_llm_runs_cache_writes.sql).
ALTER TABLE llm_runs ADD COLUMN cache_write_tokens BIGINT NOT NULL DEFAULT 0;
