//! [`HostConfig`]: the host's bounds and its access token.

use std::time::Duration;

/// The name of the cookie the page is let in with (see [`HostToken`]).
pub const TOKEN_COOKIE: &str = "thinkers_token";

/// The bearer token a host requires. Its `Debug` never shows it, and the host compares it in
/// constant time.
///
/// A client sends it as `Authorization: Bearer TOKEN`. A browser opens `/?token=TOKEN` once:
/// the host answers with an `HttpOnly`, `SameSite=Strict` cookie ([`TOKEN_COOKIE`]) holding it
/// and a redirect to `/`, so the token leaves the address bar and history, and the page's
/// requests and event streams (an `EventSource` cannot set headers) carry the cookie. A
/// `?token=` anywhere else is not accepted.
#[derive(Clone, PartialEq, Eq)]
pub struct HostToken(String);

impl HostToken {
    /// The fewest characters a token may have. A token is all that stands between the network
    /// and the operator's model budget, and a short one is guessed: 16 characters of hex are 64
    /// bits. [`HostToken::generate`] makes a longer one.
    pub const MIN_CHARS: usize = 16;

    /// A token; one shorter than [`HostToken::MIN_CHARS`], or with characters a cookie cannot
    /// carry (whitespace, `;`, `,`, `"`, `\`, control characters), is refused naming `token`
    /// (never its value).
    pub fn new(token: impl Into<String>) -> thinkers::Result<Self> {
        let token = token.into();
        let bad = token
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, ';' | ',' | '"' | '\\'));
        if bad {
            return Err(thinkers::Error::invalid_input(
                "token",
                None,
                "a host token must be printable text without spaces, ';', ',', '\"' or '\\'",
            ));
        }
        if token.chars().count() < Self::MIN_CHARS {
            return Err(thinkers::Error::invalid_input(
                "token",
                None,
                format!(
                    "a host token must be at least {} characters long",
                    Self::MIN_CHARS
                ),
            ));
        }
        Ok(Self(token))
    }

    /// A fresh random token: 64 hex digits holding 244 random bits (two version-4 UUIDs, whose
    /// bits come from a cryptographically secure generator seeded by the operating system; only
    /// their version and variant bits are fixed).
    pub fn generate() -> Self {
        Self(format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        ))
    }

    /// Whether `offered` is this token, compared in constant time (both sides are hashed to
    /// SHA-256 first, so the time does not depend on where they differ or on their lengths).
    pub fn matches(&self, offered: &str) -> bool {
        use sha2::{Digest as _, Sha256};
        use subtle::ConstantTimeEq as _;
        let a = Sha256::digest(self.0.as_bytes());
        let b = Sha256::digest(offered.as_bytes());
        a[..].ct_eq(&b[..]).into()
    }

    /// The token itself, for the one place it must be shown: to the operator who asked for a
    /// generated one. Never put it in an error, a log line or a response body.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for HostToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HostToken(<withheld>)")
    }
}

/// Bounds of what the host accepts, and who it lets in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// The longest message accepted, in bytes of UTF-8.
    pub max_message_bytes: usize,
    /// The longest chat title accepted, in bytes.
    pub max_title_bytes: usize,
    /// The largest request body accepted, in bytes (a larger one is answered 413 with
    /// `{"error": …, "field": "body"}` before it is read in full).
    pub max_body_bytes: usize,
    /// How long a turn waits for a turn of the same chat running on another host sharing the
    /// database, before it is given up with an error event (PostgreSQL only).
    pub turn_wait: Duration,
    /// The bearer token every route requires (see [`HostToken`]); `None` lets in whoever
    /// reaches the port and names this machine, which [`super::ChatHost::start`] allows on a
    /// loopback address only: a request must then name a loopback host (`localhost`,
    /// `*.localhost`, `127.0.0.0/8`, `[::1]`) in its `Host`, so a web page that points its own
    /// domain at 127.0.0.1 (DNS rebinding) is refused (see the host's module docs).
    pub token: Option<HostToken>,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            max_message_bytes: 16 * 1024,
            max_title_bytes: 200,
            max_body_bytes: 256 * 1024,
            turn_wait: Duration::from_secs(120),
            token: None,
        }
    }
}
