//! A Bloom filter that many threads may add to and query at once.
//!
//! Invariants: bits only ever go from 0 to 1 (`fetch_or`), so a query never
//! sees a "no" for a key whose insertion happened-before it. Relaxed ordering
//! is enough for that: the filter is consulted before the log bytes it
//! summarizes, and those bytes are published with Release/Acquire on the
//! log's length, after the key's bits were set.

use std::sync::atomic::{AtomicU64, Ordering};

/// Probes per key. With the sizing of log parts (about 10 bits per key or
/// more) five probes keep false positives near 1%.
const PROBES: u32 = 5;

/// The 64-bit hash every filter uses for a key.
pub(crate) fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

#[derive(Debug)]
pub(crate) struct Bloom {
    words: Box<[AtomicU64]>,
}

impl Bloom {
    /// A filter of at least `bits` bits (rounded up to whole words, at least one).
    pub fn with_bits(bits: usize) -> Self {
        let words = bits.div_ceil(64).max(1);
        Bloom {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn bit_count(&self) -> u64 {
        self.words.len() as u64 * 64
    }

    /// Positions probed for `hash` (double hashing).
    fn probes(&self, hash: u64) -> impl Iterator<Item = u64> {
        let n = self.bit_count();
        let h1 = hash;
        let h2 = hash.rotate_left(32) | 1;
        (0..PROBES).map(move |i| h1.wrapping_add(u64::from(i).wrapping_mul(h2)) % n)
    }

    pub fn insert(&self, hash: u64) {
        for bit in self.probes(hash) {
            let (w, b) = ((bit / 64) as usize, bit % 64);
            if let Some(word) = self.words.get(w) {
                word.fetch_or(1 << b, Ordering::Relaxed);
            }
        }
    }

    /// False means the key was never inserted.
    pub fn may_contain(&self, hash: u64) -> bool {
        self.probes(hash).all(|bit| {
            let (w, b) = ((bit / 64) as usize, bit % 64);
            self.words
                .get(w)
                .is_some_and(|word| word.load(Ordering::Relaxed) & (1 << b) != 0)
        })
    }

    /// Memory the filter takes.
    pub fn bytes(&self) -> u64 {
        (self.words.len() * 8) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_keys_are_always_found() {
        let f = Bloom::with_bits(2048);
        for i in 0..200u32 {
            f.insert(key_hash(&i.to_le_bytes()));
        }
        assert!((0..200u32).all(|i| f.may_contain(key_hash(&i.to_le_bytes()))));
    }

    #[test]
    fn false_positives_stay_near_one_percent_at_ten_bits_per_key() {
        let f = Bloom::with_bits(10_000);
        for i in 0..1000u32 {
            f.insert(key_hash(format!("key{i}").as_bytes()));
        }
        let fp = (0..100_000u32)
            .filter(|i| f.may_contain(key_hash(format!("other{i}").as_bytes())))
            .count();
        assert!(fp < 2_500, "{fp} false positives in 100000");
    }
}
