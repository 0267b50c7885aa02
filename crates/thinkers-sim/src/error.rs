//! The error type of the crate: what can go wrong when configuring, starting or running the sim.
//!
//! Errors the sim *serves* to its clients (400, 404, 429…) are not Rust errors: they are wire
//! answers, built by the dialect modules.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything that can fail while configuring, starting or running a simulated provider.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The listening socket could not be bound (port taken, no permission…).
    #[error("cannot bind the simulated provider to {addr}")]
    Bind {
        /// The address that was asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The server stopped with an I/O error while serving.
    #[error("the simulated provider stopped with an I/O error")]
    Serve(#[source] std::io::Error),
    /// A configuration, catalog or script file could not be read.
    #[error("cannot read {path}")]
    ReadFile {
        /// The file that was asked for.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// A catalog or script written in TOML did not parse.
    #[error("invalid TOML in {what}")]
    Toml {
        /// What was being read (for example "catalog" or "script").
        what: &'static str,
        /// The parser's reason.
        #[source]
        source: toml::de::Error,
    },
    /// A configuration or script written in JSON did not parse.
    #[error("invalid JSON in {what}")]
    Json {
        /// What was being read (for example "fault rule" or "script").
        what: &'static str,
        /// The parser's reason.
        #[source]
        source: serde_json::Error,
    },
    /// The configuration parsed but breaks a rule (for example a latency range with min > max).
    #[error("invalid sim configuration: {0}")]
    InvalidConfig(String),
    /// A model's limit field has a value the sim cannot enforce (for example `rpm = 0`).
    #[error("invalid sim configuration: model `{model}`: {field} = {value}: {reason}")]
    InvalidLimit {
        /// The model whose field it is.
        model: String,
        /// The field, as configurations spell it (`rpm`, `limit_window_ms`…).
        field: &'static str,
        /// The value given.
        value: String,
        /// Why it cannot be used.
        reason: &'static str,
    },
    /// A `limit_shape` named no shape.
    #[error("invalid sim configuration: {0}")]
    UnknownLimitShape(#[from] crate::limits::UnknownLimitShape),
}

/// Shorthand for results whose error is [`SimError`].
pub type Result<T, E = SimError> = std::result::Result<T, E>;
