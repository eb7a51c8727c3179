//! What a log segment knows of its keys without reading it: their range,
//! whether they arrived in key order up to a bounded disorder (a **banded**
//! segment: a sequential load by several threads, or a chunk taking
//! time-ordered appends at its end), and, for a banded segment, where the
//! records of any key range lie.
//!
//! The segment is cut into **sections** of about [`SECTION_BYTES`];
//! `marks` holds, per section, its first record's offset and the largest
//! key of every record up to the section's end so far. A record whose key
//! is at least that largest key as of two sections back is in the band;
//! one below it is an **outlier**, kept aside (its key and place) while
//! there are few; past [`OUTLIERS_PER_64`] the segment stops being banded
//! and forgets all this. Then the in-band records of a key range
//! `[from, to)` all lie between the first section whose largest key
//! reaches `from` and the first section whose key as of two sections back
//! reaches `to`: reading that window and the range's outliers instead of
//! the whole segment is exact.
//!
//! A banded segment also notes, per **block** (a sixteenth of a section,
//! or up to four times that until it holds [`MIN_BLOCK_RECORDS`]
//! records: see [`closes_block`]), the smallest and largest key of its
//! in-band records. Once the segment takes no more appends (it is
//! frozen), these become a [`BlockIndex`] of 8-byte key prefixes (24
//! bytes a block: 0.6% of a log of 100-byte records, 0.2% of one of
//! 800-byte records), which replaces the segment's per-record directory
//! (12 bytes a record: 1.5% of a log of 800-byte records, 9% of one of
//! 100-byte records): a get reads the one or two blocks whose key range
//! holds its key.

use crate::prefix::prefix_at;

/// Bytes of log per section of the band check, at most: the disorder a
/// banded segment tolerates (about two sections) besides its outliers.
/// Smaller logs have smaller sections (half a log part), so that a log
/// is tested over a few sections at least.
pub(crate) const SECTION_BYTES: u64 = 64 * 1024;

/// Blocks per section of a [`BlockIndex`] (a block is what a get of a
/// frozen banded segment reads: 4 KiB with 64 KiB sections, as a table's).
const BLOCKS_PER_SECTION: u64 = 16;

/// The smallest block: each costs two keys while the segment takes
/// appends, so tiny logs (tests) do not pay more for them than their data.
const MIN_BLOCK_BYTES: u64 = 1024;

/// Records a block holds before it closes, unless it reaches
/// [`BLOCK_GROWTH`] times the block size first. What a block costs in
/// memory (its index entry, and a run's block map entry: 40 bytes) is
/// then at most a few bytes a record, whatever the records' size. Measured
/// reason: with 4 KiB blocks of about five 800-byte records, the indexes,
/// block maps and filters of the runs a 5M-event stream wrote at a 64 MiB
/// budget took 36 MiB for 3.1 GB of runs (47 bytes a block), and the
/// budget held no munk by the end of the ingestion.
const MIN_BLOCK_RECORDS: u64 = 16;

/// The most a block may grow past the block size to hold
/// [`MIN_BLOCK_RECORDS`] records, as a multiple of it: a get reads a
/// whole block.
const BLOCK_GROWTH: u64 = 4;

/// True if a record at `offset` starts a new block after the one that
/// starts at `start` and holds `records` records (the rule a segment's
/// span and a run's stored blocks share): the block is `block_bytes` long
/// and holds [`MIN_BLOCK_RECORDS`], or is [`BLOCK_GROWTH`] times that long.
pub(crate) fn closes_block(start: u64, offset: u64, records: u64, block_bytes: u64) -> bool {
    offset >= start + block_bytes
        && (records >= MIN_BLOCK_RECORDS || offset >= start + BLOCK_GROWTH * block_bytes)
}

/// Sections a segment must have for its band to mean anything: with
/// fewer, every order passes the check.
const TESTED_SECTIONS: usize = 3;

/// Records below the band a banded segment may hold, per 64 of its records
/// (and 16 whatever its size): a put delayed while other threads went on
/// lands far behind them, and is kept aside rather than ending the band.
const OUTLIERS_PER_64: u64 = 1;

/// The smallest and the largest of some keys.
type KeyRange = (Vec<u8>, Vec<u8>);

/// See the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct KeySpan {
    section_bytes: u64,
    block_bytes: u64,
    /// The smallest and largest key; `None` while the segment is empty.
    pub range: Option<KeyRange>,
    pub banded: bool,
    records: u64,
    /// Per section: (first record's offset, largest key up to its end).
    marks: Vec<(u64, Vec<u8>)>,
    /// (key, offset, length) of the records below the band.
    outliers: Vec<(Vec<u8>, u64, u64)>,
    /// Per block: (first record's offset, smallest and largest in-band
    /// key), while the segment takes appends.
    blocks: Vec<(u64, Option<KeyRange>)>,
    /// Records in the last block.
    block_records: u64,
}

/// Where a segment's records of a key range are: see [`KeySpan::window`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    pub start: u64,
    pub end: u64,
    /// (offset, length) of the range's records outside `start..end`.
    pub extra: Vec<(u64, u64)>,
}

impl Window {
    /// Bytes a read of the window reads.
    pub fn bytes(&self) -> u64 {
        self.end - self.start + self.extra.iter().map(|e| e.1).sum::<u64>()
    }
}

/// What a scan of a key range reads: pieces of the segment, in order, each
/// with a floor under every in-band key it and every later piece hold;
/// the offset the last one ends at; and every outlier of the range (some
/// may lie inside the pieces).
#[derive(Debug)]
pub(crate) struct ScanPlan {
    pub pieces: Pieces,
    pub end: u64,
    pub outliers: Vec<(u64, u64)>,
}

/// The pieces of a [`ScanPlan`] not read yet: a segment's sections (a few,
/// listed), or a range of a frozen segment's blocks, read off its index as
/// the scan goes (a scan of a few records does not list a chunk's blocks).
#[derive(Debug)]
pub(crate) enum Pieces {
    Sections(std::collections::VecDeque<(u64, Floor)>),
    Blocks {
        index: std::sync::Arc<BlockIndex>,
        next: usize,
        last: usize,
    },
}

impl Pieces {
    /// Pieces left.
    pub fn len(&self) -> usize {
        match self {
            Pieces::Sections(v) => v.len(),
            Pieces::Blocks { next, last, .. } => last - next,
        }
    }

    /// Where the next piece starts.
    pub fn next_offset(&self) -> Option<u64> {
        match self {
            Pieces::Sections(v) => v.front().map(|(o, _)| *o),
            Pieces::Blocks { index, next, last } => (next < last).then(|| index.offset[*next]),
        }
    }

    /// True if `key` lies below every in-band key of the pieces left (so
    /// all its records were read); false if none is left to promise it.
    pub fn floor_above(&self, key: &[u8]) -> bool {
        match self {
            Pieces::Sections(v) => v.front().is_some_and(|(_, f)| f.above(key)),
            Pieces::Blocks { index, next, last } => {
                let shared = &index.shared[..];
                // A key not starting with the bytes every key of the
                // segment starts with lies below all of them or above.
                next < last
                    && if key.starts_with(shared) {
                        prefix_at(key, shared.len()) < index.suffix_min[*next]
                    } else {
                        key < shared
                    }
            }
        }
    }

    /// Drops the next `n` pieces (read by the caller).
    pub fn skip(&mut self, n: usize) {
        match self {
            Pieces::Sections(v) => drop(v.drain(..n.min(v.len()))),
            Pieces::Blocks { next, last, .. } => *next = (*next + n).min(*last),
        }
    }
}

/// A floor of the keys of a section of a banded segment and all after it.
#[derive(Debug, Clone)]
pub(crate) enum Floor {
    /// Any key.
    None,
    /// Keys at least this one.
    Key(Vec<u8>),
}

impl Floor {
    /// True if `key` is below every key the floor admits.
    pub fn above(&self, key: &[u8]) -> bool {
        match self {
            Floor::None => false,
            Floor::Key(f) => key < f.as_slice(),
        }
    }
}

fn set(slot: &mut Vec<u8>, key: &[u8]) {
    slot.clear();
    slot.extend_from_slice(key);
}

impl KeySpan {
    /// The span of an empty segment whose log parts are `part_bytes`.
    pub fn new(part_bytes: u64) -> Self {
        let section_bytes = (part_bytes / 2).clamp(256, SECTION_BYTES);
        KeySpan {
            section_bytes,
            block_bytes: (section_bytes / BLOCKS_PER_SECTION).max(MIN_BLOCK_BYTES),
            range: None,
            banded: false,
            records: 0,
            marks: Vec::new(),
            outliers: Vec::new(),
            blocks: Vec::new(),
            block_records: 0,
        }
    }

    /// Bytes of log per block (at most, before the record that passes it).
    pub fn block_bytes(&self) -> u64 {
        self.block_bytes
    }

    /// Bytes of log per section.
    pub fn section_bytes(&self) -> u64 {
        self.section_bytes
    }

    /// True if the segment is banded and has enough sections for that to
    /// say something about its order.
    pub fn tested_banded(&self) -> bool {
        self.banded && self.marks.len() >= TESTED_SECTIONS
    }

    /// Notes the record of `key` at `offset`, `len` bytes long.
    pub fn note(&mut self, key: &[u8], offset: u64, len: u64) {
        self.records += 1;
        match &mut self.range {
            None => {
                self.range = Some((key.to_vec(), key.to_vec()));
                self.banded = true;
                self.marks.push((offset, key.to_vec()));
                self.blocks
                    .push((offset, Some((key.to_vec(), key.to_vec()))));
                self.block_records = 1;
                return;
            }
            Some((min, max)) => {
                if key > max.as_slice() {
                    set(max, key);
                } else if key < min.as_slice() {
                    set(min, key);
                }
            }
        }
        if !self.banded {
            return;
        }
        if self
            .blocks
            .last()
            .is_none_or(|(o, _)| closes_block(*o, offset, self.block_records, self.block_bytes))
        {
            self.blocks.push((offset, None));
            self.block_records = 0;
        }
        self.block_records += 1;
        let n = self.marks.len();
        let starts_section = offset >= self.marks[n - 1].0 + self.section_bytes;
        // The record's section and the one two back, whose largest key
        // the record may not fall below.
        let section = if starts_section { n } else { n - 1 };
        if section >= 2 && key < self.marks[section - 2].1.as_slice() {
            let allowed = (self.records * OUTLIERS_PER_64 / 64).max(16);
            if (self.outliers.len() as u64) < allowed {
                self.outliers.push((key.to_vec(), offset, len));
            } else {
                self.banded = false;
                self.marks = Vec::new();
                self.outliers = Vec::new();
                self.blocks = Vec::new();
            }
            return;
        }
        let last_max = &mut self.marks[n - 1].1;
        if starts_section {
            let max = last_max.as_slice().max(key).to_vec();
            self.marks.push((offset, max));
        } else if key > last_max.as_slice() {
            set(last_max, key);
        }
        if let Some((_, block)) = self.blocks.last_mut() {
            match block {
                None => *block = Some((key.to_vec(), key.to_vec())),
                Some((min, max)) => {
                    if key < min.as_slice() {
                        set(min, key);
                    }
                    if key > max.as_slice() {
                        set(max, key);
                    }
                }
            }
        }
    }

    /// True if some record's key may lie in `[from, to)`.
    pub fn overlaps(&self, from: &[u8], to: Option<&[u8]>) -> bool {
        match &self.range {
            None => false,
            Some((min, max)) => max.as_slice() >= from && to.is_none_or(|t| min.as_slice() < t),
        }
    }

    /// For a banded segment whose records end at `len`, where the records
    /// with a key in `[from, to)` lie; `None` if the segment is not banded
    /// (any record may be anywhere). Records at or past `len` are left out.
    pub fn window(&self, from: &[u8], to: Option<&[u8]>, len: u64) -> Option<Window> {
        if !self.banded {
            return None;
        }
        let Some(first) = self.marks.first() else {
            return Some(Window {
                start: len,
                end: len,
                extra: Vec::new(),
            });
        };
        let m = &self.marks;
        let j = m.partition_point(|(_, max)| max.as_slice() < from);
        let start = m.get(j).map_or(len, |(o, _)| *o).max(first.0).min(len);
        let end = match to {
            None => len,
            Some(t) => {
                // Sections from `k` on hold in-band keys at least m[k - 2]'s.
                let i = m.partition_point(|(_, max)| max.as_slice() < t);
                m.get(i + 2).map_or(len, |(o, _)| *o)
            }
        }
        .clamp(start, len);
        let extra = self
            .outliers_in(from, to, len)
            .filter(|(o, _)| *o < start || *o >= end)
            .collect();
        Some(Window { start, end, extra })
    }

    /// (offset, length) of the outliers with a key in `[from, to)` that
    /// end by `len`.
    fn outliers_in<'a>(
        &'a self,
        from: &'a [u8],
        to: Option<&'a [u8]>,
        len: u64,
    ) -> impl Iterator<Item = (u64, u64)> + 'a {
        self.outliers
            .iter()
            .filter(move |(k, o, l)| {
                k.as_slice() >= from && to.is_none_or(|t| k.as_slice() < t) && o + l <= len
            })
            .map(|(_, o, l)| (*o, *l))
    }

    /// For a banded segment whose records end at `len`, what a scan of
    /// `[from, to)` reads, section by section (see [`ScanPlan`]); `None`
    /// if it is not banded.
    pub fn sections(&self, from: &[u8], to: Option<&[u8]>, len: u64) -> Option<ScanPlan> {
        let w = self.window(from, to, len)?;
        let m = &self.marks;
        let mut pieces = Vec::new();
        let first = m.partition_point(|(o, _)| *o < w.start);
        for j in first..m.len() {
            if m[j].0 >= w.end {
                break;
            }
            let floor = j
                .checked_sub(2)
                .map_or(Floor::None, |k| Floor::Key(m[k].1.clone()));
            pieces.push((m[j].0, floor));
        }
        // Every outlier of the range, those inside the sections too: they
        // break the floors the sections promise.
        let outliers = self.outliers_in(from, to, len).collect();
        Some(ScanPlan {
            pieces: Pieces::Sections(pieces.into()),
            end: w.end,
            outliers,
        })
    }

    /// For a banded segment, a key near the middle of its records of
    /// `[from, to)` and strictly inside that range: where a chunk holding
    /// them may be cut in two.
    pub fn middle_key(&self, from: &[u8], to: Option<&[u8]>, len: u64) -> Option<Vec<u8>> {
        let w = self.window(from, to, len)?;
        let m = &self.marks;
        let first = m.partition_point(|(o, _)| *o < w.start);
        let last = m.partition_point(|(o, _)| *o < w.end);
        let key = &m.get((first + last) / 2)?.1;
        (key.as_slice() > from && to.is_none_or(|t| key.as_slice() < t)).then(|| key.clone())
    }

    /// Memory of what the span keeps besides its range.
    pub fn bytes(&self) -> u64 {
        let keys = |k: &Vec<u8>| k.capacity() as u64;
        let marks: u64 = self.marks.iter().map(|(_, k)| keys(k) + 32).sum();
        let outliers: u64 = self.outliers.iter().map(|(k, ..)| keys(k) + 40).sum();
        let blocks: u64 = self
            .blocks
            .iter()
            .map(|(_, b)| 40 + b.as_ref().map_or(0, |(a, z)| keys(a) + keys(z) + 48))
            .sum();
        marks + outliers + blocks
    }

    /// For a banded segment that takes no more appends and whose records
    /// end at `len`: its block index, and the span without the per-block
    /// keys it replaces. `None` if the segment is not banded.
    pub fn freeze(&mut self, len: u64) -> Option<BlockIndex> {
        let blocks = std::mem::take(&mut self.blocks);
        if !self.banded {
            return None;
        }
        let (lo, hi) = self.range.as_ref()?;
        let shared = lo.iter().zip(hi).take_while(|(a, b)| a == b).count();
        let p = |k: &[u8]| prefix_at(k, shared);
        let mut index = BlockIndex {
            shared: lo[..shared].into(),
            running_max: Vec::with_capacity(blocks.len()),
            suffix_min: vec![0; blocks.len()],
            offset: Vec::with_capacity(blocks.len() + 1),
            outliers: self.outliers.clone(),
        };
        let mut running = 0;
        let mut mins = Vec::with_capacity(blocks.len());
        for (offset, keys) in &blocks {
            let (min, max) = keys.as_ref().map_or((u64::MAX, 0), |(a, z)| (p(a), p(z)));
            running = running.max(max);
            mins.push(min);
            index.running_max.push(running);
            index.offset.push(*offset);
        }
        // The smallest in-band key of each block and every later one.
        let mut least = u64::MAX;
        for (b, min) in mins.into_iter().enumerate().rev() {
            least = least.min(min);
            index.suffix_min[b] = least;
        }
        index.offset.push(len);
        Some(index)
    }
}

/// Per block of a frozen banded segment, of the 8-byte prefixes (after the
/// bytes every key of the segment shares) of its in-band keys: the largest
/// over it and every earlier block, the smallest over it and every later
/// block; and its offset (24 bytes a block); plus the segment's outliers.
/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct BlockIndex {
    shared: Box<[u8]>,
    running_max: Vec<u64>,
    suffix_min: Vec<u64>,
    /// Block starts, and the segment's end last.
    offset: Vec<u64>,
    outliers: Vec<(Vec<u8>, u64, u64)>,
}

impl BlockIndex {
    /// Block starts, and the segment's end last.
    #[cfg(test)]
    pub fn offsets(&self) -> &[u64] {
        &self.offset
    }

    /// (start, end) of every block or outlier record that may hold `key`.
    ///
    /// Truncating keys to prefixes keeps their order (not strictly), so
    /// blocks before the first whose running maximum reaches the key's
    /// prefix hold smaller keys, and from the first block whose suffix
    /// minimum passes it on, larger ones: the key can only be in the blocks
    /// between (one or two, for keys in order up to a small disorder).
    pub fn candidates(&self, key: &[u8]) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        if key.starts_with(&self.shared) {
            let p = prefix_at(key, self.shared.len());
            let first = self.running_max.partition_point(|&m| m < p);
            let stop = self.suffix_min.partition_point(|&m| m <= p).max(first);
            if stop > first {
                out.push((self.offset[first], self.offset[stop]));
            }
        }
        for (k, o, l) in &self.outliers {
            if k.as_slice() == key {
                out.push((*o, o + l));
            }
        }
        out
    }

    /// What a scan of `[from, to)` reads, block by block (see
    /// [`ScanPlan`]): from the first block whose running maximum reaches
    /// `from` to the first whose suffix minimum passes `to`.
    pub fn plan(self: &std::sync::Arc<Self>, from: &[u8], to: Option<&[u8]>) -> ScanPlan {
        let shared = self.shared.len();
        // A bound not starting with the shared bytes lies below or above
        // every key of the segment.
        let p = |k: &[u8]| -> Option<u64> {
            if k.starts_with(&self.shared) {
                Some(prefix_at(k, shared))
            } else {
                None
            }
        };
        let n = self.running_max.len();
        let first = match p(from) {
            Some(pf) => self.running_max.partition_point(|&m| m < pf),
            None if from < &self.shared[..] => 0,
            None => n,
        };
        let last = match to {
            None => n,
            Some(t) => match p(t) {
                Some(pt) => self.suffix_min.partition_point(|&m| m <= pt),
                None if t < &self.shared[..] => 0,
                None => n,
            },
        }
        .max(first);
        let outliers = self
            .outliers
            .iter()
            .filter(|(k, ..)| k.as_slice() >= from && to.is_none_or(|t| k.as_slice() < t))
            .map(|(_, o, l)| (*o, *l))
            .collect();
        ScanPlan {
            pieces: Pieces::Blocks {
                index: self.clone(),
                next: first,
                last,
            },
            end: self.offset[last],
            outliers,
        }
    }

    /// Bytes of log a block holds, on average.
    pub fn mean_block_bytes(&self) -> u64 {
        let span = self
            .offset
            .last()
            .zip(self.offset.first())
            .map_or(0, |(z, a)| z - a);
        span / self.running_max.len().max(1) as u64
    }

    /// Memory the index takes.
    pub fn bytes(&self) -> u64 {
        let blocks = self.running_max.len() as u64 * 24 + 8;
        let outliers: u64 = self
            .outliers
            .iter()
            .map(|(k, ..)| k.capacity() as u64 + 40)
            .sum();
        blocks + outliers + self.shared.len() as u64 + 64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Vec<u8> {
        format!("app7|{i:010}").into_bytes()
    }

    /// Notes `keys` as records of `len` bytes each; returns the span and
    /// each record's offset.
    fn span(keys: &[u32], len: u64) -> (KeySpan, Vec<u64>) {
        let mut s = KeySpan::new(128 * 1024);
        let mut offsets = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let offset = 48 + i as u64 * len;
            s.note(&key(*k), offset, len);
            offsets.push(offset);
        }
        (s, offsets)
    }

    #[test]
    fn every_record_of_a_key_is_in_a_candidate_block() {
        let mut rng = fastrand::Rng::with_seed(3);
        for (jitter, every, len) in [(0, u32::MAX, 300), (30, 211, 300), (120, 500, 90)] {
            let n = 20_000u32;
            let mut noisy: Vec<(u32, u32)> = (0..n).map(|i| (i + rng.u32(0..=jitter), i)).collect();
            noisy.sort_unstable();
            let mut keys: Vec<u32> = noisy.into_iter().map(|(_, k)| k).collect();
            for i in (0..keys.len()).step_by(every.min(n) as usize).skip(1) {
                keys[i] = rng.u32(0..i as u32); // a late rewrite
            }
            let (mut s, offsets) = span(&keys, len);
            assert!(s.banded, "jitter {jitter}");
            let end = offsets.last().map_or(48, |o| o + len);
            let index = s.freeze(end).expect("banded");
            assert!(s.blocks.is_empty(), "the per-block keys are let go");
            let mut read = 0u64;
            for probe in 0..2_000u32 {
                let k = rng.u32(0..n + 10);
                let candidates = index.candidates(&key(k));
                read += candidates.iter().map(|(a, b)| b - a).sum::<u64>();
                for (i, kk) in keys.iter().enumerate() {
                    if *kk == k {
                        let o = offsets[i];
                        assert!(
                            candidates.iter().any(|(a, b)| *a <= o && o < *b),
                            "probe {probe}: the record of {k} at {o} is in no candidate {candidates:?}"
                        );
                    }
                }
            }
            // A get reads the blocks its key's disorder spans on either
            // side (about one for small disorder), not the segment.
            let disorder = u64::from(jitter) * len;
            assert!(
                read / 2_000 <= 2 * disorder + 2 * s.block_bytes,
                "{} bytes a get",
                read / 2_000
            );
        }
    }

    #[test]
    fn a_block_holds_sixteen_records_unless_it_grows_four_times_its_size() {
        // 4 KiB blocks (64 KiB sections): 41 records of 100 bytes reach
        // 4 KiB; 800-byte ones wait for 16 records; 5,000-byte ones stop
        // at four times 4 KiB.
        for (len, per_block) in [(100u64, 41u64), (800, 16), (5_000, 4)] {
            let keys: Vec<u32> = (0..2_000).collect();
            let (mut s, offsets) = span(&keys, len);
            assert_eq!(s.block_bytes(), 4096);
            let end = offsets.last().map_or(48, |o| o + len);
            let index = s.freeze(end).expect("banded");
            let o = index.offsets();
            assert!(o.len() > 3, "{len}-byte records: {} blocks", o.len() - 1);
            for w in o.windows(2).take(o.len() - 2) {
                assert_eq!((w[1] - w[0]) / len, per_block, "{len}-byte records");
            }
            assert_eq!(index.mean_block_bytes(), (end - 48) / (o.len() as u64 - 1));
        }
    }

    #[test]
    fn windows_hold_every_record_of_their_range() {
        let mut rng = fastrand::Rng::with_seed(5);
        let n = 10_000u32;
        let mut noisy: Vec<(u32, u32)> = (0..n).map(|i| (i + rng.u32(0..=50), i)).collect();
        noisy.sort_unstable();
        let keys: Vec<u32> = noisy.into_iter().map(|(_, k)| k).collect();
        let (s, offsets) = span(&keys, 400);
        let len = offsets.last().map_or(48, |o| o + 400);
        for _ in 0..500 {
            let a = rng.u32(0..n);
            let b = a + rng.u32(1..500);
            let w = s.window(&key(a), Some(&key(b)), len).expect("banded");
            for (i, k) in keys.iter().enumerate() {
                if (a..b).contains(k) {
                    let o = offsets[i];
                    let inside = (w.start..w.end).contains(&o) || w.extra.iter().any(|e| e.0 == o);
                    assert!(inside, "{k} at {o} outside {w:?}");
                }
            }
            assert!(w.bytes() < len / 4, "a small range reads a small window");
        }
    }

    #[test]
    fn too_many_late_records_end_the_band() {
        let keys: Vec<u32> = (0..5_000)
            .map(|i| if i % 10 == 0 { i / 100 } else { i })
            .collect();
        let (mut s, _) = span(&keys, 300);
        assert!(!s.banded);
        assert_eq!(s.bytes(), 0, "an unbanded span keeps nothing but its range");
        assert!(s.freeze(10).is_none());
    }
}
