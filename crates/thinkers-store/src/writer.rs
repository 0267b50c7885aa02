//! [`SqliteRecorder`]: the batching recorder ([`super::batch`]) over a [`SqliteStore`].

use super::SqliteStore;
use super::sink::{batch_sink, recorder_type};
use super::sqlite::{db_error, is_transient};

batch_sink!(
    SqliteStore,
    sqlx::Sqlite,
    "sqlite",
    "BEGIN IMMEDIATE",
    db_error,
    is_transient
);

recorder_type!(
    /// A [`Recorder`](thinkers::record::Recorder) writing to a [`SqliteStore`] in batches. Cheap to
    /// clone; clones share the queue and the writer task.
    ///
    /// See the [module guarantees](crate) for what is durable when.
    SqliteRecorder,
    SqliteStore
);
