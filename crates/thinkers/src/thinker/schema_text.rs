//! The model text around an answer: code fences.

/// A JSON answer wrapped in a Markdown code fence, unwrapped.
pub(super) fn strip_fences(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}
