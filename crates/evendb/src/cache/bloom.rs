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

/// A blocked Bloom filter: a key's probes all fall in one 512-bit block
/// (one cache line), so a query costs one cache miss, not one per probe.
#[derive(Debug)]
pub(crate) struct Bloom {
    words: Box<[AtomicU64]>,
}

/// Words per block: 8 × 64 bits = 512 bits, one cache line.
const BLOCK_WORDS: usize = 8;

impl Bloom {
    /// A filter of at least `bits` bits (rounded up to whole blocks, at
    /// least one).
    pub fn with_bits(bits: usize) -> Self {
        let blocks = bits.div_ceil(64 * BLOCK_WORDS).max(1);
        Bloom {
            words: (0..blocks * BLOCK_WORDS)
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// (word, bit) of each probe for `hash`: the block from the hash's high
    /// bits (multiply-shift, no division), the bits in it from 9-bit slices
    /// of the low 45.
    fn probes(&self, hash: u64) -> impl Iterator<Item = (usize, u32)> {
        let blocks = (self.words.len() / BLOCK_WORDS) as u64;
        let block = ((u128::from(hash) * u128::from(blocks)) >> 64) as usize;
        (0..PROBES).map(move |i| {
            let bit = ((hash >> (9 * i)) & 511) as usize;
            (block * BLOCK_WORDS + bit / 64, (bit % 64) as u32)
        })
    }

    pub fn insert(&self, hash: u64) {
        for (w, b) in self.probes(hash) {
            if let Some(word) = self.words.get(w) {
                word.fetch_or(1 << b, Ordering::Relaxed);
            }
        }
    }

    /// False means the key was never inserted.
    pub fn may_contain(&self, hash: u64) -> bool {
        self.probes(hash).all(|(w, b)| {
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
