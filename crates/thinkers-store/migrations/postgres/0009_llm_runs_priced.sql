-- PostgreSQL form of ../0009_llm_runs_priced.sql (the same statement): whether a model call's
-- cost is known; rows written before the column existed were priced.
ALTER TABLE llm_runs ADD COLUMN priced BOOLEAN NOT NULL DEFAULT TRUE;
