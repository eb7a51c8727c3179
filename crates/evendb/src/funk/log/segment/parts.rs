//! A segment's parts and what gets consult about them: the Bloom filter
//! of the part being appended to, the fingerprint directory of the sealed
//! ones, and the packed (offset, length) of each record (see the
//! segment's module docs).

use super::super::span::BlockIndex;
use crate::cache::bloom::Bloom;
use crate::cache::budget::{heap_size, Kind, MemoryBudget};
use std::sync::Arc;

/// The part still being appended to: where it starts and a Bloom filter
/// of its keys.
#[derive(Debug)]
pub(crate) struct LogPart {
    /// Offset of the part's first record.
    pub start: u64,
    pub bloom: Bloom,
}

/// What a get consults, published as one value (replaced whenever a part
/// is sealed or started).
///
/// Sealed parts are summed up in one directory: a 32-bit fingerprint of
/// each record's key (the high half of [`key_hash`](crate::cache::bloom::key_hash)) in ascending order
/// and, at the same index, where the record sits. A get binary-searches it
/// and reads only the records whose fingerprint matches — one record, as
/// a rule — instead of testing one filter per part and reading whole
/// parts. The unsealed part has a Bloom filter and is read whole on a
/// maybe.
#[derive(Debug, Default)]
pub(super) struct Parts {
    pub(super) fingerprints: Box<[u32]>,
    /// [`pack`]ed (offset, length) of each record, parallel to
    /// `fingerprints`.
    pub(super) locations: Box<[u64]>,
    /// Parts sealed so far.
    pub(super) sealed: usize,
    /// The unsealed part (none while the segment is empty).
    pub(super) tail: Option<LogPart>,
    /// Of a frozen banded segment, the block index that replaced the
    /// directory (see `span`), and a Bloom filter of its keys' fingerprints
    /// (about 10 bits a record).
    pub(super) blocks: Option<(Arc<BlockIndex>, Bloom)>,
}

impl Parts {
    /// Parts whose directory holds `entries` (fingerprint, packed location),
    /// sorted here. The sort is stable, so a sorted run followed by new
    /// entries costs a sort of the new ones and one merge.
    pub(super) fn new(mut entries: Vec<(u32, u64)>, sealed: usize, tail: Option<LogPart>) -> Self {
        entries.sort();
        Parts {
            fingerprints: entries.iter().map(|e| e.0).collect(),
            locations: entries.iter().map(|e| e.1).collect(),
            sealed,
            tail,
            blocks: None,
        }
    }

    /// Parts whose directory is `self`'s and `more` (any order) merged:
    /// the new entries are sorted alone, then merged with the directory,
    /// which is sorted already. (Copying the directory into one list and
    /// sorting it took a tenth of a sequential load's samples: a seal
    /// happens every part, and the directory grows with the segment.)
    pub(super) fn merged(
        &self,
        mut more: Vec<(u32, u64)>,
        sealed: usize,
        tail: Option<LogPart>,
    ) -> Self {
        more.sort_unstable();
        let n = self.fingerprints.len() + more.len();
        let (mut fingerprints, mut locations) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let old = self
            .fingerprints
            .iter()
            .copied()
            .zip(self.locations.iter().copied());
        let mut old = old.peekable();
        for (fp, loc) in more {
            // Equal entries keep the directory's first, as a stable sort of
            // the directory followed by the new entries would.
            while let Some(e) = old.next_if(|&e| e <= (fp, loc)) {
                fingerprints.push(e.0);
                locations.push(e.1);
            }
            fingerprints.push(fp);
            locations.push(loc);
        }
        for (fp, loc) in old {
            fingerprints.push(fp);
            locations.push(loc);
        }
        Parts {
            fingerprints: fingerprints.into(),
            locations: locations.into(),
            sealed,
            tail,
            blocks: None,
        }
    }

    /// Memory of the directory.
    pub(super) fn directory_bytes(&self) -> u64 {
        heap_size(self.fingerprints.len() * 4) + heap_size(self.locations.len() * 8)
    }

    /// Memory of the directory, the tail's filter and the block index.
    pub(super) fn bytes(&self) -> u64 {
        self.directory_bytes()
            + self.tail.as_ref().map_or(0, |t| t.bloom.bytes())
            + self
                .blocks
                .as_ref()
                .map_or(0, |(b, f)| b.bytes() + f.bytes())
    }

    pub(super) fn count(&self) -> usize {
        self.sealed + usize::from(self.tail.is_some())
    }

    /// (offset, length) of every sealed record whose fingerprint is `fp`.
    pub(super) fn matches(&self, fp: u32) -> impl Iterator<Item = (u64, u64)> + '_ {
        let from = self.fingerprints.partition_point(|&f| f < fp);
        self.fingerprints[from..]
            .iter()
            .take_while(move |&&f| f == fp)
            .zip(&self.locations[from..])
            .map(|(_, &loc)| unpack(loc))
    }
}

/// Bits of a packed location that hold the record's length: enough for the
/// largest record (a 16 KiB key and a 16 MiB value); the offset takes the
/// other 39 (512 GiB).
pub(super) const LEN_BITS: u32 = 25;

pub(super) fn pack(offset: u64, len: u64) -> Option<u64> {
    (offset < 1 << (64 - LEN_BITS) && len < 1 << LEN_BITS).then_some(offset << LEN_BITS | len)
}

pub(super) fn unpack(loc: u64) -> (u64, u64) {
    (loc >> LEN_BITS, loc & ((1 << LEN_BITS) - 1))
}

/// The fingerprint the directory keeps for a key hash.
pub(super) fn fingerprint(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// (fingerprint, offset) of each record of the part not sealed yet, with
/// the memory charged for the list.
#[derive(Debug, Default)]
pub(super) struct OpenPart {
    pub(super) records: Vec<(u32, u64)>,
    pub(super) charged: u64,
}

impl OpenPart {
    pub(super) fn push(&mut self, budget: &MemoryBudget, fp: u32, offset: u64) {
        self.records.push((fp, offset));
        budget.recharge(
            Kind::Filters,
            &mut self.charged,
            heap_size(self.records.capacity() * 16),
        );
    }

    /// Empties the list and returns its memory.
    pub(super) fn clear(&mut self, budget: &MemoryBudget) {
        self.records = Vec::new();
        budget.release(Kind::Filters, std::mem::take(&mut self.charged));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_record_packs() {
        let largest = (crate::funk::log::format::HEADER_LEN
            + crate::entry::MAX_KEY_SIZE
            + crate::entry::MAX_VALUE_SIZE) as u64;
        assert_eq!(unpack(pack(7, largest).expect("fits")), (7, largest));
        let far = (1u64 << 39) - 1;
        assert_eq!(unpack(pack(far, 1).expect("fits")), (far, 1));
        assert!(pack(1 << 39, 1).is_none());
        assert!(pack(0, 1 << LEN_BITS).is_none());
    }

    /// Seal after seal, the merged directory is the sorted list of every
    /// entry, and each fingerprint finds exactly its entries.
    #[test]
    fn merged_directories_hold_every_entry_in_order() {
        let mut rng = fastrand::Rng::with_seed(11);
        let mut parts = Parts::new(Vec::new(), 0, None);
        let mut all: Vec<(u32, u64)> = Vec::new();
        for seal in 0..40 {
            // Few fingerprints, so many are shared within and across parts.
            let more: Vec<(u32, u64)> = (0..rng.usize(0..300))
                .map(|_| (rng.u32(0..64), rng.u64(0..1 << 30)))
                .collect();
            all.extend(&more);
            parts = parts.merged(more, seal + 1, None);
            all.sort();
            let got: Vec<(u32, u64)> = parts
                .fingerprints
                .iter()
                .copied()
                .zip(parts.locations.iter().copied())
                .collect();
            assert_eq!(got, all, "after seal {seal}");
            assert_eq!(parts.sealed, seal + 1);
        }
        for fp in 0..64 {
            let want: Vec<(u64, u64)> = all
                .iter()
                .filter(|e| e.0 == fp)
                .map(|e| unpack(e.1))
                .collect();
            assert_eq!(parts.matches(fp).collect::<Vec<_>>(), want);
        }
    }
}
