//! Scans of banded log segments (see `span`): the records of a key range
//! read piece by piece, in file order, and returned in key order without
//! an index.
//!
//! A banded segment's records are in key order up to a bounded disorder:
//! every in-band record of a piece has a key at least the piece's
//! **floor** — for a segment still taking appends, the largest key two
//! 64 KiB sections back; for a frozen one, the smallest key of its block
//! and every later block — and the segment lists its few outliers.
//! So once the pieces before piece `j` are read, every key below `j`'s
//! floor has all its records in memory and can be returned. A scan holds a
//! few pieces' records at a time and reads each byte of its window once,
//! in reads that grow from 8 KiB of blocks (one block at least) to 128
//! KiB as the scan goes on.

use super::buffers::{BufferPool, READS};
use super::segment::LogSegment;
use super::span::Pieces;
use crate::error::Result;
use std::cmp::Reverse;
use std::collections::VecDeque;
use std::sync::Arc;

/// Bytes of blocks the first read of a scan takes (at least one block),
/// and the most any read takes.
const FIRST_READ_BYTES: u64 = 8 << 10;
const MAX_READ_BYTES: u64 = 128 << 10;

/// Images of earlier reads a scan keeps to read into again.
const KEPT_IMAGES: usize = 2;

/// About the most a scan of a banded segment holds at once: a read of
/// [`MAX_READ_BYTES`] of blocks (or one 64 KiB section and the two before
/// it), the one before whose records are still pending, and a kept one.
pub(crate) const BANDED_SCAN_MEMORY: u64 = (1 + KEPT_IMAGES as u64) * MAX_READ_BYTES;

/// A key or value of a record a scan read: a range of the bytes read,
/// shared with the other records of the same read, copied only when a
/// caller asks ([`ImageBytes::to_vec`]). A scan reads many more records
/// than it returns the values of, and a copy of each key and value (two
/// allocations a record) took a seventh of the stream's query time.
#[derive(Debug, Clone)]
pub(crate) struct ImageBytes {
    bytes: Arc<Vec<u8>>,
    range: std::ops::Range<usize>,
}

impl ImageBytes {
    pub fn as_slice(&self) -> &[u8] {
        // The range comes from a checked record of these bytes.
        self.bytes.get(self.range.clone()).unwrap_or_default()
    }

    pub fn to_vec(&self) -> Vec<u8> {
        self.as_slice().to_vec()
    }
}

impl PartialEq for ImageBytes {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for ImageBytes {}

impl PartialOrd for ImageBytes {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ImageBytes {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_slice().cmp(other.as_slice())
    }
}

/// One record read from a banded segment.
#[derive(Debug, Clone)]
pub(crate) struct BandRecord {
    pub version: u64,
    pub counter: u64,
    /// `None` for a tombstone.
    pub value: Option<ImageBytes>,
}

/// A record's key and stamp, ordered newest first within a key.
type PendingKey = (ImageBytes, Reverse<(u64, u64)>);

/// A cursor over the records of `[from, to)` of one banded segment.
#[derive(Debug)]
pub(crate) struct BandedScan {
    seg: Arc<LogSegment>,
    /// Pieces not read yet: (offset, floor of it and every later one).
    pieces: Pieces,
    /// Where the last piece ends.
    end: u64,
    /// Pieces the next read takes (it doubles, up to `max_batch`).
    batch: usize,
    /// [`MAX_READ_BYTES`] of blocks, 1 for 64 KiB sections.
    max_batch: usize,
    from: Vec<u8>,
    to: Option<Vec<u8>>,
    /// Records read and not returned, sorted by (key, newest first). A
    /// read's records come nearly sorted and mostly above those pending:
    /// sorting them and appending (merging when they are not above) costs
    /// a fraction of a tree's insertion per record.
    pending: VecDeque<(PendingKey, BandRecord)>,
    /// Offsets of the outliers read first, sorted.
    outliers: Vec<u64>,
    /// The bytes of the last reads: once no pending record refers to one,
    /// the next read goes into it instead of a new buffer (a new one of
    /// 128 KiB, past glibc's mmap threshold, cost a map, zeroed pages and
    /// an unmap per read). New ones come from `pool`, and go back to it
    /// when the scan is dropped.
    images: Vec<Arc<Vec<u8>>>,
    pool: &'static BufferPool,
}

impl Drop for BandedScan {
    fn drop(&mut self) {
        // Records still pending share the images: let them go first.
        self.pending.clear();
        for image in self.images.drain(..) {
            if let Ok(buf) = Arc::try_unwrap(image) {
                self.pool.give(buf);
            }
        }
    }
}

impl BandedScan {
    /// A scan of `[from, to)` of `seg`; `None` if the segment is not banded.
    pub fn new(seg: &Arc<LogSegment>, from: &[u8], to: Option<&[u8]>) -> Result<Option<Self>> {
        let Some(plan) = seg.scan_plan(from, to) else {
            return Ok(None);
        };
        let extra = plan.outliers;
        // Blocks are read a few at first, then twice as many at each next
        // read; sections one at a time.
        let (first_batch, max_batch) = match &plan.pieces {
            Pieces::Blocks { index, .. } => {
                let blocks = |bytes: u64| (bytes / index.mean_block_bytes().max(1)).max(1) as usize;
                (blocks(FIRST_READ_BYTES), blocks(MAX_READ_BYTES))
            }
            Pieces::Sections(_) => (1, 1),
        };
        let mut scan = BandedScan {
            seg: seg.clone(),
            pieces: plan.pieces,
            end: plan.end,
            batch: first_batch,
            max_batch,
            from: from.to_vec(),
            to: to.map(<[u8]>::to_vec),
            pending: VecDeque::new(),
            outliers: Vec::new(),
            images: Vec::new(),
            pool: &READS,
        };
        // Outliers may hold any key of the range: read them first (and
        // skip them when their section is read: they may be returned by
        // then).
        for &(offset, len) in &extra {
            scan.read(offset, offset + len)?;
        }
        scan.outliers = extra.into_iter().map(|(offset, _)| offset).collect();
        scan.outliers.sort_unstable();
        Ok(Some(scan))
    }

    /// Reads the records between two record boundaries into `pending`.
    fn read(&mut self, start: u64, end: u64) -> Result<()> {
        // A kept image no record refers to any more, or a new buffer.
        let free = self.images.iter().position(|b| Arc::strong_count(b) == 1);
        let buf = free
            .and_then(|i| Arc::try_unwrap(self.images.swap_remove(i)).ok())
            .unwrap_or_else(|| self.pool.take());
        let image = self.seg.image_range_into(start, end, buf)?;
        if self.images.len() >= KEPT_IMAGES {
            self.images.remove(0);
        }
        self.images.push(image.bytes.clone());
        let mut read: Vec<(PendingKey, BandRecord)> = Vec::with_capacity(image.records.len());
        for r in &image.records {
            if self.outliers.binary_search(&(start + r.offset)).is_ok() {
                continue;
            }
            let key = image.key(r);
            if key < self.from.as_slice() || self.to.as_deref().is_some_and(|t| key >= t) {
                continue;
            }
            let share = |range| ImageBytes {
                bytes: image.bytes.clone(),
                range,
            };
            let record = BandRecord {
                version: r.version,
                counter: r.counter,
                value: image.value_range(r).map(share),
            };
            let key = share(image.key_range(r));
            read.push(((key, Reverse((r.version, r.counter))), record));
        }
        // (A stable sort finds the sorted stretches of nearly sorted input.)
        read.sort_by(|a, b| a.0.cmp(&b.0));
        let above = match (self.pending.back(), read.first()) {
            (Some((last, _)), Some((first, _))) => last < first,
            _ => true,
        };
        if above {
            self.pending.extend(read);
        } else {
            // Two sorted runs, the older first: the stable sort merges them.
            let mut all = Vec::from(std::mem::take(&mut self.pending));
            all.extend(read);
            all.sort_by(|a, b| a.0.cmp(&b.0));
            self.pending = all.into();
        }
        Ok(())
    }

    /// The smallest key left, reading pieces until every record of it is
    /// in memory.
    pub fn peek_key(&mut self) -> Result<Option<&[u8]>> {
        loop {
            let ready = match self.pending.front().map(|(k, _)| k) {
                _ if self.pieces.len() == 0 => true,
                None => false,
                // Unread pieces hold only keys at or above their floor.
                Some((k, _)) => self.pieces.floor_above(k.as_slice()),
            };
            if ready {
                return Ok(self.pending.front().map(|((k, _), _)| k.as_slice()));
            }
            let Some(start) = self.pieces.next_offset() else {
                continue;
            };
            self.pieces.skip(self.batch);
            self.batch = (self.batch * 2).min(self.max_batch);
            let end = self.pieces.next_offset().unwrap_or(self.end);
            self.read(start, end)?;
        }
    }

    /// False only when every key left is known, without reading, to be
    /// above `key` (the records in memory and the floor of the pieces not
    /// read say so); true may be a false alarm. Monotone: false for a key,
    /// false for every smaller one. A merge asks this before
    /// [`peek_key`](Self::peek_key), so a segment is read only once the
    /// merge reaches its keys (a scan that stops early never reads the
    /// pieces it did not reach).
    pub fn may_hold_up_to(&self, key: &[u8]) -> bool {
        match self.pending.front() {
            Some(((k, _), _)) if k.as_slice() <= key => true,
            _ => self.pieces.len() > 0 && !self.pieces.floor_above(key),
        }
    }

    /// Removes and returns the records of `key` (newest first). Call after
    /// [`peek_key`](Self::peek_key) returned it, or when
    /// [`may_hold_up_to`](Self::may_hold_up_to) said no (then it returns
    /// none): otherwise some of the key's records may be unread.
    pub fn take(&mut self, key: &[u8]) -> Vec<BandRecord> {
        let mut out = Vec::new();
        while let Some(((k, _), _)) = self.pending.front() {
            if k.as_slice() != key {
                break;
            }
            if let Some((_, record)) = self.pending.pop_front() {
                out.push(record);
            }
        }
        debug_assert!(
            out.is_empty() || self.pieces.len() == 0 || self.pieces.floor_above(key),
            "records of a key taken before all of them were read"
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::funk::log::LogConfig;
    use crate::vfs::{MemFs, Storage};
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::sync::atomic::AtomicU64;

    fn config() -> LogConfig {
        LogConfig::for_tests(128 * 1024, 5)
    }

    /// Appends `keys` (with values naming their position) to a new segment;
    /// returns it and, per key, the newest value.
    fn segment(
        fs: &MemFs,
        number: u64,
        keys: &[u32],
    ) -> (Arc<LogSegment>, BTreeMap<Vec<u8>, Vec<u8>>) {
        let dir = Path::new("/band");
        fs.create_dir_all(dir).expect("directory");
        let seg = LogSegment::create(fs, dir, number, 1, &config()).expect("create");
        let counter = AtomicU64::new(1);
        let mut model = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            let key = format!("key{k:08}").into_bytes();
            let value = format!("value {i} {}", "x".repeat(300)).into_bytes();
            seg.append(&key, Some(&value), i as u64 + 1, &counter, true)
                .expect("append");
            model.insert(key, value);
        }
        (Arc::new(seg), model)
    }

    /// Ascending keys with local disorder (each key lands up to `jitter`
    /// places from its place in order) and, every `every` keys, a rewrite
    /// of an older key, far behind the band.
    fn disordered(n: u32, jitter: u32, every: u32, rng: &mut fastrand::Rng) -> Vec<u32> {
        let mut noisy: Vec<(u32, u32)> =
            (0..n).map(|i| (i + rng.u32(0..=jitter), i * 10)).collect();
        noisy.sort_unstable();
        let mut keys: Vec<u32> = noisy.into_iter().map(|(_, k)| k).collect();
        for i in (0..keys.len()).step_by(every as usize).skip(1) {
            keys[i] = rng.u32(0..i as u32) * 10;
        }
        keys
    }

    fn scan(seg: &Arc<LogSegment>, from: &[u8], to: Option<&[u8]>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut s = BandedScan::new(seg, from, to)
            .expect("scan")
            .expect("banded");
        let mut out = Vec::new();
        while let Some(k) = s.peek_key().expect("read").map(<[u8]>::to_vec) {
            let records = s.take(&k);
            assert!(
                records
                    .windows(2)
                    .all(|w| (w[0].version, w[0].counter) > (w[1].version, w[1].counter)),
                "records of a key come newest first"
            );
            let newest = records.into_iter().next().expect("a record");
            out.push((k, newest.value.expect("a value").to_vec()));
        }
        out
    }

    #[test]
    fn scans_of_banded_segments_return_every_key_of_the_range_in_order() {
        let fs = MemFs::new();
        let mut rng = fastrand::Rng::with_seed(7);
        for (round, (jitter, every)) in [(0, 1_000_000), (3, 1_000_000), (40, 97), (150, 500)]
            .into_iter()
            .enumerate()
        {
            let keys = disordered(4000, jitter, every, &mut rng);
            let (seg, model) = segment(&fs, round as u64 + 1, &keys);
            assert!(seg.is_banded(), "round {round}: jitter {jitter}");
            // Section by section while it takes appends, block by block
            // once frozen.
            for frozen in [false, true] {
                if frozen {
                    seg.freeze().expect("freeze");
                }
                for _ in 0..40 {
                    let a = rng.u32(0..41_000);
                    let b = a + rng.u32(0..8_000);
                    let from = format!("key{a:08}").into_bytes();
                    let to = format!("key{b:08}").into_bytes();
                    let to = (rng.u8(..) > 30).then_some(to);
                    let want: Vec<_> = model
                        .range(from.clone()..)
                        .take_while(|(k, _)| to.as_ref().is_none_or(|t| *k < t))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    let got = scan(&seg, &from, to.as_deref());
                    let show = |v: &[(Vec<u8>, Vec<u8>)]| -> Vec<String> {
                        v.iter()
                            .map(|(k, v)| {
                                let v = String::from_utf8_lossy(&v[..12]).into_owned();
                                format!("{}={v}", String::from_utf8_lossy(k))
                            })
                            .collect()
                    };
                    if got != want {
                        let (g, w) = (show(&got), show(&want));
                        let at = g
                            .iter()
                            .zip(&w)
                            .position(|(a, b)| a != b)
                            .unwrap_or(g.len().min(w.len()));
                        panic!(
                        "round {round}: {} keys, want {}; first difference at {at}: {:?} vs {:?}",
                        g.len(),
                        w.len(),
                        &g[at.saturating_sub(2)..(at + 3).min(g.len())],
                        &w[at.saturating_sub(2)..(at + 3).min(w.len())]
                    );
                    }
                    // The window holds every record of the range, and is
                    // smaller than the segment for a small range.
                    let w = seg.window(&from, to.as_deref(), u64::MAX);
                    assert!(w.bytes() <= seg.len());
                    // Gets find every key through the directory or blocks.
                    if let Some((k, v)) = model.range(from.clone()..).next() {
                        let mut probe = crate::stats::FilterProbe::default();
                        let hash = crate::cache::bloom::key_hash(k);
                        let got = seg
                            .lookup(k, hash, &|_, _| true, &mut probe)
                            .expect("get")
                            .expect("found");
                        assert_eq!(got.1.as_ref(), Some(v), "round {round} frozen {frozen}");
                    }
                }
            }
        }
    }

    /// A merge asks whether a segment may hold keys at or below another
    /// source's key, which need not share the bytes every key of this
    /// segment starts with: keys below those bytes come before all of the
    /// segment's, keys above them after.
    #[test]
    fn a_scan_knows_without_reading_which_keys_it_may_hold() {
        let fs = MemFs::new();
        let keys: Vec<u32> = (0..4000).map(|i| i * 10).collect();
        let (seg, _) = segment(&fs, 9, &keys);
        seg.freeze().expect("freeze");
        let s = BandedScan::new(&seg, b"key00010000", None)
            .expect("scan")
            .expect("banded");
        assert!(!s.may_hold_up_to(b"a"), "below the segment's shared bytes");
        assert!(!s.may_hold_up_to(b"key0"), "a prefix of the shared bytes");
        assert!(
            !s.may_hold_up_to(b"key00000500"),
            "below the scan's first block"
        );
        assert!(s.may_hold_up_to(b"key00010000"), "the range's first key");
        assert!(s.may_hold_up_to(b"key00030000"));
        assert!(s.may_hold_up_to(b"kez"), "above the shared bytes");
        assert!(s.may_hold_up_to(b"z"), "above the shared bytes");
    }

    #[test]
    fn a_finished_scan_leaves_its_buffers_to_the_next_scan() {
        let fs = MemFs::new();
        let keys: Vec<u32> = (0..4000).map(|i| i * 10).collect();
        let (seg, model) = segment(&fs, 1, &keys);
        // A pool of its own (the engine's is shared with other tests).
        let pool: &'static BufferPool = Box::leak(Box::new(BufferPool::new()));
        let open = || {
            let mut s = BandedScan::new(&seg, b"", None)
                .expect("scan")
                .expect("banded");
            s.pool = pool;
            s
        };
        let mut first = open();
        let mut n = 0;
        while let Some(k) = first.peek_key().expect("read").map(<[u8]>::to_vec) {
            assert!(!first.take(&k).is_empty());
            n += 1;
        }
        assert_eq!(n, model.len());
        assert_eq!(pool.len(), 0, "a scan keeps its buffers while it lives");
        drop(first);
        assert_eq!(pool.len(), KEPT_IMAGES, "the scan's buffers go back");
        // The next scan reads into them rather than into new buffers.
        let mut next = open();
        next.peek_key().expect("read");
        assert!(pool.len() < KEPT_IMAGES, "the next scan took them");
        drop(next);
        assert_eq!(pool.len(), KEPT_IMAGES);
    }

    #[test]
    fn a_shuffled_segment_is_not_banded() {
        let fs = MemFs::new();
        let mut rng = fastrand::Rng::with_seed(9);
        let mut keys: Vec<u32> = (0..3000).collect();
        rng.shuffle(&mut keys);
        let (seg, _) = segment(&fs, 1, &keys);
        assert!(!seg.is_banded());
        assert!(BandedScan::new(&seg, b"", None).expect("scan").is_none());
        let w = seg.window(b"key00000010", Some(b"key00000020"), u64::MAX);
        assert_eq!(
            (w.start, w.end),
            (super::super::segment::FIRST_RECORD, seg.len())
        );
    }

    #[test]
    fn a_replayed_segment_keeps_its_band() {
        let fs = MemFs::new();
        let mut rng = fastrand::Rng::with_seed(11);
        let keys = disordered(3000, 20, 300, &mut rng);
        let (seg, model) = segment(&fs, 1, &keys);
        let before = seg.window(b"key00010000", Some(b"key00012000"), u64::MAX);
        drop(seg);
        let replay = LogSegment::open(&fs, Path::new("/band"), 1, &config()).expect("open");
        let seg = Arc::new(replay.segment);
        assert!(seg.is_banded());
        assert_eq!(
            seg.window(b"key00010000", Some(b"key00012000"), u64::MAX),
            before
        );
        let all: Vec<_> = model.into_iter().collect();
        assert_eq!(scan(&seg, b"", None), all);
    }
}
