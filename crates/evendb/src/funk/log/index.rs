//! A sorted index of a log segment's records, built when a scan first needs
//! it and extended as the segment grows, so scans of chunks without munks
//! read only the records in their range, not the whole log.
//!
//! It holds, per record, the key and where the record sits (about 60 bytes
//! plus the key), is charged to the memory budget as index memory, and is
//! dropped whole under memory pressure (it is rebuilt on demand).

use super::format::{RecordPtr, SegmentImage};
use crate::cache::budget::heap_size;
use crate::error::Result;
use crate::prefix::partition;

/// Index entries of a segment up to `covered` bytes, sorted by key, then
/// newest first.
#[derive(Debug, Default)]
pub(crate) struct SegmentIndex {
    /// Length of the segment the index covers (a record boundary).
    pub covered: u64,
    keys: Vec<u8>,
    /// (offset of the key in `keys`, the record), sorted.
    entries: Vec<(usize, RecordPtr)>,
}

impl SegmentIndex {
    pub fn key(&self, i: usize) -> &[u8] {
        match self.entries.get(i) {
            Some((at, r)) => self
                .keys
                .get(*at..*at + r.key_len as usize)
                .unwrap_or_default(),
            None => &[],
        }
    }

    pub fn record(&self, i: usize) -> Option<&RecordPtr> {
        self.entries.get(i).map(|(_, r)| r)
    }

    /// Positions of the entries with keys in `[from, to)`.
    pub fn range(&self, from: &[u8], to: Option<&[u8]>) -> std::ops::Range<usize> {
        let n = self.entries.len();
        let lo = partition(0..n, |i| self.key(i) < from);
        let hi = match to {
            Some(t) => partition(0..n, |i| self.key(i) < t),
            None => n,
        };
        lo..hi.max(lo)
    }

    /// Memory the index takes (what the allocator holds for it).
    pub fn bytes(&self) -> u64 {
        heap_size(self.keys.capacity())
            + heap_size(self.entries.capacity() * std::mem::size_of::<(usize, RecordPtr)>())
    }

    /// This index extended with the records of the images `next` returns
    /// one at a time (each with the file offset it starts at; the first
    /// starts where this index ends), covering up to `covered`. Only one
    /// image is held at a time.
    pub fn extended(
        &self,
        mut next: impl FnMut() -> Result<Option<(SegmentImage, u64)>>,
        covered: u64,
    ) -> Result<SegmentIndex> {
        // The new records' keys go first into a fresh key area, the old
        // keys after them; entries point into it.
        let mut keys: Vec<u8> = Vec::new();
        let mut added: Vec<(usize, RecordPtr)> = Vec::new();
        while let Some((image, base)) = next()? {
            let key_bytes: usize = image.records.iter().map(|r| r.key_len as usize).sum();
            keys.reserve_exact(key_bytes);
            added.reserve_exact(image.records.len());
            for r in &image.records {
                let at = keys.len();
                keys.extend_from_slice(image.key(r));
                let mut abs = r.clone();
                abs.offset += base;
                added.push((at, abs));
            }
        }
        added.sort_by(|a, b| order(&keys, a, &keys, b));
        if self.entries.is_empty() {
            // A new index: the sorted entries are it (no second copy).
            return Ok(SegmentIndex {
                covered,
                keys,
                entries: added,
            });
        }
        keys.reserve_exact(self.keys.len());
        let shift = keys.len();
        keys.extend_from_slice(&self.keys);
        let mut entries = Vec::with_capacity(self.entries.len() + added.len());
        let (mut old, mut new) = (self.entries.iter().peekable(), added.into_iter().peekable());
        loop {
            let take_old = match (old.peek(), new.peek()) {
                (Some(o), Some(a)) => order(&self.keys, o, &keys, a).is_le(),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if take_old {
                if let Some((at, r)) = old.next() {
                    entries.push((at + shift, r.clone()));
                }
            } else if let Some(a) = new.next() {
                entries.push(a);
            }
        }
        Ok(SegmentIndex {
            covered,
            keys,
            entries,
        })
    }
}

fn key_in<'a>(keys: &'a [u8], e: &(usize, RecordPtr)) -> &'a [u8] {
    keys.get(e.0..e.0 + e.1.key_len as usize)
        .unwrap_or_default()
}

/// Index order: key ascending, then stamp descending.
fn order(
    ka: &[u8],
    a: &(usize, RecordPtr),
    kb: &[u8],
    b: &(usize, RecordPtr),
) -> std::cmp::Ordering {
    key_in(ka, a)
        .cmp(key_in(kb, b))
        .then_with(|| b.1.stamp().cmp(&a.1.stamp()))
}
