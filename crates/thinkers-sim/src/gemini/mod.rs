//! The Google Gemini API dialect (`POST /v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`): request decoding and checks (thought signatures
//! included), the `GenerateContentResponse`, and the event stream.
//!
//! Thought signatures: on a thinking request the answer's first function call part (or, without
//! calls, its last text part) carries a `thoughtSignature`, as Gemini 3 models do. A signature is
//! base64 of the sim's HMAC over the thought followed by the thought, so the sim can check that
//! what comes back is what it issued.

mod decode;
mod encode;
mod stream;

pub(crate) use decode::decode;
pub(crate) use encode::{Envelope, response};
pub(crate) use stream::frames;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

use crate::seeding::Signer;

/// The MAC's length at the head of a signature's bytes.
const MAC_LEN: usize = 32;

fn mac_input(thought: &str) -> String {
    format!("gemini thought: {thought}")
}

/// The signature the sim issues for a thought: base64 of the sim's MAC over the thought followed
/// by the thought itself, so it verifies on its own (the official SDK reads signatures as base64
/// bytes).
pub(crate) fn sign(signer: &Signer, thought: &str) -> String {
    let mut bytes = STANDARD
        .decode(signer.sign(&mac_input(thought)))
        .unwrap_or_default();
    bytes.extend_from_slice(thought.as_bytes());
    STANDARD.encode(bytes)
}

/// Whether `signature` holds bytes the sim issued, unchanged (in either base64 alphabet: the
/// Python SDK sends bytes back URL-safe).
pub(crate) fn verify(signer: &Signer, signature: &str) -> bool {
    let Ok(bytes) = STANDARD
        .decode(signature)
        .or_else(|_| URL_SAFE.decode(signature))
    else {
        return false;
    };
    if bytes.len() < MAC_LEN {
        return false;
    }
    let (mac, thought) = bytes.split_at(MAC_LEN);
    let Ok(thought) = std::str::from_utf8(thought) else {
        return false;
    };
    signer.verify(&mac_input(thought), &STANDARD.encode(mac))
}

/// A `google.protobuf.Duration` in its JSON form (`"17s"`, `"0.250s"`).
pub(crate) fn proto_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
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
        assert!(!verify(&signer, "not base64 !"));
        assert!(!verify(&signer, "c2hvcnQ="));
        // The URL-safe spelling of the same bytes verifies too.
        let bytes = STANDARD.decode(&sig).unwrap_or_default();
        assert!(verify(&signer, &URL_SAFE.encode(bytes)));
    }

    #[test]
    fn durations_read_like_protobuf_json() {
        use std::time::Duration;
        assert_eq!(proto_duration(Duration::from_secs(17)), "17s");
        assert_eq!(proto_duration(Duration::from_millis(250)), "0.250s");
        assert_eq!(proto_duration(Duration::from_millis(1500)), "1.500s");
    }
}
