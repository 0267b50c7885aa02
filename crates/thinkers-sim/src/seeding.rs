//! Where the sim's randomness comes from, and the signatures of its thinking blocks.
//!
//! - Answers draw from a generator seeded by SHA-256 of (sim seed, model, conversation content),
//!   so the same request to a sim with the same seed gets the same answer, whatever the order or
//!   concurrency of other requests.
//! - Latency and random faults draw from a generator seeded by (sim seed, model, the model's
//!   request ordinal), so a retried request rolls again instead of failing forever.
//! - Thinking signatures are HMAC-SHA256 of the thinking text under a key derived from the seed:
//!   a block the sim issued verifies; an edited one does not.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use rand::SeedableRng;
use rand::rngs::StdRng;
use sha2::{Digest, Sha256};

fn seed_from_digest(digest: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(bytes)
}

/// The seed of a request's answer generator.
pub(crate) fn content_seed(seed: u64, model: &str, content: &[u8]) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(b"answer");
    hasher.update(seed.to_le_bytes());
    hasher.update(model.as_bytes());
    hasher.update([0]);
    hasher.update(content);
    seed_from_digest(&hasher.finalize())
}

/// The generator for latency and random faults of a model's `ordinal`-th request.
pub(crate) fn ordinal_rng(seed: u64, model: &str, ordinal: u64) -> StdRng {
    let mut hasher = Sha256::new();
    hasher.update(b"ordinal");
    hasher.update(seed.to_le_bytes());
    hasher.update(model.as_bytes());
    hasher.update([0]);
    hasher.update(ordinal.to_le_bytes());
    StdRng::seed_from_u64(seed_from_digest(&hasher.finalize()))
}

/// Signs and verifies thinking blocks.
#[derive(Debug, Clone)]
pub(crate) struct Signer {
    /// One HMAC-SHA256 block of key material.
    key: [u8; 64],
}

impl Signer {
    pub(crate) fn new(seed: u64) -> Self {
        let mut key = [0u8; 64];
        for (half, chunk) in key.chunks_mut(32).enumerate() {
            let mut hasher = Sha256::new();
            hasher.update(b"thinkers-sim thinking signature key");
            hasher.update([half as u8]);
            hasher.update(seed.to_le_bytes());
            chunk.copy_from_slice(&hasher.finalize());
        }
        Self { key }
    }

    /// HMAC accepts keys of any length, so this is always `Some`; an impossible failure yields
    /// empty signatures that never verify rather than a panic.
    fn mac(&self, thinking: &str) -> Option<Hmac<Sha256>> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key).ok()?;
        mac.update(thinking.as_bytes());
        Some(mac)
    }

    /// The signature of a thinking text (base64, like the provider's opaque signatures).
    pub(crate) fn sign(&self, thinking: &str) -> String {
        self.mac(thinking)
            .map(|mac| STANDARD.encode(mac.finalize().into_bytes()))
            .unwrap_or_default()
    }

    /// Whether `signature` is the one the sim issued for `thinking`.
    pub(crate) fn verify(&self, thinking: &str, signature: &str) -> bool {
        let Ok(bytes) = STANDARD.decode(signature) else {
            return false;
        };
        !bytes.is_empty()
            && self
                .mac(thinking)
                .is_some_and(|mac| mac.verify_slice(&bytes).is_ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn signatures_verify_only_unmodified_text_under_the_same_seed() {
        let signer = Signer::new(7);
        let sig = signer.sign("I should look it up.");
        assert!(signer.verify("I should look it up.", &sig));
        assert!(!signer.verify("I should look it up!", &sig));
        assert!(!Signer::new(8).verify("I should look it up.", &sig));
        assert!(!signer.verify("I should look it up.", "not base64 !!"));
    }

    #[test]
    fn seeds_are_stable_and_distinct() {
        assert_eq!(content_seed(1, "m", b"x"), content_seed(1, "m", b"x"));
        assert_ne!(content_seed(1, "m", b"x"), content_seed(2, "m", b"x"));
        assert_ne!(content_seed(1, "m", b"x"), content_seed(1, "n", b"x"));
        let a: u64 = ordinal_rng(1, "m", 0).random();
        let b: u64 = ordinal_rng(1, "m", 1).random();
        assert_ne!(a, b);
        assert_eq!(a, ordinal_rng(1, "m", 0).random::<u64>());
    }
}
