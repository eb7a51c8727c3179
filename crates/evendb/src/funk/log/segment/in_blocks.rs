//! Writing and reading a segment stored in blocks (a sorted run, file
//! format 4: see `funk::log::blocks` for the byte map). Offsets stay
//! logical everywhere else; here the buffer's records are cut into blocks,
//! compressed where that pays and written back to back, and reads of
//! logical ranges read, check and decompress the blocks that hold them.

use super::*;
use crate::funk::log::blocks;
use crate::funk::log::buffers::READS;
use parking_lot::RwLock;

/// How a segment stored in blocks is written and where its blocks lie.
#[derive(Debug)]
pub(super) struct Blocks {
    /// Compress blocks that shrink by an eighth or more.
    pub compress: bool,
    /// Records per block, at most, before the one that passes it: the
    /// span's block size, so that a get or a scan of a span block reads
    /// one stored block.
    pub block_bytes: u64,
    pub map: RwLock<BlockMap>,
}

impl Blocks {
    pub fn new(map: BlockMap, compress: bool, block_bytes: u64) -> Self {
        Blocks {
            compress,
            block_bytes,
            map: RwLock::new(map),
        }
    }
}

impl LogSegment {
    /// Writes the buffer's closed blocks (all of them if `all`) to the
    /// file, compressed where that pays, notes them in the map and
    /// publishes their records. False if no block was closed.
    pub(super) fn write_blocks(&self, b: &Blocks, a: &mut AppendState, all: bool) -> Result<bool> {
        let closed = if all {
            a.cuts.len()
        } else {
            a.cuts.len().saturating_sub(1)
        };
        if closed == 0 {
            return Ok(false);
        }
        let base = a.len - a.buffer.len() as u64;
        let end_of = |i: usize| a.cuts.get(i + 1).copied().unwrap_or(a.len);
        let mut out = Vec::new();
        let mut placed = Vec::with_capacity(closed);
        for i in 0..closed {
            let (lo, hi) = (a.cuts[i], end_of(i));
            let raw = a
                .buffer
                .get((lo - base) as usize..(hi - base) as usize)
                .unwrap_or_default();
            let at = a.file_len + out.len() as u64;
            blocks::encode_block(&mut out, self.seed, lo, raw, b.compress);
            placed.push((lo, at, hi, a.file_len + out.len() as u64));
        }
        self.file
            .write_at(a.file_len, &out)
            .map_err(|e| Error::io(&self.path, e))?;
        let written = end_of(closed - 1);
        a.file_len += out.len() as u64;
        a.buffer.drain(..(written - base) as usize);
        a.cuts.drain(..closed);
        {
            let mut map = b.map.write();
            let before = map.bytes();
            for (lo, at, hi, end) in placed {
                map.push(lo, at, hi, end);
            }
            self.config.budget.add(Kind::Filters, map.bytes() - before);
        }
        self.published.store(written, Ordering::Release);
        Ok(true)
    }

    /// [`read_bytes_into`](Self::read_bytes_into) of a segment stored in
    /// blocks: reads the blocks that hold `[start, end)` with one read,
    /// checks and decompresses them, and keeps the bytes asked for.
    pub(super) fn read_blocks_into(
        &self,
        b: &Blocks,
        start: u64,
        end: u64,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        if start >= end {
            return Ok(());
        }
        let (first, blocks) = {
            let map = b.map.read();
            let (i, j) = map.cover(start, end).ok_or_else(|| {
                Error::corruption(
                    &self.path,
                    start,
                    format!("log range {start}..{end} is not in the segment's blocks"),
                )
            })?;
            (map.at(i), (i..=j).map(|k| map.at(k)).collect::<Vec<_>>())
        };
        let (last_logical, last_file) = blocks.last().copied().unwrap_or(first);
        let stored = usize::try_from(last_file - first.1)
            .map_err(|_| Error::corruption(&self.path, first.1, "log range too large"))?;
        // The stored bytes go through a buffer of the pool, back to it
        // after (see `buffers`; one a read fails is simply freed).
        let mut frames = READS.take_len(stored);
        self.file
            .read_at(first.1, &mut frames)
            .map_err(|e| Error::io(&self.path, e))?;
        buf.reserve(usize::try_from(last_logical - first.0).unwrap_or(0));
        for pair in blocks.windows(2) {
            let ((lo, at), (hi, next)) = (pair[0], pair[1]);
            let frame = frames
                .get((at - first.1) as usize..(next - first.1) as usize)
                .unwrap_or_default();
            let corrupt = |d: &str| Error::corruption(&self.path, at, d);
            let head = blocks::decode_block(frame, self.seed, lo, buf).map_err(corrupt)?;
            if u64::from(head.raw_len) != hi - lo {
                return Err(corrupt("log block holds another length than its place"));
            }
        }
        READS.give(frames);
        let skip = (start - first.0) as usize;
        buf.truncate(skip + (end - start) as usize);
        buf.drain(..skip);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::funk::log::BandedScan;
    use crate::vfs::{MemFs, Storage};
    use std::collections::BTreeMap;

    const DIR: &str = "/runs";

    /// Per key, its newest value (`None`: deleted).
    type Newest = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

    fn config() -> LogConfig {
        LogConfig::for_tests(128 * 1024, 5)
    }

    /// A run as `write_run` writes one: keys in order, each key's versions
    /// oldest first, some of them deletes, appended without write-through,
    /// then synced and frozen. Values are JSON-like (compressible) or
    /// random. Returns the run and, per key, its newest value.
    fn run(fs: &MemFs, number: u64, json: bool) -> (Arc<LogSegment>, Newest) {
        fs.create_dir_all(Path::new(DIR)).expect("directory");
        let seg =
            LogSegment::create_run(fs, Path::new(DIR), number, 1, &config(), true).expect("create");
        let mut rng = fastrand::Rng::with_seed(number);
        let mut newest = BTreeMap::new();
        for i in 0..3_000u64 {
            let key = format!("user{i:08}").into_bytes();
            for v in 0..1 + i % 3 {
                let value = if i % 17 == 0 && v == 0 {
                    None
                } else if json {
                    Some(
                        format!(
                            "{{\"id\":{i},\"name\":\"user{i:08}\",\"city\":\"Springfield\",\"tags\":[\"a\",\"b\"],\"v\":{v}}}"
                        )
                        .into_bytes(),
                    )
                } else {
                    Some((0..1000).map(|_| rng.u8(..)).collect())
                };
                let counter = AtomicU64::new(i * 4 + v);
                seg.append(&key, value.as_deref(), 10 + v, &counter, false)
                    .expect("append");
                newest.insert(key.clone(), value);
            }
        }
        seg.sync_all().expect("sync");
        seg.freeze().expect("freeze");
        (Arc::new(seg), newest)
    }

    fn get(seg: &LogSegment, key: &[u8]) -> Result<Option<Option<Vec<u8>>>> {
        let mut probe = FilterProbe::default();
        Ok(seg
            .lookup(key, key_hash(key), &|_, _| true, &mut probe)?
            .map(|(_, v)| v))
    }

    /// Every newest value through gets, a banded scan and a whole image.
    fn reads_back(seg: &Arc<LogSegment>, newest: &Newest) {
        for (key, value) in newest {
            assert_eq!(get(seg, key).expect("get").as_ref(), Some(value), "{key:?}");
        }
        assert_eq!(get(seg, b"user99999999").expect("get"), None);
        let (from, to) = (b"user00000500".as_slice(), b"user00002500".as_slice());
        let mut scan = BandedScan::new(seg, from, Some(to))
            .expect("scan")
            .expect("a run is banded");
        let mut seen = Vec::new();
        while let Some(k) = scan.peek_key().expect("read").map(<[u8]>::to_vec) {
            let records = scan.take(&k);
            let value = records[0].value.as_ref().map(|v| v.to_vec());
            assert_eq!(Some(&value), newest.get(&k), "{k:?}");
            seen.push(k);
        }
        let want: Vec<_> = newest
            .range(from.to_vec()..to.to_vec())
            .map(|e| e.0.clone())
            .collect();
        assert_eq!(seen, want);
        let image = seg.image(seg.len()).expect("image");
        assert_eq!(image.records.len() as u64, seg.records());
    }

    #[test]
    fn a_compressed_run_reads_back_through_gets_scans_and_replay() {
        let fs = MemFs::new();
        let (seg, newest) = run(&fs, 1, true);
        let (stored, logical) = (seg.file_bytes(), seg.appended());
        assert!(
            stored * 3 < logical,
            "{stored} bytes stored for {logical} bytes of records"
        );
        // Each block a get or a scan reads off the block index is one
        // stored block.
        let index = seg
            .parts
            .load()
            .blocks
            .as_ref()
            .map(|b| b.0.clone())
            .expect("a frozen run has a block index");
        let stored_blocks = seg
            .blocks
            .as_ref()
            .expect("stored in blocks")
            .map
            .read()
            .logical_offsets();
        assert!(stored_blocks.len() > 100);
        assert_eq!(index.offsets(), stored_blocks.as_slice());
        let path = Path::new(DIR).join(LogSegment::file_name(1));
        assert_eq!(fs.open(&path).and_then(|f| f.len()).expect("len"), stored);
        reads_back(&seg, &newest);
        let records = seg.records();
        drop(seg);
        let replay = LogSegment::open(&fs, Path::new(DIR), 1, &config()).expect("replay");
        assert_eq!(replay.truncated, 0);
        let seg = Arc::new(replay.segment);
        assert_eq!(
            (seg.records(), seg.len(), seg.file_bytes()),
            (records, logical, stored)
        );
        seg.freeze().expect("freeze");
        reads_back(&seg, &newest);
        let checked =
            crate::funk::log::check_file(&fs, Path::new(DIR), 1, StoreId(5), None).expect("check");
        assert_eq!(
            (checked.records, checked.end, checked.torn),
            (records, logical, 0)
        );
    }

    #[test]
    fn an_incompressible_run_is_stored_raw_and_reads_back() {
        let fs = MemFs::new();
        let (seg, newest) = run(&fs, 2, false);
        let (stored, logical) = (seg.file_bytes(), seg.appended());
        // Raw blocks: the records and a 16-byte header per block.
        assert!(
            stored >= logical && stored < logical + logical / 100,
            "{stored} for {logical}"
        );
        reads_back(&seg, &newest);
    }

    /// Flips one byte inside a block of the file behind a run's back.
    fn flip(fs: &MemFs, number: u64, at: u64) {
        let path = Path::new(DIR).join(LogSegment::file_name(number));
        let f = fs.open(&path).expect("open");
        let mut b = [0u8; 1];
        f.read_at(at, &mut b).expect("read");
        f.write_at(at, &[b[0] ^ 0x20]).expect("write");
    }

    /// Stored compressed or not, a block's checksum is what finds the damage
    /// (reads check records' headers again, not their bodies).
    #[test]
    fn a_flipped_byte_in_a_block_is_a_typed_corruption() {
        for compress in [true, false] {
            let fs = MemFs::new();
            let (seg, newest) = run(&fs, 3, compress);
            let at = seg.file_bytes() / 2;
            flip(&fs, 3, at);
            // The live segment: a whole read, and a get of each key (those of
            // the damaged block fail, the others read as before).
            let err = seg.image(seg.len()).expect_err("damage is found");
            assert!(err.is_corruption(), "{err:?}");
            let mut damaged = 0;
            for (key, value) in &newest {
                match get(&seg, key) {
                    Ok(found) => assert_eq!(found.as_ref(), Some(value)),
                    Err(e) => {
                        assert!(e.is_corruption(), "{e:?}");
                        damaged += 1;
                    }
                }
            }
            assert!(
                damaged > 0 && damaged < newest.len() / 10,
                "{damaged} keys failed"
            );
            drop(seg);
            // Replay and the whole-file check refuse it.
            let err = LogSegment::open(&fs, Path::new(DIR), 3, &config())
                .err()
                .expect("refused");
            assert!(err.is_corruption(), "{err:?}");
            let err = crate::funk::log::check_file(&fs, Path::new(DIR), 3, StoreId(5), None)
                .expect_err("refused");
            assert!(err.is_corruption(), "{err:?}");
        }
    }

    #[test]
    fn salvage_keeps_the_blocks_before_the_first_damaged_one() {
        let fs = MemFs::new();
        let (seg, _) = run(&fs, 5, true);
        let (records, stored) = (seg.records(), seg.file_bytes());
        drop(seg);
        let salvage = |fs: &MemFs| {
            let mut n = 0u64;
            let damage =
                crate::funk::log::salvage(fs, Path::new(DIR), 5, StoreId(5), &mut |_| n += 1)
                    .expect("salvage");
            (n, damage)
        };
        assert_eq!(salvage(&fs), (records, Vec::new()));
        flip(&fs, 5, stored / 2);
        let (n, damage) = salvage(&fs);
        assert!(
            n > records / 3 && n < records,
            "{n} of {records} records kept"
        );
        assert_eq!(damage.len(), 1, "{damage:?}");
        let (at, len, _) = &damage[0];
        assert!(*at <= stored / 2 && at + len == stored, "{damage:?}");
    }

    #[test]
    fn a_run_cut_short_is_corruption_not_a_torn_tail() {
        let fs = MemFs::new();
        let (seg, _) = run(&fs, 4, true);
        let stored = seg.file_bytes();
        drop(seg);
        let path = Path::new(DIR).join(LogSegment::file_name(4));
        let f = fs.open(&path).expect("open");
        f.truncate(stored - 100).expect("truncate");
        let err = LogSegment::open(&fs, Path::new(DIR), 4, &config())
            .err()
            .expect("refused");
        assert!(err.is_corruption(), "{err:?}");
        assert_eq!(f.len().expect("len"), stored - 100, "nothing is cut off");
    }
}
