//! [`PgRecorder`]: the batching recorder ([`crate::batch`]) over a [`PgStore`].

use super::{PgStore, is_transient, pg_error};
use crate::sink::{batch_sink, recorder_type};

batch_sink!(
    PgStore,
    sqlx::Postgres,
    "postgres",
    "BEGIN",
    pg_error,
    is_transient
);

recorder_type!(
    /// A [`Recorder`](thinkers::record::Recorder) writing to a [`PgStore`] in batches. Cheap to
    /// clone; clones share the queue and the writer task.
    PgRecorder,
    PgStore
);
