//! Payload logging: whether model payloads may appear in logs, and wrappers that enforce it.
//!
//! Off unless the user turns it on, with [`set_payload_logging`] (the CLI's `--log-payloads`) or
//! the environment variable [`PAYLOADS_ENV`] (`1`, `true`, `yes` or `on`). The model layer logs a
//! request or response body only through [`Payload`], which prints the body when payload
//! logging is on and only its size otherwise. Credentials go through [`Secret`], which never
//! prints its value, payload logging or not.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that turns payload logging on when no explicit setting was made.
pub const PAYLOADS_ENV: &str = "THINKERS_LOG_PAYLOADS";

const UNSET: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

static PAYLOADS: AtomicU8 = AtomicU8::new(UNSET);

/// Whether model payloads (request and response bodies) may be logged. The first call without
/// an explicit [`set_payload_logging`] reads [`PAYLOADS_ENV`]; the answer is then cached.
pub fn payload_logging_enabled() -> bool {
    match PAYLOADS.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            let on = std::env::var(PAYLOADS_ENV).is_ok_and(|v| is_truthy(&v));
            // A concurrent explicit setting wins over the environment.
            let _ = PAYLOADS.compare_exchange(
                UNSET,
                if on { ON } else { OFF },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            PAYLOADS.load(Ordering::Relaxed) == ON
        }
    }
}

/// Turn payload logging on or off for the whole process, overriding [`PAYLOADS_ENV`].
pub fn set_payload_logging(on: bool) {
    PAYLOADS.store(if on { ON } else { OFF }, Ordering::Relaxed);
}

fn is_truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

/// A model payload for a log field: `tracing::debug!(body = %Payload(&body), "request")`.
///
/// Formats as the payload itself when [`payload_logging_enabled`], and as
/// `<payload withheld: N bytes>` otherwise. The check happens when the field is formatted, so a
/// log line that no subscriber wants costs nothing.
#[derive(Clone, Copy)]
pub struct Payload<'a>(pub &'a str);

impl fmt::Display for Payload<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if payload_logging_enabled() {
            f.write_str(self.0)
        } else {
            write!(f, "<payload withheld: {} bytes>", self.0.len())
        }
    }
}

impl fmt::Debug for Payload<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if payload_logging_enabled() {
            fmt::Debug::fmt(self.0, f)
        } else {
            fmt::Display::fmt(self, f)
        }
    }
}

/// A credential (an API key, an authorization header). Its `Debug` and `Display` never show the
/// value, so a struct holding one can derive `Debug` safely; [`Secret::expose`] hands the value
/// to the one place that sends it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself, for the request that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_withheld_unless_turned_on_and_secrets_always() {
        // One test owns the process-wide switch, so the order below is deterministic.
        set_payload_logging(false);
        assert!(!payload_logging_enabled());
        let body = r#"{"messages":[{"role":"user","content":"private text"}]}"#;
        let shown = format!("{} {:?}", Payload(body), Payload(body));
        assert!(!shown.contains("private text"), "{shown}");
        assert!(shown.contains(&format!("withheld: {} bytes", body.len())));
        set_payload_logging(true);
        assert!(payload_logging_enabled());
        assert_eq!(Payload(body).to_string(), body);
        let key = Secret::new("sk-live-0123456789");
        let shown = format!("{key} {key:?}");
        assert!(!shown.contains("sk-live"), "{shown}");
        assert_eq!(key.expose(), "sk-live-0123456789");
        set_payload_logging(false);
        assert!(is_truthy(" YES ") && is_truthy("1") && !is_truthy("0") && !is_truthy(""));
    }
}
