//! One log segment file: write-through appends, lock-free reads, group
//! syncs, per-part Bloom filters, and replay at open.
//!
//! A segment is cut into **parts** of about `part_bytes` each (a new part
//! starts at the first record whose offset passes the previous part's start
//! plus `part_bytes`), and each part has a Bloom filter of the keys whose
//! records start in it, so a get reads only the parts that may hold its key.
//!
//! Invariants:
//! - `append` (mutex) serializes appends: it takes the chunk's next counter,
//!   adds the record to a user-space buffer, sets the key's bits in its
//!   part's filter, and — for a write-through append, or when the buffer is
//!   full — writes the buffer to the file and only then stores the file's
//!   length in `written` and `published` (Release); a readable append
//!   (`AppendMode::Readable`) stores its end in `published` without writing.
//!   Readers load `published` (Acquire) and read below it without any lock,
//!   except for bytes at or past `written`, which they copy from the buffer
//!   under `append`; so they see only whole records, and every record they
//!   see has its filter bits set.
//! - Puts to chunks without a munk are readable appends, so reads of those
//!   chunks from the log see them at once. Puts to a chunk with a munk stay
//!   in the buffer unpublished (the munk serves their reads); whatever makes
//!   such a chunk's log readable again flushes first: eviction of the munk,
//!   a divert, a munk load's catch-up, a split, a sync.
//! - Parts are created under `append` and published by swapping `parts`
//!   (copy on write); a part's `start` is a record boundary and never moves.
//! - `synced` is the length known durable; concurrent syncs share one
//!   fsync (group commit, `crate::group_commit`).
//! - A segment stored in blocks (a sorted run: see `blocks`) keeps every
//!   offset above logical, as if its records lay in the file one after
//!   another; only `read_bytes_into` and `write_buffer` go through its
//!   block map. The map grows under `append` (and its own lock), before
//!   `published` passes the new blocks, so a reader finds every block
//!   below the length it loaded.

use super::blocks::BlockMap;
use super::check::{check_records, decode_checking, decode_records_checking, open_file};
use super::format::{self, DurableLengths, DurableMark, RecordPtr, SegmentImage, HEADER_LEN};
use super::index::SegmentIndex;
use super::span::{BlockIndex, KeySpan, ScanPlan, Window};

mod get;
mod in_blocks;
mod pages;
mod parts;
mod read;
mod sorted;
mod sync;
mod values;
use crate::cache::bloom::{key_hash, Bloom};
use crate::cache::budget::{heap_size, Kind, MemoryBudget};
use crate::codec::{self, FileHeader, FileKind, StoreId, FILE_HEADER_LEN};
use crate::error::{Error, Result};
use crate::group_commit::GroupCommit;
use crate::stats::FilterProbe;
use crate::vfs::{Storage, StorageFile};
use arc_swap::{ArcSwap, ArcSwapOption};
use in_blocks::Blocks;
use parking_lot::Mutex;
pub(crate) use parts::LogPart;
use parts::{fingerprint, pack, unpack, OpenPart, Parts};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
pub(crate) use values::ValueWindow;

/// How a segment sizes its parts and where it charges their filters.
#[derive(Debug, Clone)]
pub(crate) struct LogConfig {
    /// Target bytes per part (a part's filter summarizes this much log).
    pub part_bytes: u64,
    pub budget: Arc<MemoryBudget>,
    /// The store the logs belong to (in their headers and checksum seeds).
    pub store: StoreId,
    /// Durable lengths recorded by the last checkpoint before this open:
    /// damage before them is corruption, not a torn tail.
    pub durable: Arc<DurableLengths>,
    /// A read-only open: a torn tail is left as it is (reads stop before
    /// it) instead of being cut off.
    pub read_only: bool,
    /// Hand written pages to writeback as they are written
    /// ([`LOG_BYTES_PER_WRITE_BACK`]): in `Sync` mode, where the commit
    /// journal's syncs would otherwise queue behind the checkpointer's
    /// sync of 200 ms of logs.
    pub write_back: bool,
}

impl LogConfig {
    /// A configuration for tests: parts of `part_bytes`, a 1 GiB budget,
    /// store `store`, no checkpointed lengths, writable, no writeback.
    #[cfg(test)]
    pub fn for_tests(part_bytes: u64, store: u64) -> LogConfig {
        LogConfig {
            part_bytes,
            budget: Arc::new(MemoryBudget::new(1 << 30)),
            store: crate::codec::StoreId(store),
            durable: Arc::default(),
            read_only: false,
            write_back: false,
        }
    }

    /// Filter bits for one part: one bit per 8 bytes of log, at least 512.
    /// That is about 100 bits per key for 800-byte records and 8 for
    /// 60-byte ones.
    fn bloom_bits(&self) -> usize {
        usize::try_from(self.part_bytes / 8)
            .unwrap_or(usize::MAX)
            .max(512)
    }
}

/// Where a log's first record starts: after its file header.
pub(crate) const FIRST_RECORD: u64 = FILE_HEADER_LEN as u64;

/// Bytes buffered before they are written to the file.
const WRITE_BUFFER: usize = 64 * 1024;

/// Bytes of log a sorted index reads at a time while it is built.
const INDEX_PIECE: u64 = 1 << 20;

/// Bytes of readable appends a segment buffers before writing them; and,
/// at least, of any appends while write buffers are over their
/// share of the budget (`MemoryBudget::write_buffer_share`): past it, a
/// segment writes its buffer once it holds this much and gives its memory
/// back, and every flush (a sync, a freeze) gives the memory back too.
const SMALL_WRITE_BUFFER: usize = 4 * 1024;

/// A log's written pages are handed to writeback (`StorageFile::write_back`)
/// a piece this large at a time (RocksDB's `bytes_per_sync` does the same
/// for its files).
const LOG_BYTES_PER_WRITE_BACK: u64 = 512 << 10;

/// A banded log's synced pages are let go from the page cache
/// (`StorageFile::drop_cached`) a piece at least this large at a time.
///
/// A banded log is written in key order (a sequential load, an app's
/// time-ordered events): its pages are not read again soon, or are read
/// through a munk. Left cached, they filled a memory cgroup's page cache
/// as fast as puts wrote them, and the puts' own page allocations then
/// reclaimed, meeting pages still dirty: cgroup v1 puts such a thread to
/// sleep for up to 100 ms (`VMSCAN_THROTTLE_WRITEBACK`). Measured
/// (docs/results/2026-12-02-child-binaries, a sequential load of 2 GiB
/// at a 256 MiB cap, three alternating runs each): 75-397 throttles and
/// a worst put of 101-104 ms before, none and 18-23 ms after, 375K ->
/// 433K puts/s (median).
const LOG_BYTES_PER_CACHE_DROP: u64 = 1 << 20;

/// Who may read an appended record, and when it goes to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AppendMode {
    /// Written to the file (with everything buffered before it) before
    /// the append returns.
    Through,
    /// Readable at once, from the write buffer until it is written (when
    /// full, at a sync, a flush or a freeze); written through while the
    /// segment's records are in key order (banded).
    Readable,
    /// Left in the write buffer, unread until written: a munk serves it.
    Held,
}

#[derive(Debug)]
struct AppendState {
    /// Logical end: written plus buffered bytes.
    len: u64,
    /// Counter of the last record appended (0 before any).
    last_counter: u64,
    /// Bytes after the file's end (`published`), not written yet.
    buffer: Vec<u8>,
    /// Memory charged for `buffer` (its capacity).
    buffer_charged: u64,
    /// The records of the last, unsealed part: its directory once sealed.
    open_part: OpenPart,
    /// The keys appended so far: their range and whether they came in
    /// key order.
    span: KeySpan,
    /// Memory charged for `span`.
    span_charged: u64,
    /// Set once the segment takes no more appends.
    frozen: bool,
    /// The file's bytes below this were handed to writeback
    /// ([`LOG_BYTES_PER_WRITE_BACK`]).
    written_back: u64,
    /// The file's pages below this were let go from the page cache once
    /// synced ([`LOG_BYTES_PER_CACHE_DROP`]).
    cache_dropped: u64,
    /// Of a segment stored in blocks: the logical offset where each block
    /// held in `buffer` starts (the last one is still open), and the
    /// file's length.
    cuts: Vec<u64>,
    /// Records in the last block of `cuts`.
    cut_records: u64,
    file_len: u64,
    /// Of a segment not in blocks: the file's bytes from the page boundary
    /// at or below `file_len` up to it, when known (see
    /// [`LogSegment::write_pages`]); empty once frozen.
    tail: Vec<u8>,
    /// When the file's last page was last written, unless a sync came
    /// since (see [`LogSegment::write_pages`]).
    last_page_write: Option<std::time::Instant>,
}

#[derive(Debug)]
pub(crate) struct LogSegment {
    pub number: u64,
    pub path: PathBuf,
    seed: u32,
    file: Arc<dyn StorageFile>,
    config: LogConfig,
    append: Mutex<AppendState>,
    published: AtomicU64,
    /// Bytes in the file (of a segment not in blocks): below this, a read
    /// needs no bytes of the write buffer.
    written: AtomicU64,
    /// The logical length (written plus buffered), for size decisions.
    logical: AtomicU64,
    /// The durable end and the counter of the record ending there.
    synced: GroupCommit<DurableMark>,
    dirty: AtomicBool,
    parts: ArcSwap<Parts>,
    records: AtomicU64,
    max_counter: AtomicU64,
    /// Smallest and largest version of the records (`u64::MAX, 0` while
    /// empty), for operators.
    versions: [AtomicU64; 2],
    /// The sorted index, once a scan asked for it (see `index`).
    index: ArcSwapOption<SegmentIndex>,
    /// When a scan last used the index ([`index_tick`]): memory pressure
    /// drops the least recently used first.
    index_used: AtomicU64,
    /// Serializes building and extending the index.
    index_build: Mutex<()>,
    /// Indexes built from the first record, and builds not kept: more
    /// than one means scans read the whole log again for want of memory
    /// ([`LogSegment::index_rebuilt`]).
    index_builds: AtomicU32,
    /// The last index built and not kept, while a scan holds it: a
    /// reverse scan's windows, and scans running meanwhile, use it
    /// instead of reading the log whole again.
    unkept: Mutex<Weak<SegmentIndex>>,
    /// Set for a segment stored in blocks (a sorted run): where they lie.
    blocks: Option<Blocks>,
}

impl Drop for LogSegment {
    fn drop(&mut self) {
        self.config
            .budget
            .release(Kind::Filters, self.filter_bytes());
        let a = self.append.get_mut();
        a.open_part.clear(&self.config.budget);
        self.config
            .budget
            .release(Kind::Filters, std::mem::take(&mut a.span_charged));
        self.config
            .budget
            .release(Kind::WriteBuffers, std::mem::take(&mut a.buffer_charged));
        if let Some(b) = &self.blocks {
            self.config
                .budget
                .release(Kind::Filters, b.map.read().bytes());
        }
        self.drop_index();
    }
}

/// What replay found in a segment.
pub(crate) struct Replay {
    pub segment: LogSegment,
    /// Bytes cut off a torn tail.
    pub truncated: u64,
}

/// One record as an append reports it.
#[derive(Debug, Clone)]
pub(crate) struct Appended {
    pub ptr: RecordPtr,
}

impl LogSegment {
    pub fn file_name(number: u64) -> String {
        format::file_name(number)
    }

    /// Creates an empty segment: its header, written and synced. The caller
    /// syncs the directory. `generation` is the manifest generation durable
    /// now.
    pub fn create(
        storage: &dyn Storage,
        dir: &Path,
        number: u64,
        generation: u64,
        config: &LogConfig,
    ) -> Result<Self> {
        Self::create_as(storage, dir, number, generation, config, None)
    }

    /// Creates an empty segment stored in blocks (file format 4, see
    /// `blocks`), for a sorted run written whole: its blocks are
    /// LZ4-compressed when `compress` and that saves an eighth or more.
    pub fn create_run(
        storage: &dyn Storage,
        dir: &Path,
        number: u64,
        generation: u64,
        config: &LogConfig,
        compress: bool,
    ) -> Result<Self> {
        Self::create_as(storage, dir, number, generation, config, Some(compress))
    }

    /// [`create`](Self::create), stored in blocks if `blocks` says whether
    /// to compress them.
    fn create_as(
        storage: &dyn Storage,
        dir: &Path,
        number: u64,
        generation: u64,
        config: &LogConfig,
        blocks: Option<bool>,
    ) -> Result<Self> {
        let path = dir.join(Self::file_name(number));
        let file = storage.create(&path).map_err(|e| Error::io(&path, e))?;
        let header = FileHeader {
            format_version: match blocks {
                Some(_) => codec::BLOCK_LOG_FORMAT_VERSION,
                None => codec::FILE_FORMAT_VERSION,
            },
            kind: FileKind::Log,
            store: config.store,
            number,
            generation,
        };
        let encoded = header.encode();
        file.write_at(0, &encoded)
            .and_then(|()| file.sync())
            .map_err(|e| Error::io(&path, e))?;
        let mark = DurableMark {
            len: FILE_HEADER_LEN as u64,
            counter: 0,
        };
        let in_blocks = blocks.is_some();
        let blocks = blocks.map(|compress| (BlockMap::new(FIRST_RECORD), compress));
        let mut segment = Self::with_file(number, path, file, mark, config, blocks);
        if !in_blocks {
            // The file's last page as written, so that the first write
            // does not read it back (see `write_pages`).
            segment.append.get_mut().tail = encoded.to_vec();
        }
        Ok(segment)
    }

    /// A segment over `file`, whose records end at `mark`; `blocks` is the
    /// map of a segment stored in blocks and whether to compress its new
    /// ones.
    fn with_file(
        number: u64,
        path: PathBuf,
        file: Arc<dyn StorageFile>,
        mark: DurableMark,
        config: &LogConfig,
        blocks: Option<(BlockMap, bool)>,
    ) -> Self {
        let len = mark.len;
        let span = KeySpan::new(config.part_bytes);
        let file_len = blocks.as_ref().map_or(len, |(m, _)| m.end().1);
        let blocks = blocks.map(|(map, compress)| {
            config.budget.add(Kind::Filters, map.bytes());
            Blocks::new(map, compress, span.block_bytes())
        });
        LogSegment {
            number,
            path,
            seed: codec::seed(config.store, FileKind::Log, number),
            file,
            config: config.clone(),
            append: Mutex::new(AppendState {
                len,
                last_counter: mark.counter,
                buffer: Vec::new(),
                buffer_charged: 0,
                open_part: OpenPart::default(),
                span,
                span_charged: 0,
                frozen: false,
                written_back: file_len,
                cache_dropped: file_len & !4095,
                cuts: Vec::new(),
                cut_records: 0,
                file_len,
                tail: Vec::new(),
                last_page_write: None,
            }),
            logical: AtomicU64::new(len),
            published: AtomicU64::new(len),
            written: AtomicU64::new(len),
            synced: GroupCommit::new(mark),
            dirty: AtomicBool::new(false),
            parts: ArcSwap::from_pointee(Parts::default()),
            records: AtomicU64::new(0),
            max_counter: AtomicU64::new(0),
            versions: [AtomicU64::new(u64::MAX), AtomicU64::new(0)],
            index: ArcSwapOption::empty(),
            index_used: AtomicU64::new(0),
            index_build: Mutex::new(()),
            index_builds: AtomicU32::new(0),
            unkept: Mutex::new(Weak::new()),
            blocks,
        }
    }

    /// Bytes of the file (its header and records, or blocks) as written.
    pub fn file_bytes(&self) -> u64 {
        self.append.lock().file_len
    }

    /// Opens a segment, checks its header and every record, and builds the
    /// part filters. The file is read in bounded pieces. Damage before the
    /// durable length the last checkpoint recorded is corruption, and so is
    /// damage followed by a valid record; a damaged end after it (a torn
    /// tail: records being written at a crash) is cut off.
    pub fn open(
        storage: &dyn Storage,
        dir: &Path,
        number: u64,
        config: &LogConfig,
    ) -> Result<Replay> {
        let (path, file) = open_file(storage, dir, number)?;
        let seed = codec::seed(config.store, FileKind::Log, number);
        let mut records = Vec::new();
        let mut hashes = Vec::new();
        let mut span = KeySpan::new(config.part_bytes);
        let mut checked = check_records(
            &*file,
            &path,
            config.store,
            number,
            config.durable.get(&number).copied(),
            |r, key| {
                span.note(key, r.offset, r.record_len());
                hashes.push(key_hash(key));
                records.push(r.clone());
            },
        )?;
        let pos = checked.end;
        if checked.torn > 0 && config.read_only {
            log::warn!(
                "{}: a torn tail of {} bytes at offset {pos} (left as it is: read-only)",
                path.display(),
                checked.torn
            );
        } else if checked.torn > 0 {
            log::warn!(
                "{}: cutting a torn tail of {} bytes at offset {pos}",
                path.display(),
                checked.torn
            );
            file.truncate(pos)
                .and_then(|()| file.sync())
                .map_err(|e| Error::io(&path, e))?;
        }
        let last_counter = records.last().map_or(0, |r| r.counter);
        let end = DurableMark {
            len: pos,
            counter: last_counter,
        };
        // What this process read need not be on the device yet (a killed
        // process leaves its writes in the page cache): only the length a
        // checkpoint recorded is known durable, and the next checkpoint
        // syncs the rest before recording it.
        let synced = config.durable.get(&number).copied().unwrap_or(DurableMark {
            len: FIRST_RECORD,
            counter: 0,
        });
        let blocks = checked.blocks.take().map(|m| (m, false));
        let segment = Self::with_file(number, path, file, end, config, blocks);
        if synced != end {
            segment.synced.set_mark(synced);
            segment.dirty.store(true, Ordering::Release);
        }
        debug_assert_eq!(segment.seed, seed);
        let mut max_counter = 0;
        let mut parts = Parts::default();
        let mut open_part = OpenPart::default();
        // Parts are cut as appends cut them; the sealed ones are sorted
        // into the directory once, at the end.
        let mut sealed: Vec<(u32, u64)> = Vec::new();
        for (r, &hash) in records.iter().zip(&hashes) {
            max_counter = max_counter.max(r.counter);
            segment.note_version(r.version);
            if segment.starts_part(&parts, r.offset) {
                if let Some(old) = parts.tail.take() {
                    config.budget.release(Kind::Filters, old.bloom.bytes());
                    parts.sealed += 1;
                }
                sealed.extend_from_slice(&open_part.records);
                open_part.clear(&config.budget);
                parts.tail = Some(segment.new_part(r.offset));
            }
            let loc = pack(r.offset, r.record_len()).ok_or_else(|| {
                Error::corruption(&segment.path, r.offset, "log segment too large to index")
            })?;
            segment.note_record(&parts, &mut open_part, loc, hash);
        }
        let parts = Parts::new(sealed, parts.sealed, parts.tail);
        config.budget.add(Kind::Filters, parts.directory_bytes());
        {
            let mut a = segment.append.lock();
            a.open_part = open_part;
            a.span = span;
            segment.recharge_span(&mut a);
        }
        segment
            .records
            .store(records.len() as u64, Ordering::Relaxed);
        segment.max_counter.store(max_counter, Ordering::Relaxed);
        segment.parts.store(Arc::new(parts));
        Ok(Replay {
            segment,
            truncated: checked.torn,
        })
    }

    /// True if a record at `offset` starts a new part.
    fn starts_part(&self, parts: &Parts, offset: u64) -> bool {
        parts
            .tail
            .as_ref()
            .is_none_or(|t| offset >= t.start + self.config.part_bytes)
    }

    /// A new unsealed part at `start`, its filter charged.
    fn new_part(&self, start: u64) -> LogPart {
        let bloom = Bloom::with_bits(self.config.bloom_bits());
        self.config.budget.add(Kind::Filters, bloom.bytes());
        LogPart { start, bloom }
    }

    /// Adds the record at `offset` to the unsealed part: sets the key's
    /// filter bits and notes it in `open_part`.
    fn note_record(&self, parts: &Parts, open_part: &mut OpenPart, loc: u64, hash: u64) {
        if let Some(t) = &parts.tail {
            t.bloom.insert(hash);
        }
        open_part.push(&self.config.budget, fingerprint(hash), loc);
    }

    /// The parts after sealing the unsealed one (its records move to the
    /// directory) and starting a new one at `start`.
    fn seal(&self, current: &Parts, open_part: &mut OpenPart, start: u64) -> Parts {
        let entries = std::mem::take(&mut open_part.records);
        open_part.clear(&self.config.budget);
        let sealed = current.sealed + usize::from(current.tail.is_some());
        let parts = current.merged(entries, sealed, Some(self.new_part(start)));
        let budget = &self.config.budget;
        budget.add(Kind::Filters, parts.directory_bytes());
        budget.release(Kind::Filters, current.bytes());
        parts
    }

    fn note_version(&self, version: u64) {
        self.versions[0].fetch_min(version, Ordering::Relaxed);
        self.versions[1].fetch_max(version, Ordering::Relaxed);
    }

    /// Smallest and largest version of the records; `None` while empty.
    pub fn version_range(&self) -> Option<(u64, u64)> {
        let (lo, hi) = (
            self.versions[0].load(Ordering::Relaxed),
            self.versions[1].load(Ordering::Relaxed),
        );
        (lo <= hi).then_some((lo, hi))
    }

    /// True unless every record is older than `stamp` (version, counter):
    /// no record's version passes the largest version, and none's counter
    /// the largest counter. Both grow under the append mutex before the
    /// record is readable, so a get that found `stamp` elsewhere may skip
    /// this segment when this says false.
    pub fn may_hold_newer(&self, stamp: (u64, u64)) -> bool {
        let Some((_, max_version)) = self.version_range() else {
            return false;
        };
        (max_version, self.max_counter()) >= stamp
    }

    /// True if the records came in key order up to a bounded disorder
    /// (see [`KeySpan`]); an empty segment is not banded.
    pub fn is_banded(&self) -> bool {
        self.append.lock().span.banded
    }

    /// True once the segment takes no more appends (see `freeze`).
    pub fn is_frozen(&self) -> bool {
        self.append.lock().frozen
    }

    /// True if the segment is banded over enough sections for that to
    /// say something about its order (see [`KeySpan::tested_banded`]).
    pub fn is_tested_banded(&self) -> bool {
        self.append.lock().span.tested_banded()
    }

    /// True if some record's key may lie in `[from, to)` (its key range
    /// meets it).
    pub fn overlaps(&self, from: &[u8], to: Option<&[u8]>) -> bool {
        self.append.lock().span.overlaps(from, to)
    }

    /// The offsets `[start, end)` below `upto` (and the published length)
    /// that hold every record with a key in `[from, to)`: a window of a
    /// banded segment (see [`KeySpan`]), else the whole segment.
    pub fn window(&self, from: &[u8], to: Option<&[u8]>, upto: u64) -> Window {
        let len = self.len().min(upto).max(FIRST_RECORD);
        let a = self.append.lock();
        let whole = |start| Window {
            start,
            end: len,
            extra: Vec::new(),
        };
        match a.span.window(from, to, len) {
            Some(w) => w,
            None if a.span.range.is_none() => whole(len),
            None => whole(FIRST_RECORD),
        }
    }

    /// For a banded segment, what a scan of `[from, to)` reads (see
    /// [`ScanPlan`]): block by block once it is frozen, else section by
    /// section. `None` if it is not banded.
    pub fn scan_plan(&self, from: &[u8], to: Option<&[u8]>) -> Option<ScanPlan> {
        if let Some((blocks, _)) = &self.parts.load().blocks {
            return Some(blocks.plan(from, to));
        }
        let len = self.len();
        self.append.lock().span.sections(from, to, len)
    }

    /// For a banded segment, a key near the middle of its records of
    /// `[from, to)` and strictly inside that range: where a chunk holding
    /// them may be cut in two. `None` if the segment is not banded or has
    /// no such key.
    pub fn middle_key(&self, from: &[u8], to: Option<&[u8]>) -> Option<Vec<u8>> {
        let len = self.len();
        self.append.lock().span.middle_key(from, to, len)
    }

    /// Charges (or returns) the change in the span's memory.
    fn recharge_span(&self, a: &mut AppendState) {
        let now = a.span.bytes();
        self.config
            .budget
            .recharge(Kind::Filters, &mut a.span_charged, now);
    }

    /// Records appended so far.
    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Parts (each with its Bloom filter).
    pub fn part_count(&self) -> usize {
        self.parts.load().count()
    }

    /// Bytes readable now: every record below this offset is whole, in
    /// the file or (appended readable) in the write buffer.
    pub fn len(&self) -> u64 {
        self.published.load(Ordering::Acquire)
    }

    /// Bytes appended so far, buffered ones included.
    pub fn appended(&self) -> u64 {
        self.logical.load(Ordering::Acquire)
    }

    /// Writes buffered appends to the file (no sync).
    pub fn flush(&self) -> Result<()> {
        let mut a = self.append.lock();
        self.write_buffer(&mut a)
    }

    /// Writes buffered appends to the file; returns the written end and the
    /// counter of the record ending there.
    fn flush_mark(&self) -> Result<DurableMark> {
        let mut a = self.append.lock();
        self.write_buffer(&mut a)?;
        Ok(DurableMark {
            len: a.len,
            counter: a.last_counter,
        })
    }

    /// The durable end of the log and the counter of its last durable
    /// record, as the last sync left them.
    pub fn durable_mark(&self) -> DurableMark {
        self.synced.mark()
    }

    /// Writes the whole buffer to the file (a segment stored in blocks
    /// closes its open block).
    fn write_buffer(&self, a: &mut AppendState) -> Result<()> {
        self.write_out(a, true)
    }

    /// Writes the buffer to the file; of a segment stored in blocks, only
    /// its closed blocks unless `all`.
    fn write_out(&self, a: &mut AppendState, all: bool) -> Result<()> {
        if a.buffer.is_empty() {
            return Ok(());
        }
        if let Some(b) = &self.blocks {
            if !self.write_blocks(b, a, all)? {
                return Ok(());
            }
        } else {
            self.write_pages(a)?;
        }
        // Paced writeback in `Sync` mode: whole pages behind the end, a
        // piece at a time, so the checkpointer's sync (every 200 ms) does
        // not write them in one burst that the commit journal's syncs
        // queue behind. (In `Buffered` mode it cost a sequential load a
        // fifth of its speed.) Starting writeback does not wait for it.
        let paged = a.file_len & !4095;
        if self.config.write_back && paged >= a.written_back + LOG_BYTES_PER_WRITE_BACK {
            self.file.write_back(a.written_back, paged - a.written_back);
            a.written_back = paged;
        }
        // A frozen segment takes no more appends, and past their share
        // the buffers give their memory back. The last page's bytes (under
        // a page) stay until buffers and last pages take that share and a
        // thirty-second of the budget (buffers go first): without them the
        // segment's next write reads that page back, in the put that
        // writes it (see `write_pages`).
        // Measured reason: P zipf-composite at 8x a 256 MiB cap, with the
        // last pages given back past the buffers' share, puts read pages
        // back in 311 of the workers' uninterruptible waits, one for 681
        // ms behind the device's queue of writes.
        if a.buffer.is_empty() && (a.frozen || self.buffers_over_share()) {
            a.buffer = Vec::new();
        }
        self.recharge_buffer(a);
        if !a.tail.is_empty() && (a.frozen || self.last_pages_over_share()) {
            a.tail = Vec::new();
            self.recharge_buffer(a);
        }
        Ok(())
    }

    /// True when the write buffers of all segments hold more than their
    /// share of the budget.
    fn buffers_over_share(&self) -> bool {
        self.write_buffers_over(0)
    }

    /// True when the write buffers and last pages of all segments hold
    /// more than the buffers' share of the budget plus a thirty-second of
    /// it (2 MiB of a 64 MiB budget: the last pages of 500 segments or
    /// more, each under 4 KiB): past that, last pages are given back too.
    fn last_pages_over_share(&self) -> bool {
        self.write_buffers_over(self.config.budget.limit() / 32)
    }

    /// True when write buffers and last pages take more than the buffers'
    /// share of the budget plus `allowance`.
    fn write_buffers_over(&self, allowance: u64) -> bool {
        let budget = &self.config.budget;
        budget.kind_used(Kind::WriteBuffers) > budget.write_buffer_share() + allowance
    }

    /// Charges the write buffer's capacity, and the last page's bytes
    /// kept for the next write, to the budget.
    fn recharge_buffer(&self, a: &mut AppendState) {
        let now = heap_size(a.buffer.capacity()) + heap_size(a.tail.capacity());
        self.config
            .budget
            .recharge(Kind::WriteBuffers, &mut a.buffer_charged, now);
    }

    /// The largest counter of any record in the segment.
    pub fn max_counter(&self) -> u64 {
        self.max_counter.load(Ordering::Relaxed)
    }

    /// Memory of this segment's directory and filter.
    pub fn filter_bytes(&self) -> u64 {
        self.parts.load().bytes()
    }

    /// Appends one record; its counter is taken from `counter` here, so
    /// records land in the file in counter order. With `write_through` the
    /// record (and anything buffered before it) is in the file on return,
    /// else it may stay in the write buffer, unread until written.
    pub fn append(
        &self,
        key: &[u8],
        value: Option<&[u8]>,
        version: u64,
        counter: &AtomicU64,
        write_through: bool,
    ) -> Result<Appended> {
        let mode = match write_through {
            true => AppendMode::Through,
            false => AppendMode::Held,
        };
        self.append_as(key, value, version, counter, mode)
    }

    /// [`append`](Self::append), readable as `mode` says.
    pub fn append_as(
        &self,
        key: &[u8],
        value: Option<&[u8]>,
        version: u64,
        counter: &AtomicU64,
        mode: AppendMode,
    ) -> Result<Appended> {
        let mut a = self.append.lock();
        let offset = a.len;
        let record_len = HEADER_LEN + key.len() + value.map_or(0, <[u8]>::len);
        let Some(loc) = pack(offset, record_len as u64) else {
            return Err(Error::InvalidArgument(format!(
                "{}: log segment too large to index",
                self.path.display()
            )));
        };
        // A buffer that would grow past the write buffers' share is
        // written first (and then keeps its capacity, or gives it back).
        if a.buffer.len() + record_len > a.buffer.capacity() && !a.buffer.is_empty() {
            let budget = &self.config.budget;
            let growth = heap_size(a.buffer.capacity().max(record_len));
            if budget.kind_used(Kind::WriteBuffers) + growth > budget.write_buffer_share() {
                // A segment in blocks writes only closed blocks: the open
                // one closes here, or the buffer would keep growing with
                // it (up to `span::closes_block`'s largest block).
                if self.blocks.is_some() && a.cuts.last().is_some_and(|&c| c < offset) {
                    a.cuts.push(offset);
                    a.cut_records = 0;
                }
                self.write_out(&mut a, false)?;
            }
        }
        if let Some(b) = &self.blocks {
            // Blocks close where the span's do (a get reads one).
            if a.cuts
                .last()
                .is_none_or(|&c| super::span::closes_block(c, offset, a.cut_records, b.block_bytes))
            {
                a.cuts.push(offset);
                a.cut_records = 0;
            }
            a.cut_records += 1;
        }
        let c = counter.fetch_add(1, Ordering::Relaxed);
        let before = a.buffer.len();
        format::encode(&mut a.buffer, self.seed, key, value, version, c);
        let end = offset + (a.buffer.len() - before) as u64;
        a.len = end;
        a.last_counter = c;
        let hash = key_hash(key);
        a.span.note(key, offset, record_len as u64);
        let a = &mut *a;
        let current = self.parts.load();
        if current.blocks.is_some() {
            return Err(Error::InvalidArgument(format!(
                "{}: an append to a frozen log segment",
                self.path.display()
            )));
        }
        if self.starts_part(&current, offset) {
            let parts = self.seal(&current, &mut a.open_part, offset);
            self.parts.store(Arc::new(parts));
            self.recharge_span(a);
        }
        let parts = self.parts.load();
        self.note_record(&parts, &mut a.open_part, loc, hash);
        self.records.fetch_add(1, Ordering::Relaxed);
        self.max_counter.fetch_max(c, Ordering::Relaxed);
        self.note_version(version);
        self.dirty.store(true, Ordering::Release);
        self.logical.store(end, Ordering::Release);
        self.recharge_buffer(a);
        // Appends in key order (a sequential load, a chunk's time-ordered
        // appends) are written through even when readable: buffered,
        // sequential loads at 256 MiB ran 7% slower and a third of them had
        // a put wait 100 ms, none written through (12 alternating pairs).
        let mode = match mode {
            AppendMode::Readable if a.span.banded => AppendMode::Through,
            mode => mode,
        };
        let through = mode == AppendMode::Through;
        // Readable appends are written a few pages at a time: a put that
        // wrote 64 KiB at once into the page cache of a full memory cgroup
        // waited for its reclaim (`reclaim_throttle`, 100 ms) in most
        // sequential loads at 256 MiB.
        let full = a.buffer.len() >= WRITE_BUFFER
            || (a.buffer.len() >= SMALL_WRITE_BUFFER
                && (mode == AppendMode::Readable || self.buffers_over_share()));
        if through || full {
            self.write_out(a, through)?;
        }
        if mode == AppendMode::Readable {
            // Readers find the records past the file's end in the buffer
            // (`read_bytes_into`).
            self.published.fetch_max(end, Ordering::Release);
        }
        Ok(Appended {
            ptr: RecordPtr {
                version,
                counter: c,
                offset,
                key_len: key.len() as u32,
                value_len: value.map_or(0, <[u8]>::len) as u32,
                tombstone: value.is_none(),
            },
        })
    }

    /// Makes everything appended so far durable.
    pub fn sync_all(&self) -> Result<bool> {
        self.sync_to(self.appended())
    }

    /// True if something was appended since the last full sync.
    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }

    /// Asks the file system to start reading `[start, end)`, which a
    /// rebuild is about to read whole (see `StorageFile::will_need`).
    pub fn prefetch(&self, start: u64, end: u64) {
        let (start, end) = match &self.blocks {
            Some(b) => {
                let map = b.map.read();
                match map.cover(start, end.min(map.end().0)) {
                    Some((i, j)) => (map.at(i).1, map.at(j).1),
                    None => return,
                }
            }
            None => (start, end),
        };
        self.file.will_need(start, end.saturating_sub(start));
    }

    /// Syncs what is in the file, leaving the buffer and the durable
    /// mark as they are: paced writeback while a run is written whole.
    pub fn sync_written(&self) -> Result<()> {
        self.file.sync().map_err(|e| Error::io(&self.path, e))
    }
}

#[cfg(test)]
mod tests;
