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
}
