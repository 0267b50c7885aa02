-- Whether a model call's cost is known. A catalog entry may leave out its prices; the cost of
-- its calls is then unknown, stored as `priced = FALSE` with `cost` 0 (a placeholder no reader
-- counts: the record queries turn it into "unknown"). Rows written before this column existed
-- came from entries that had to be priced, hence the default.
--
-- Additive on purpose: `cost` stays NOT NULL (SQLite cannot relax a column without rebuilding
-- the table), and the statement is the same on PostgreSQL (see postgres/0009_llm_runs_priced.sql).
ALTER TABLE llm_runs ADD COLUMN priced BOOLEAN NOT NULL DEFAULT TRUE;
