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
//!   length in `published` (Release). Readers load `published` (Acquire) and
//!   read the file below it without any lock, so they see only whole
//!   records, and every record they see has its filter bits set.
//! - Puts to chunks without a munk write through, so reads of those chunks
//!   from disk see them at once. Puts to a chunk with a munk may stay in the
//!   buffer (the munk serves their reads); whatever makes such a chunk's log
//!   readable again flushes first: eviction of the munk, a divert, a munk
//!   load's catch-up, a split, a sync.
//! - Parts are created under `append` and published by swapping `parts`
//!   (copy on write); a part's `start` is a record boundary and never moves.
//! - `synced` (mutex) is the length known durable. One thread at a time
//!   syncs; threads whose record is already covered return at once, so
//!   concurrent synchronous puts share one fsync.

use super::format::{self, Header, HEADER_LEN};
use super::index::SegmentIndex;
use crate::cache::bloom::{key_hash, Bloom};
use crate::cache::budget::{heap_size, Kind, MemoryBudget};
use crate::codec::{self, FileKind};
use crate::entry::KIND_DELETE;
use crate::error::{Error, Result};
use crate::stats::FilterProbe;
use crate::vfs::{Storage, StorageFile};
use arc_swap::{ArcSwap, ArcSwapOption};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Where one record sits, with what is needed to order and find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordPtr {
    pub version: u64,
    pub counter: u64,
    pub offset: u64,
    pub key_len: u32,
    pub value_len: u32,
    pub tombstone: bool,
}

impl RecordPtr {
    pub fn record_len(&self) -> u64 {
        HEADER_LEN as u64 + u64::from(self.key_len) + u64::from(self.value_len)
    }

    pub fn stamp(&self) -> (u64, u64) {
        (self.version, self.counter)
    }
}

/// How a segment sizes its parts and where it charges their filters.
#[derive(Debug, Clone)]
pub(crate) struct LogConfig {
    /// Target bytes per part (a part's filter summarizes this much log).
    pub part_bytes: u64,
    pub budget: Arc<MemoryBudget>,
}

impl LogConfig {
    /// Filter bits for one part: one bit per 8 bytes of log, at least 512.
    /// That is about 100 bits per key for 800-byte records and 8 for
    /// 60-byte ones.
    fn bloom_bits(&self) -> usize {
        usize::try_from(self.part_bytes / 8)
            .unwrap_or(usize::MAX)
            .max(512)
    }
}

#[derive(Debug)]
pub(crate) struct LogPart {
    /// Offset of the part's first record.
    pub start: u64,
    pub bloom: Bloom,
    /// Where each record of the part starts, set once when the next part
    /// begins (the part is sealed): a get whose filter says maybe reads only
    /// the records whose fingerprint matches, not the whole part.
    directory: OnceLock<PartDirectory>,
}

/// The records of a sealed part: a 32-bit fingerprint of each key (the high
/// half of [`key_hash`]) and the record's offset from the part's start, in
/// log order. A record ends where the next one starts (the last one at
/// `len`).
#[derive(Debug)]
struct PartDirectory {
    fingerprints: Box<[u32]>,
    offsets: Box<[u32]>,
    /// Bytes of the part.
    len: u32,
}

impl PartDirectory {
    fn bytes(&self) -> u64 {
        2 * heap_size(self.offsets.len() * 4)
    }

    /// Start and end (relative to the part) of each record whose key has
    /// fingerprint `fp`.
    fn matches(&self, fp: u32) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.fingerprints
            .iter()
            .enumerate()
            .filter(move |(_, f)| **f == fp)
            .map(move |(i, _)| {
                let start = self.offsets[i];
                let end = self.offsets.get(i + 1).copied().unwrap_or(self.len);
                (u64::from(start), u64::from(end))
            })
    }
}

/// The fingerprint a part directory keeps for a key hash.
fn fingerprint(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// Bytes buffered before they are written to the file.
const WRITE_BUFFER: usize = 64 * 1024;

#[derive(Debug)]
struct AppendState {
    /// Logical end: written plus buffered bytes.
    len: u64,
    /// Bytes after the file's end (`published`), not written yet.
    buffer: Vec<u8>,
    /// The records of the last, unsealed part: its directory once sealed.
    open_part: OpenPart,
}

/// (fingerprint, offset from the part's start) of each record of a part
/// not sealed yet, with the memory charged for it.
#[derive(Debug, Default)]
struct OpenPart {
    records: Vec<(u32, u32)>,
    charged: u64,
}

impl OpenPart {
    fn push(&mut self, budget: &MemoryBudget, fp: u32, local: u32) {
        self.records.push((fp, local));
        let now = heap_size(self.records.capacity() * 8);
        if now != self.charged {
            budget.add(Kind::Filters, now.saturating_sub(self.charged));
            budget.release(Kind::Filters, self.charged.saturating_sub(now));
            self.charged = now;
        }
    }

    /// Empties the list and returns its memory.
    fn clear(&mut self, budget: &MemoryBudget) {
        self.records = Vec::new();
        budget.release(Kind::Filters, std::mem::take(&mut self.charged));
    }
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
    /// The logical length (written plus buffered), for size decisions.
    logical: AtomicU64,
    synced: Mutex<u64>,
    dirty: AtomicBool,
    parts: ArcSwap<Vec<Arc<LogPart>>>,
    records: AtomicU64,
    max_counter: AtomicU64,
    /// Smallest and largest version of the records (`u64::MAX, 0` while
    /// empty), for operators.
    versions: [AtomicU64; 2],
    /// The sorted index, once a scan asked for it (see `index`).
    index: ArcSwapOption<SegmentIndex>,
    /// Serializes building and extending the index.
    index_build: Mutex<()>,
}

impl Drop for LogSegment {
    fn drop(&mut self) {
        self.config
            .budget
            .release(Kind::Filters, self.filter_bytes());
        self.append.get_mut().open_part.clear(&self.config.budget);
        self.drop_index();
    }
}

/// What replay found in a segment.
pub(crate) struct Replay {
    pub segment: LogSegment,
    /// Bytes cut off a torn tail.
    pub truncated: u64,
}

/// The records of a segment up to some length, read into memory: the raw
/// bytes and one pointer per record, in log order.
#[derive(Debug, Clone)]
pub(crate) struct SegmentImage {
    pub bytes: Arc<[u8]>,
    pub records: Vec<RecordPtr>,
}

impl SegmentImage {
    pub fn key(&self, r: &RecordPtr) -> &[u8] {
        let start = r.offset as usize + HEADER_LEN;
        self.bytes
            .get(start..start + r.key_len as usize)
            .unwrap_or_default()
    }

    /// The value of a record (`None` for a tombstone).
    pub fn value(&self, r: &RecordPtr) -> Option<&[u8]> {
        if r.tombstone {
            return None;
        }
        let start = r.offset as usize + HEADER_LEN + r.key_len as usize;
        self.bytes.get(start..start + r.value_len as usize)
    }
}

/// One record as an append reports it.
#[derive(Debug, Clone)]
pub(crate) struct Appended {
    pub ptr: RecordPtr,
    /// The segment's length after the record (what a synchronous put syncs to).
    pub end: u64,
}

impl LogSegment {
    pub fn file_name(number: u64) -> String {
        format!("{number:06}.log")
    }

    /// Creates an empty segment. The caller syncs the directory.
    pub fn create(
        storage: &dyn Storage,
        dir: &Path,
        number: u64,
        config: &LogConfig,
    ) -> Result<Self> {
        let path = dir.join(Self::file_name(number));
        let file = storage.create(&path).map_err(|e| Error::io(&path, e))?;
        Ok(Self::with_file(number, path, file, 0, config))
    }

    fn with_file(
        number: u64,
        path: PathBuf,
        file: Arc<dyn StorageFile>,
        len: u64,
        config: &LogConfig,
    ) -> Self {
        LogSegment {
            number,
            path,
            seed: codec::seed(FileKind::Log, number),
            file,
            config: config.clone(),
            append: Mutex::new(AppendState {
                len,
                buffer: Vec::new(),
                open_part: OpenPart::default(),
            }),
            logical: AtomicU64::new(len),
            published: AtomicU64::new(len),
            synced: Mutex::new(len),
            dirty: AtomicBool::new(false),
            parts: ArcSwap::from_pointee(Vec::new()),
            records: AtomicU64::new(0),
            max_counter: AtomicU64::new(0),
            versions: [AtomicU64::new(u64::MAX), AtomicU64::new(0)],
            index: ArcSwapOption::empty(),
            index_build: Mutex::new(()),
        }
    }

    /// Opens a segment, checks every record and builds the part filters. A
    /// torn tail (a damaged record with no valid record after it) is cut
    /// off; damage followed by a valid record is corruption and fails the
    /// open.
    pub fn open(
        storage: &dyn Storage,
        dir: &Path,
        number: u64,
        config: &LogConfig,
    ) -> Result<Replay> {
        let path = dir.join(Self::file_name(number));
        let file = match storage.open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::MissingFile(path))
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let len = file.len().map_err(|e| Error::io(&path, e))?;
        let len_usize = usize::try_from(len)
            .map_err(|_| Error::corruption(&path, 0, "log larger than the address space"))?;
        let mut data = vec![0u8; len_usize];
        file.read_at(0, &mut data)
            .map_err(|e| Error::io(&path, e))?;
        let seed = codec::seed(FileKind::Log, number);
        let (records, pos) = decode_records(&data, 0, seed);
        let mut truncated = 0;
        if pos < data.len() {
            if (pos + 1..data.len()).any(|p| decode_at(&data, p, seed).is_some()) {
                return Err(Error::corruption(
                    &path,
                    pos as u64,
                    "damaged log record followed by valid records",
                ));
            }
            truncated = (data.len() - pos) as u64;
            log::warn!(
                "{}: cutting a torn tail of {truncated} bytes at offset {pos}",
                path.display()
            );
            file.truncate(pos as u64)
                .and_then(|()| file.sync())
                .map_err(|e| Error::io(&path, e))?;
        }
        let segment = Self::with_file(number, path, file, pos as u64, config);
        let mut max_counter = 0;
        let mut parts = Vec::new();
        let mut open_part = OpenPart::default();
        for r in &records {
            max_counter = max_counter.max(r.counter);
            segment.note_version(r.version);
            let key = record_key(&data, r);
            segment.add_to_part(&mut parts, &mut open_part, r.offset, key_hash(key));
        }
        segment.append.lock().open_part = open_part;
        segment
            .records
            .store(records.len() as u64, Ordering::Relaxed);
        segment.max_counter.store(max_counter, Ordering::Relaxed);
        segment.parts.store(Arc::new(parts));
        Ok(Replay { segment, truncated })
    }

    /// Checks every record of segment `number` without changing the file:
    /// returns the number of whole records and the bytes of a torn tail.
    /// Damage followed by a valid record is corruption.
    pub fn check_file(storage: &dyn Storage, dir: &Path, number: u64) -> Result<(u64, u64)> {
        let path = dir.join(Self::file_name(number));
        let file = match storage.open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::MissingFile(path))
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let len = file.len().map_err(|e| Error::io(&path, e))?;
        let len = usize::try_from(len)
            .map_err(|_| Error::corruption(&path, 0, "log larger than the address space"))?;
        let mut data = vec![0u8; len];
        file.read_at(0, &mut data)
            .map_err(|e| Error::io(&path, e))?;
        let seed = codec::seed(FileKind::Log, number);
        let (records, pos) = decode_records(&data, 0, seed);
        if pos < data.len() && (pos + 1..data.len()).any(|p| decode_at(&data, p, seed).is_some()) {
            return Err(Error::corruption(
                &path,
                pos as u64,
                "damaged log record followed by valid records",
            ));
        }
        Ok((records.len() as u64, (data.len() - pos) as u64))
    }

    /// Adds the record at `offset` to the part holding it: sets the key's
    /// filter bits and notes it in `open_part`. When `offset` is past the
    /// last part's span, that part is sealed (its directory built from
    /// `open_part`) and a new part starts (in `parts`, which the caller
    /// publishes). Returns true if a part was added.
    fn add_to_part(
        &self,
        parts: &mut Vec<Arc<LogPart>>,
        open_part: &mut OpenPart,
        offset: u64,
        hash: u64,
    ) -> bool {
        let needs_new = parts
            .last()
            .is_none_or(|p| offset >= p.start + self.config.part_bytes);
        if needs_new {
            if let Some(last) = parts.last() {
                self.seal(last, &open_part.records, offset);
            }
            open_part.clear(&self.config.budget);
            let bloom = Bloom::with_bits(self.config.bloom_bits());
            self.config.budget.add(Kind::Filters, bloom.bytes());
            parts.push(Arc::new(LogPart {
                start: offset,
                bloom,
                directory: OnceLock::new(),
            }));
        }
        if let Some(p) = parts.last() {
            p.bloom.insert(hash);
            // A part spans less than 4 GiB unless one record does; such a
            // part gets no directory (gets read it whole).
            let local = u32::try_from(offset - p.start).unwrap_or(u32::MAX);
            open_part.push(&self.config.budget, fingerprint(hash), local);
        }
        needs_new
    }

    /// Gives `part`, which ends at `end`, its directory.
    fn seal(&self, part: &LogPart, records: &[(u32, u32)], end: u64) {
        let Ok(len) = u32::try_from(end - part.start) else {
            return;
        };
        let directory = PartDirectory {
            fingerprints: records.iter().map(|r| r.0).collect(),
            offsets: records.iter().map(|r| r.1).collect(),
            len,
        };
        self.config.budget.add(Kind::Filters, directory.bytes());
        if let Err(unused) = part.directory.set(directory) {
            self.config.budget.release(Kind::Filters, unused.bytes());
        }
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

    /// Records appended so far.
    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Parts (each with its Bloom filter).
    pub fn part_count(&self) -> usize {
        self.parts.load().len()
    }

    /// Bytes readable now: every record below this offset is whole and in
    /// the file.
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

    fn write_buffer(&self, a: &mut AppendState) -> Result<()> {
        if a.buffer.is_empty() {
            return Ok(());
        }
        let at = a.len - a.buffer.len() as u64;
        self.file
            .write_at(at, &a.buffer)
            .map_err(|e| Error::io(&self.path, e))?;
        a.buffer.clear();
        self.published.store(a.len, Ordering::Release);
        Ok(())
    }

    /// The largest counter of any record in the segment.
    pub fn max_counter(&self) -> u64 {
        self.max_counter.load(Ordering::Relaxed)
    }

    /// Memory of this segment's filters and part directories.
    pub fn filter_bytes(&self) -> u64 {
        self.parts
            .load()
            .iter()
            .map(|p| p.bloom.bytes() + p.directory.get().map_or(0, PartDirectory::bytes))
            .sum()
    }

    /// Appends one record; its counter is taken from `counter` here, so
    /// records land in the file in counter order. With `write_through` the
    /// record (and anything buffered before it) is in the file on return.
    pub fn append(
        &self,
        key: &[u8],
        value: Option<&[u8]>,
        version: u64,
        counter: &AtomicU64,
        write_through: bool,
    ) -> Result<Appended> {
        let mut a = self.append.lock();
        let c = counter.fetch_add(1, Ordering::Relaxed);
        let offset = a.len;
        let before = a.buffer.len();
        format::encode(&mut a.buffer, self.seed, key, value, version, c);
        let end = offset + (a.buffer.len() - before) as u64;
        a.len = end;
        let hash = key_hash(key);
        let current = self.parts.load();
        let fits = current
            .last()
            .is_some_and(|p| offset < p.start + self.config.part_bytes);
        let a = &mut *a;
        if fits {
            if let Some(p) = current.last() {
                p.bloom.insert(hash);
                let local = u32::try_from(offset - p.start).unwrap_or(u32::MAX);
                a.open_part
                    .push(&self.config.budget, fingerprint(hash), local);
            }
        } else {
            let mut parts: Vec<Arc<LogPart>> = current.as_ref().clone();
            self.add_to_part(&mut parts, &mut a.open_part, offset, hash);
            self.parts.store(Arc::new(parts));
        }
        self.records.fetch_add(1, Ordering::Relaxed);
        self.max_counter.fetch_max(c, Ordering::Relaxed);
        self.note_version(version);
        self.dirty.store(true, Ordering::Release);
        self.logical.store(end, Ordering::Release);
        if write_through || a.buffer.len() >= WRITE_BUFFER {
            self.write_buffer(a)?;
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
            end,
        })
    }

    /// Makes the log durable at least up to offset `upto`. Returns true if
    /// this call synced the file (false: already durable).
    pub fn sync_to(&self, upto: u64) -> Result<bool> {
        let mut synced = self.synced.lock();
        if *synced >= upto {
            return Ok(false);
        }
        self.flush()?;
        let target = self.len();
        self.file.sync().map_err(|e| Error::io(&self.path, e))?;
        *synced = target;
        if self.appended() == target {
            self.dirty.store(false, Ordering::Release);
        }
        Ok(true)
    }

    /// Makes everything appended so far durable.
    pub fn sync_all(&self) -> Result<bool> {
        self.sync_to(self.appended())
    }

    /// True if something was appended since the last full sync.
    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }

    fn read_bytes(&self, start: u64, end: u64) -> Result<Vec<u8>> {
        let n = usize::try_from(end.saturating_sub(start))
            .map_err(|_| Error::corruption(&self.path, start, "log range too large"))?;
        let mut buf = vec![0u8; n];
        self.file
            .read_at(start, &mut buf)
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(buf)
    }

    /// The sorted index of every record published so far, built or
    /// extended now if needed (reading only what it does not cover yet).
    /// It is kept for later scans if the memory budget has room for it;
    /// otherwise it serves this caller only.
    pub fn sorted_index(&self) -> Result<Arc<SegmentIndex>> {
        let len = self.len();
        if let Some(ix) = self.index.load_full().filter(|ix| ix.covered >= len) {
            return Ok(ix);
        }
        let _g = self.index_build.lock();
        let current = self.index.load_full();
        if let Some(ix) = current.as_ref().filter(|ix| ix.covered >= len) {
            return Ok(ix.clone());
        }
        let from = current.as_ref().map_or(0, |ix| ix.covered);
        let image = self.image_range(from, len)?;
        let base = SegmentIndex::default();
        let old = current.as_deref().unwrap_or(&base);
        let new = Arc::new(old.extended(&image, from, len));
        let budget = &self.config.budget;
        let grow = new.bytes().saturating_sub(old.bytes());
        if budget.try_reserve(Kind::Indexes, grow, 0) {
            budget.release(Kind::Indexes, old.bytes().saturating_sub(new.bytes()));
            self.index.store(Some(new.clone()));
        }
        Ok(new)
    }

    /// Drops the sorted index (to free memory; it is rebuilt on demand).
    pub fn drop_index(&self) {
        let _g = self.index_build.lock();
        if let Some(old) = self.index.swap(None) {
            self.config.budget.release(Kind::Indexes, old.bytes());
        }
    }

    /// Reads and checks the record at `ptr`; returns its value (`None` for a
    /// tombstone).
    pub fn read_value(&self, ptr: &RecordPtr) -> Result<Option<Vec<u8>>> {
        let buf = self.read_bytes(ptr.offset, ptr.offset + ptr.record_len())?;
        let (h, key) = decode_at(&buf, 0, self.seed).ok_or_else(|| {
            Error::corruption(&self.path, ptr.offset, "log record failed its checksum")
        })?;
        if h.counter != ptr.counter || h.version != ptr.version {
            return Err(Error::corruption(
                &self.path,
                ptr.offset,
                "log record changed since it was indexed",
            ));
        }
        if ptr.tombstone {
            return Ok(None);
        }
        Ok(buf.get(HEADER_LEN + key.len()..).map(<[u8]>::to_vec))
    }

    /// The newest record of `key` that `accept(version, counter)` admits, with
    /// its value, reading only the parts whose filter may hold the key
    /// (`probe` counts what the filters did).
    pub fn lookup(
        &self,
        key: &[u8],
        hash: u64,
        accept: &dyn Fn(u64, u64) -> bool,
        probe: &mut FilterProbe,
    ) -> Result<Option<(RecordPtr, Option<Vec<u8>>)>> {
        let end = self.len();
        let parts = self.parts.load();
        let mut best: Option<(RecordPtr, Option<Vec<u8>>)> = None;
        for (i, part) in parts.iter().enumerate() {
            if part.start >= end {
                continue;
            }
            if !part.bloom.may_contain(hash) {
                probe.skipped += 1;
                continue;
            }
            probe.searched += 1;
            let mut has_key = false;
            let mut consider = |r: RecordPtr, buf: &[u8], local: usize| {
                let start = local + HEADER_LEN;
                if buf.get(start..start + r.key_len as usize) != Some(key) {
                    return;
                }
                has_key = true;
                if !accept(r.version, r.counter)
                    || best.as_ref().is_some_and(|(b, _)| b.stamp() >= r.stamp())
                {
                    return;
                }
                let value = if r.tombstone {
                    None
                } else {
                    let v = start + r.key_len as usize;
                    buf.get(v..v + r.value_len as usize).map(<[u8]>::to_vec)
                };
                best = Some((r, value));
            };
            if let Some(dir) = part.directory.get() {
                // Sealed: read only the records whose fingerprint matches.
                for (from, to) in dir.matches(fingerprint(hash)) {
                    let (from, to) = (part.start + from, part.start + to);
                    if to > end {
                        continue; // appended but not readable yet
                    }
                    let buf = self.read_bytes(from, to)?;
                    let (records, pos) = decode_records(&buf, from, self.seed);
                    let (Some(r), true) = (records.into_iter().next(), pos == buf.len()) else {
                        return Err(Error::corruption(
                            &self.path,
                            from,
                            "log record failed its checksum",
                        ));
                    };
                    consider(r, &buf, 0);
                }
            } else {
                let part_end = parts.get(i + 1).map_or(end, |n| n.start.min(end));
                let buf = self.read_bytes(part.start, part_end)?;
                let (records, pos) = decode_records(&buf, part.start, self.seed);
                if pos != buf.len() {
                    return Err(Error::corruption(
                        &self.path,
                        part.start + pos as u64,
                        "log record failed its checksum",
                    ));
                }
                for r in records {
                    let local = (r.offset - part.start) as usize;
                    consider(r, &buf, local);
                }
            }
            probe.false_positives += u64::from(!has_key);
        }
        Ok(best)
    }

    /// Every record below `upto` (clamped to the published length), read
    /// into memory and checked.
    pub fn image(&self, upto: u64) -> Result<SegmentImage> {
        self.image_range(0, upto)
    }

    /// The records between offsets `from` (a record boundary) and `upto`.
    pub fn image_range(&self, from: u64, upto: u64) -> Result<SegmentImage> {
        let upto = upto.min(self.len());
        let from = from.min(upto);
        let buf = self.read_bytes(from, upto)?;
        let (mut records, pos) = decode_records(&buf, from, self.seed);
        if pos != buf.len() {
            return Err(Error::corruption(
                &self.path,
                from + pos as u64,
                "log record failed its checksum",
            ));
        }
        // Offsets in the image are relative to its bytes.
        for r in &mut records {
            r.offset -= from;
        }
        Ok(SegmentImage {
            bytes: buf.into(),
            records,
        })
    }
}

fn record_key<'a>(data: &'a [u8], r: &RecordPtr) -> &'a [u8] {
    let start = r.offset as usize + HEADER_LEN;
    data.get(start..start + r.key_len as usize)
        .unwrap_or_default()
}

/// Decodes whole, checked records from the start of `data` (which sits at
/// file offset `base`); returns them and where decoding stopped.
fn decode_records(data: &[u8], base: u64, seed: u32) -> (Vec<RecordPtr>, usize) {
    let mut records = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let Some((h, _)) = decode_at(data, pos, seed) else {
            break;
        };
        records.push(RecordPtr {
            version: h.version,
            counter: h.counter,
            offset: base + pos as u64,
            key_len: h.key_len,
            value_len: h.value_len,
            tombstone: h.kind == KIND_DELETE,
        });
        pos += HEADER_LEN + h.body_len();
    }
    (records, pos)
}

/// Decodes the record at `pos` if its header and body check out; returns the
/// header and the key.
fn decode_at(data: &[u8], pos: usize, seed: u32) -> Option<(Header, &[u8])> {
    let header = data.get(pos..pos.checked_add(HEADER_LEN)?)?;
    let h = format::decode_header(header, seed)?;
    let body_start = pos + HEADER_LEN;
    let body = data.get(body_start..body_start.checked_add(h.body_len())?)?;
    if !format::body_matches(&h, body, seed) {
        return None;
    }
    body.get(..h.key_len as usize).map(|k| (h, k))
}
