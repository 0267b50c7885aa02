//! A bounded cache in two generations, keyed by XXH3 hashes: what the token-count cache
//! (`llm::tokens`) and the escaped-string cache (`llm::escape`) keep.
//!
//! Entries go into the current generation. When one more would take it past its limit, the
//! current generation becomes the previous one (the old previous is dropped) and a new one starts.
//! An entry found in the previous generation moves to the current one, so what is in use stays
//! while the rest ages out, and the cache never holds more than two limits. The limit is in the
//! caller's unit (entries, or bytes), given by a weight per entry.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasherDefault, Hasher};

/// The hasher of maps whose keys are XXH3 hashes already: a key is its own hash (hashing it
/// again cost as much as the lookup).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Map<V> = HashMap<u64, V, BuildHasherDefault<Prehashed>>;

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Generations<V> {
    current: Map<V>,
    current_weight: usize,
    previous: Map<V>,
    limit: usize,
    weigh: fn(&V) -> usize,
}

impl<V> Generations<V> {
    /// Generations of at most `limit` each, an entry weighing `weigh(entry)`.
    pub(crate) fn new(limit: usize, weigh: fn(&V) -> usize) -> Self {
        Self {
            current: Map::default(),
            current_weight: 0,
            previous: Map::default(),
            limit,
            weigh,
        }
    }

    /// The entry under `key` that `is` accepts (a caller keeping the key's source checks it
    /// here), made current; `None` if there is none.
    pub(crate) fn get(&mut self, key: u64, is: impl Fn(&V) -> bool) -> Option<&V> {
        if self.current.get(&key).is_none_or(|v| !is(v)) {
            let moved = self.previous.remove(&key).filter(|v| is(v))?;
            return Some(self.insert(key, moved));
        }
        self.current.get(&key)
    }

    /// Keep `value` under `key` in the current generation (replacing what it held there).
    pub(crate) fn insert(&mut self, key: u64, value: V) -> &V {
        let weight = (self.weigh)(&value);
        if self.current_weight + weight > self.limit {
            self.previous = std::mem::take(&mut self.current);
            self.current_weight = 0;
        }
        self.current_weight += weight;
        match self.current.entry(key) {
            Entry::Occupied(mut held) => {
                self.current_weight -= (self.weigh)(held.get());
                held.insert(value);
                held.into_mut()
            }
            Entry::Vacant(slot) => slot.insert(value),
        }
    }

    /// How many entries are kept.
    pub(crate) fn len(&self) -> usize {
        self.current.len() + self.previous.len()
    }

    /// What the kept entries weigh together.
    #[cfg(test)]
    pub(crate) fn weight(&self) -> usize {
        self.current
            .values()
            .chain(self.previous.values())
            .map(self.weigh)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_in_use_stay_and_the_rest_ages_out_within_two_limits() {
        let mut g = Generations::<u64>::new(4, |_| 1);
        for k in 0..4 {
            g.insert(k, k * 10);
        }
        // A fifth starts a new generation; 0..4 are the previous one.
        g.insert(4, 40);
        // Used from the previous generation, 0 moves to the current one.
        assert_eq!(g.get(0, |_| true), Some(&0));
        for k in 5..7 {
            g.insert(k, k * 10);
        }
        // The current generation (4, 0, 5, 6) is full: the next insert drops 1, 2 and 3.
        g.insert(7, 70);
        assert_eq!(g.get(0, |_| true), Some(&0));
        assert_eq!(g.get(1, |_| true), None);
        assert!(g.len() <= 8);
        assert_eq!(g.weight(), g.len());
    }

    #[test]
    fn an_entry_the_caller_does_not_accept_is_not_returned() {
        let mut g = Generations::<String>::new(100, String::len);
        g.insert(7, "a".repeat(10));
        assert!(g.get(7, |v| v == &"a".repeat(10)).is_some());
        assert!(g.get(7, |v| v == &"b".repeat(10)).is_none());
        // Replacing an entry replaces its weight.
        g.insert(7, "c".repeat(30));
        assert_eq!(g.weight(), 30);
    }
}
