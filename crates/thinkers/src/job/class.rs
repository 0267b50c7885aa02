//! Job class names made at run time, kept once.
//!
//! A thinker records each model call under a class derived from its own (`<class>.turn`). The
//! name is the same for every call of every thinker of that kind, so it is interned: the first
//! use leaks one copy and every later one is a `'static` borrow, which a job's [`super::Job::class`]
//! hands out without allocating.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, PoisonError};

/// The most distinct names kept. Classes are a program's kinds of job, a small set; the bound
/// only stops a program that makes a new class per job from growing the set without end (past
/// it, names stay owned).
const MAX_INTERNED: usize = 1024;

static NAMES: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(|| Mutex::new(HashSet::new()));

/// `name` as a `'static` class name, or owned once [`MAX_INTERNED`] names are kept.
pub(crate) fn interned(name: String) -> Cow<'static, str> {
    let mut names = NAMES.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&kept) = names.get(name.as_str()) {
        return Cow::Borrowed(kept);
    }
    if names.len() >= MAX_INTERNED {
        return Cow::Owned(name);
    }
    let kept: &'static str = Box::leak(name.into_boxed_str());
    names.insert(kept);
    Cow::Borrowed(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_name_is_kept_once() {
        let a = interned("class_test.turn".to_owned());
        let b = interned("class_test.turn".to_owned());
        assert_eq!(a, "class_test.turn");
        match (a, b) {
            (Cow::Borrowed(a), Cow::Borrowed(b)) => assert!(std::ptr::eq(a, b)),
            other => panic!("not interned: {other:?}"),
        }
    }
}
