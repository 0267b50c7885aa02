//! Tests of the SQLite store.
