//! The `Sync` journal's writes a read-only open holds in memory instead of
//! replaying them into the chunk logs (see `db/replay.rs`).
//!
//! A read-only open cannot write, so the journaled writes a crash left
//! out of the chunk logs are kept here: per key, the value (or delete) of
//! its newest journaled write, for the keys whose newest record in the
//! chunks is older. Gets and scans read a key held here from here, every
//! other key from the chunks, which is what a writable open shows once it
//! has replayed the journal.
//!
//! Invariants: built once, before the handle is returned, and never
//! changed (a read-only handle takes no write); so it needs no lock. Every
//! read of a read-only handle runs at a version of an epoch past every
//! version on disk (see `db/open.rs`), so the newest record of a key is
//! the one every get, scan and snapshot of the handle sees, and a range
//! tombstone (all of them older than those reads) already hid, when this
//! was built, every write it covers: what is held here is final.

use crate::cache::budget::heap_size;
use std::collections::BTreeMap;
use std::ops::Bound;

/// Bytes a map entry costs besides its key's and value's allocations: the
/// entry's share of a B-tree node (a key and a value of 24 bytes each in
/// nodes of up to 11, about two-thirds full).
const ENTRY_OVERHEAD: u64 = 80;

/// Journaled writes the chunk logs lack, newest per key.
#[derive(Debug, Default)]
pub(crate) struct ReplayedWrites {
    /// Key to value (`None`: deleted).
    writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
    /// What `writes` holds in memory (see [`heap_size`]).
    bytes: u64,
}

impl ReplayedWrites {
    /// Holds `value` (`None`: a delete) as what `key` reads.
    pub fn insert(&mut self, key: Vec<u8>, value: Option<Vec<u8>>) {
        let cost = |k: &[u8], v: Option<&[u8]>| {
            heap_size(k.len()) + v.map_or(0, |v| heap_size(v.len())) + ENTRY_OVERHEAD
        };
        let added = cost(&key, value.as_deref());
        if let Some(old) = self.writes.get(&key) {
            self.bytes -= cost(&key, old.as_deref());
        }
        self.bytes += added;
        self.writes.insert(key, value);
    }

    /// What `key` reads, if it is held here: `Some(None)` for a delete,
    /// `None` for a key the chunks answer for.
    pub fn get(&self, key: &[u8]) -> Option<Option<&[u8]>> {
        self.writes.get(key).map(Option::as_deref)
    }

    /// The first key held within `(lo, hi)`, with what it reads.
    pub fn first_in(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
    ) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
        if is_empty_range(lo, hi) {
            return None;
        }
        self.writes
            .range::<[u8], _>((lo, hi))
            .next()
            .map(|(k, v)| (k.clone(), v.clone()))
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// True if no key is held.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// Memory held (what the memory budget is charged).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// True if no key lies within `(lo, hi)`. (`BTreeMap::range` panics on a
/// range whose start is past its end.)
fn is_empty_range(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    let (l, h) = match (lo, hi) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => return false,
        (Bound::Included(l) | Bound::Excluded(l), Bound::Included(h) | Bound::Excluded(h)) => {
            (l, h)
        }
    };
    match l.cmp(h) {
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => !matches!((lo, hi), (Bound::Included(_), Bound::Included(_))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held() -> ReplayedWrites {
        let mut r = ReplayedWrites::default();
        r.insert(b"b".to_vec(), Some(b"1".to_vec()));
        r.insert(b"d".to_vec(), None);
        r.insert(b"f".to_vec(), Some(b"3".to_vec()));
        r
    }

    #[test]
    fn gets_tell_a_held_delete_from_a_key_not_held() {
        let r = held();
        assert_eq!(r.get(b"b"), Some(Some(&b"1"[..])));
        assert_eq!(r.get(b"d"), Some(None));
        assert_eq!(r.get(b"c"), None);
        assert_eq!(r.len(), 3);
    }

    #[test]
    fn first_in_respects_both_bounds_and_empty_ranges() {
        use Bound::{Excluded, Included, Unbounded};
        let r = held();
        let key = |got: Option<(Vec<u8>, Option<Vec<u8>>)>| got.map(|(k, _)| k);
        assert_eq!(key(r.first_in(Unbounded, Unbounded)), Some(b"b".to_vec()));
        assert_eq!(
            key(r.first_in(Excluded(b"b"), Unbounded)),
            Some(b"d".to_vec())
        );
        assert_eq!(
            key(r.first_in(Included(b"c"), Excluded(b"d"))),
            None,
            "the end is exclusive"
        );
        assert_eq!(
            key(r.first_in(Included(b"d"), Included(b"d"))),
            Some(b"d".to_vec())
        );
        // Ranges `BTreeMap::range` would panic on are empty.
        assert_eq!(key(r.first_in(Excluded(b"d"), Excluded(b"d"))), None);
        assert_eq!(key(r.first_in(Included(b"f"), Excluded(b"b"))), None);
        assert_eq!(key(r.first_in(Excluded(b"f"), Unbounded)), None);
    }

    #[test]
    fn the_charge_follows_what_is_held() {
        let mut r = ReplayedWrites::default();
        r.insert(b"k".to_vec(), Some(vec![0; 1000]));
        let big = r.bytes();
        assert!(big >= 1000 + ENTRY_OVERHEAD, "{big}");
        r.insert(b"k".to_vec(), None);
        assert_eq!(r.bytes(), heap_size(1) + ENTRY_OVERHEAD);
    }
}
