//! The Google Gemini API dialect (`POST /v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`): request decoding and checks (thought signatures
//! included), the `GenerateContentResponse`, and the event stream.
//!
//! Thought signatures: on a thinking request the answer's first function call part (or, without
//! calls, its last text part) carries a `thoughtSignature`, as Gemini 3 models do. A signature is
//! the thought text in base64 and the sim's HMAC over it, so the sim can check that what comes
//! back is what it issued, byte for byte.

mod decode;
mod encode;
mod stream;

pub(crate) use decode::decode;
pub(crate) use encode::{Envelope, response};
pub(crate) use stream::frames;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::seeding::Signer;

/// The signature the sim issues for a thought.
pub(crate) fn sign(signer: &Signer, thought: &str) -> String {
    format!(
        "{}.{}",
        STANDARD.encode(thought),
        signer.sign(&format!("gemini thought: {thought}"))
    )
}

/// Whether `signature` is one the sim issued (unchanged).
pub(crate) fn verify(signer: &Signer, signature: &str) -> bool {
    let Some((text, mac)) = signature.split_once('.') else {
        return false;
    };
    let Ok(bytes) = STANDARD.decode(text) else {
        return false;
    };
    let Ok(thought) = String::from_utf8(bytes) else {
        return false;
    };
    signer.verify(&format!("gemini thought: {thought}"), mac)
}

/// A `google.protobuf.Duration` in its JSON form (`"17s"`, `"0.250s"`).
pub(crate) fn proto_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{}.{:03}s", ms / 1000, ms % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_only_unchanged() {
        let signer = Signer::new(3);
        let sig = sign(&signer, "I should call the tool.");
        assert!(verify(&signer, &sig));
        let mut changed = sig.clone();
        changed.insert(0, 'A');
        assert!(!verify(&signer, &changed));
        assert!(!verify(&Signer::new(4), &sig));
        assert!(!verify(&signer, "no dot here"));
    }

    #[test]
    fn durations_read_like_protobuf_json() {
        use std::time::Duration;
        assert_eq!(proto_duration(Duration::from_secs(17)), "17s");
        assert_eq!(proto_duration(Duration::from_millis(250)), "0.250s");
        assert_eq!(proto_duration(Duration::from_millis(1500)), "1.500s");
    }
}
