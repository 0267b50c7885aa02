//! Request-body buffers, used again.
//!
//! Every model call writes its body into a fresh buffer of a few KiB, and the body is freed when
//! the call ends. A buffer that size is past the allocator's small-size caches, so each call paid
//! for a trip through the general heap (bins, coalescing) twice. Instead, the body's bytes own
//! their buffer ([`Bytes::from_owner`]) and hand it back here when the last copy drops; the next
//! body is written into it. At most [`KEPT`] buffers of at most [`MAX_CAPACITY`] bytes each are
//! kept (4 MiB at the very most); any other buffer is freed as before.

use std::sync::{Mutex, PoisonError};

use bytes::Bytes;

/// The most buffers kept (about the calls a process has in flight at once).
const KEPT: usize = 64;
/// The largest buffer kept; a longer body's buffer is freed.
const MAX_CAPACITY: usize = 64 * 1024;

static FREE: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// An empty buffer with room for at least `capacity` bytes: a kept one if there is one.
pub(crate) fn buffer(capacity: usize) -> Vec<u8> {
    let kept = FREE.lock().unwrap_or_else(PoisonError::into_inner).pop();
    match kept {
        Some(buf) if buf.capacity() >= capacity => buf,
        // One too small is freed, not grown: growing it would copy its whole old capacity
        // (the allocator does not know it is empty), and a conversation's bodies keep growing.
        _ => Vec::with_capacity(capacity),
    }
}

/// The body as bytes that hand `buf` back when their last copy drops.
pub(crate) fn into_bytes(buf: Vec<u8>) -> Bytes {
    Bytes::from_owner(Pooled(buf))
}

struct Pooled(Vec<u8>);

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.0);
        if buf.capacity() == 0 || buf.capacity() > MAX_CAPACITY {
            return;
        }
        buf.clear();
        let mut free = FREE.lock().unwrap_or_else(PoisonError::into_inner);
        if free.len() < KEPT {
            free.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_keeps_its_bytes_and_its_buffer_comes_back_empty() {
        let mut buf = buffer(100);
        buf.extend_from_slice(b"{\"model\":\"m\"}");
        let body = into_bytes(buf);
        let copy = body.clone();
        drop(body);
        assert_eq!(&copy[..], b"{\"model\":\"m\"}");
        drop(copy);
        // Whichever buffer comes next (another test may have taken this one), it is empty and
        // has the room asked for.
        let next = buffer(10);
        assert!(next.is_empty());
        assert!(next.capacity() >= 10);
    }

    #[test]
    fn an_oversized_buffer_is_not_kept() {
        let big = into_bytes(vec![7u8; MAX_CAPACITY + 1]);
        assert_eq!(big.len(), MAX_CAPACITY + 1);
        drop(big);
        let kept = FREE.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(
            kept.iter()
                .all(|b| b.capacity() <= MAX_CAPACITY && b.is_empty())
        );
        assert!(kept.len() <= KEPT);
    }
}
