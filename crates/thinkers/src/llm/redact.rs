//! The one redaction point: every provider-originated text the client turns into an error or a
//! log line passes [`Redactor`], which removes the request's secrets (the values of its secret
//! headers, and a bearer token alone) from all of it, an error's source chain included.

use std::borrow::Cow;

use crate::Error;
use crate::error::BoxError;
use crate::llm::encoded::EncodedRequest;

/// The replacement of a secret in any text.
pub(crate) const REDACTED: &str = "<redacted>";

/// Removes a request's secrets from provider-originated text. The one redaction point: the
/// client passes every error it returns, and every text it logs, through it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Redactor {
    pub(crate) secrets: Vec<String>,
}

impl Redactor {
    /// The secrets of a request: the values of its secret headers, and a bearer token alone.
    pub(crate) fn for_request(enc: &EncodedRequest) -> Self {
        let mut secrets = Vec::new();
        for h in enc.headers.iter().filter(|h| h.is_secret()) {
            if let Some(signing) = h.signing() {
                secrets.extend(signing.secrets().map(str::to_owned));
                continue;
            }
            let v = h.raw_value().trim();
            if let Some(token) = v.strip_prefix("Bearer ") {
                secrets.push(token.trim().to_owned());
            }
            secrets.push(v.to_owned());
        }
        // Short values would blank out ordinary words; no real key is that short.
        secrets.retain(|s| s.len() >= 8);
        // The longest first, so a token inside a longer header value goes with it.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// `text` with every secret replaced.
    pub(crate) fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = Cow::Owned(out.replace(s.as_str(), REDACTED));
            }
        }
        out
    }

    fn owned(&self, text: &mut String) {
        if let Cow::Owned(clean) = self.text(text) {
            *text = clean;
        }
    }

    /// A source chain whose text holds a secret is replaced by its redacted text.
    fn source(&self, source: &mut Option<BoxError>) {
        let Some(s) = source.as_ref() else {
            return;
        };
        let text = chain(s.as_ref());
        if let Cow::Owned(clean) = self.text(&text) {
            *source = Some(clean.into());
        }
    }

    /// `e` with every secret removed from every text it carries.
    pub(crate) fn error(&self, mut e: Error) -> Error {
        if self.secrets.is_empty() {
            return e;
        }
        e.visit_texts(&mut |t| self.owned(t), &mut |s| self.source(s));
        e
    }
}

/// An error and its causes, outermost first, each said once.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let said = c.to_string();
        if !out.contains(&said) {
            out.push_str(": ");
            out.push_str(&said);
        }
        cause = c.source();
    }
    out
}
