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
    /// A token; an empty or blank one, or one with characters a cookie cannot carry
    /// (whitespace, `;`, `,`, `"`, `\`, control characters), is refused naming `token`
    /// (without its value).
    pub fn new(token: impl Into<String>) -> crate::Result<Self> {
        let token = token.into();
        let bad = token.is_empty()
            || token.chars().any(|c| {
                c.is_whitespace() || c.is_control() || matches!(c, ';' | ',' | '"' | '\\')
            });
        if bad {
            return Err(crate::Error::invalid_input(
                "token",
                None,
                "a host token must be non-empty printable text without spaces, ';', ',', '\"' \
                 or '\\'",
            ));
        }
        Ok(Self(token))
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

    pub(crate) fn expose(&self) -> &str {
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
    /// The bearer token every route requires (see [`HostToken`]); `None` lets anyone who
    /// reaches the port in, which [`super::ChatHost::start`] allows on a loopback address only.
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
