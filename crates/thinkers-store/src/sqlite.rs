//! Opening the SQLite store, and the one place sqlx errors become [`thinkers::Error`]s.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::SqliteSynchronous;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};

use thinkers::{Error, Result};

/// The embedded migrations (`crates/thinkers-store/migrations`).
static MIGRATOR: Migrator = sqlx::migrate!("./migrations");

/// How long a statement waits for another connection's lock before failing as busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections of a file-backed pool: the batch writer plus concurrent readers (WAL lets readers
/// run beside the writer).
const FILE_CONNECTIONS: u32 = 4;

/// The embedded store: one SQLite file (or an in-memory database for tests) with the migrations
/// applied. Cheap to clone; clones share the connection pool.
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    location: String,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Open (creating it if missing) the database at `target` and apply the migrations.
    ///
    /// `target` is a file path (`thinkers.db`, `/var/lib/app/runs.db`), a `sqlite:` URL
    /// (`sqlite://thinkers.db`, `sqlite:runs.db?mode=rwc`) or `sqlite::memory:` / `:memory:` for
    /// a private in-memory database, which lives on a single connection as long as the store.
    /// A file is opened in WAL mode with a busy timeout; missing parent directories are created.
    pub async fn open(target: &str) -> Result<Self> {
        let target = target.trim();
        let memory = is_memory(target);
        let options = if target == ":memory:" {
            SqliteConnectOptions::from_str("sqlite::memory:")
                .map_err(|e| invalid_target(target, &e))?
        } else if target.starts_with("sqlite:") {
            SqliteConnectOptions::from_str(target).map_err(|e| invalid_target(target, &e))?
        } else if target.is_empty() {
            return Err(Error::invalid_input(
                "database",
                Some(String::new()),
                "name a database file or a sqlite: URL",
            ));
        } else {
            SqliteConnectOptions::new().filename(target)
        };
        let options = options.create_if_missing(true).busy_timeout(BUSY_TIMEOUT);
        let pool = if memory {
            // An in-memory database disappears with its last connection: keep exactly one, forever.
            SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(options)
                .await
                .map_err(|e| db_error("open", e))?
        } else {
            create_parent_dir(options.get_filename()).await?;
            let options = options
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal);
            SqlitePoolOptions::new()
                .max_connections(FILE_CONNECTIONS)
                .connect_with(options)
                .await
                .map_err(|e| db_error("open", e))?
        };
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|e| db_error("migrate", sqlx::Error::Migrate(Box::new(e))))?;
        tracing::debug!(location = target, "sqlite store open");
        let store = Self {
            pool,
            location: target.to_owned(),
        };
        super::owner::sweep_at_open(&store, "sqlite").await;
        Ok(store)
    }

    /// What the store was opened with (a path or a URL).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Close every connection, waiting for those in use to be returned. Queries after this fail.
    /// Flush any [`super::SqliteRecorder`] writing to this store first.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The connection pool.
    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

/// Whether `target` names an in-memory database (`:memory:`, `sqlite::memory:`,
/// `sqlite://:memory:`, or a URL with `mode=memory`).
fn is_memory(target: &str) -> bool {
    target == ":memory:"
        || target.starts_with("sqlite::memory:")
        || target.starts_with("sqlite://:memory:")
        || (target.starts_with("sqlite:") && target.contains("mode=memory"))
}

fn invalid_target(target: &str, err: &sqlx::Error) -> Error {
    Error::invalid_input("database", Some(target.to_owned()), err.to_string())
}

async fn create_parent_dir(file: &Path) -> Result<()> {
    let Some(parent) = file.parent() else {
        return Ok(());
    };
    if parent.as_os_str().is_empty() {
        return Ok(());
    }
    tokio::fs::create_dir_all(parent).await.map_err(|e| {
        Error::external(
            "sqlite",
            "create database directory",
            format!("{}: {e}", parent.display()),
        )
        .with_source(e)
    })
}

/// Map a sqlx error from `step` into the hierarchy: a row that does not decode or a value that
/// does not encode is our own bug ([`Error::System`]); everything else is the database failing
/// ([`Error::ExternalService`] naming `sqlite` and the step).
pub(crate) fn db_error(step: &str, err: sqlx::Error) -> Error {
    let detail = err.to_string();
    match err {
        sqlx::Error::Decode(_)
        | sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. }
        | sqlx::Error::TypeNotFound { .. }
        | sqlx::Error::Encode(_) => {
            Error::system(format!("sqlite store ({step})"), detail).with_source(err)
        }
        other => Error::external("sqlite", step, detail).with_source(other),
    }
}

/// Whether retrying the same work later may succeed: the database was busy or locked, the pool
/// had no free connection in time, or the file system hiccuped.
pub(crate) fn is_transient(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => db
            .code()
            .and_then(|c| c.parse::<i64>().ok())
            // The primary result code is the low byte of an extended code: 5 BUSY, 6 LOCKED.
            .is_some_and(|c| matches!(c & 0xff, 5 | 6)),
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) => true,
        _ => false,
    }
}

/// A stored value that does not fit the record type: corrupt data or a bug.
pub(crate) fn corrupt(what: &str, value: impl std::fmt::Display) -> Error {
    super::corrupt_in("sqlite", what, value)
}
