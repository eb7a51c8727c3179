//! Snapshots and scans.
//!
//! A scan reads at one snapshot version, one chunk at a time. Versions at or
//! below the snapshot never change (rebuilds keep what registered snapshots
//! need), so what it reads from different chunks, or from a chunk and its
//! replacement, is one consistent state.

use crate::db::DbInner;
use crate::entry::prefix_end;
use crate::error::Result;
use crate::funk::FunkScan;
use crate::munk::Munk;
use crate::stats;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// A registered snapshot version; released when the last user drops it.
pub(crate) struct SnapshotGuard {
    pub inner: Arc<DbInner>,
    pub version: u64,
    /// The range deletes: every one at or below `version` was published
    /// before the snapshot was taken (it waits for them as for batches).
    pub tombstones: Arc<crate::tombstones::Tombstones>,
}

impl SnapshotGuard {
    /// A snapshot for reads of `[lo, hi)` (`hi = None`: unbounded).
    pub fn new(inner: Arc<DbInner>, lo: &[u8], hi: Option<&[u8]>) -> Self {
        let version = inner.versions.acquire_snapshot(lo, hi);
        let tombstones = inner.tombstones.load_full();
        SnapshotGuard {
            inner,
            version,
            tombstones,
        }
    }
}

impl Drop for SnapshotGuard {
    fn drop(&mut self) {
        self.inner.versions.release(self.version);
    }
}

/// A consistent, read-only view of the store at one point in time; see
/// [`Db::snapshot`](crate::Db::snapshot).
pub struct Snapshot {
    guard: Arc<SnapshotGuard>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("version", &self.guard.version)
            .finish()
    }
}

impl Snapshot {
    pub(crate) fn new(guard: Arc<SnapshotGuard>) -> Self {
        Snapshot { guard }
    }

    /// The version the snapshot reads at (see `Db::write_stamped`).
    #[cfg(feature = "test-hooks")]
    pub fn version(&self) -> u64 {
        self.guard.version
    }

    /// The value of `key` as of the snapshot.
    ///
    /// # Errors
    /// As [`Db::get`](crate::Db::get).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        stats::add(&self.guard.inner.counters.local().gets, 1);
        self.guard
            .inner
            .get_at(key.as_ref(), Some(self.guard.version))
    }

    /// Pairs in `range` as of the snapshot, in key order.
    pub fn scan<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Scan {
        stats::add(&self.guard.inner.counters.local().scans, 1);
        Scan::new(self.guard.clone(), &range)
    }

    /// Pairs whose keys start with `prefix` as of the snapshot.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Scan {
        stats::add(&self.guard.inner.counters.local().scans, 1);
        Scan::prefix(self.guard.clone(), prefix.as_ref())
    }
}

/// An iterator over key-value pairs in key order, at one snapshot; also a
/// [`DoubleEndedIterator`]: `.rev()` reads newest-key-first, and both ends
/// may be read in turn until they meet.
///
/// Yields `Result`s: a read error ends the scan after being returned once.
/// A scan takes no lock: it reads one chunk at a time, from the chunk's
/// munk if it has one, else from its funk, and goes on to the chunk holding
/// the end of the previous one's range. Versions a registered snapshot may
/// read are never dropped, so chunks replaced while the scan runs (split,
/// merged, rebalanced) still give the snapshot's data.
pub struct Scan {
    snap: Arc<SnapshotGuard>,
    /// Where the next chunk to read starts (the start bound at first).
    cursor: Bound<Vec<u8>>,
    /// The range's start bound (what the reverse end reads down to).
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    source: Option<Source>,
    done: bool,
    /// The last key the forward end returned (reused buffer), so the
    /// reverse end stops where they meet.
    front_last: Option<Vec<u8>>,
    back: Option<Back>,
    /// An error was returned: both ends are over.
    failed: bool,
    /// A reverse scan's window: it does not move the queued rebuilds of
    /// the munk-less chunks it reads ahead of other maintenance
    /// (`Maintenance::bump`), nor ask for a run of a log whose index was
    /// built again (see `open_source`).
    is_window: bool,
    /// The id of a chunk this scan opens without counting an access to
    /// it: a reverse scan's window in the chunk its scan already counted.
    touched: Option<u64>,
}

/// The reverse end of a scan: it reads the range backwards in windows,
/// each a forward scan of `[lower, upper)` at the same snapshot, whose
/// start comes from the keys of the chunk below `upper` (its munk's
/// sorted part, its table's blocks, its logs' sorted indexes) about
/// `window` entries down. Windows double from `FIRST_WINDOW` entries up to
/// `MAX_WINDOW` while each holds at most `WINDOW_GROWTH_BYTES`.
struct Back {
    /// The current window's pairs in key order; taken from the end.
    items: Vec<(Vec<u8>, Vec<u8>)>,
    /// Everything at or above this was read.
    upper: Bound<Vec<u8>>,
    window: usize,
    /// The last key returned, so the forward end stops where they meet.
    last: Option<Vec<u8>>,
    /// The last window was read.
    done: bool,
    /// The chunk of the last window, whose access the scan counted once.
    chunk: Option<u64>,
    /// The sorted log indexes the last window was found with, held for
    /// its scan and the next window's search: one the budget did not keep
    /// is used again instead of read again (`LogSegment::sorted_index`).
    indexes: Vec<Arc<crate::funk::log::SegmentIndex>>,
}

/// Entries of a reverse scan's first window ("the latest 10 events" reads
/// one small window).
const FIRST_WINDOW: usize = 32;
/// The most entries a reverse scan's window aims at.
const MAX_WINDOW: usize = 4096;
/// A window larger than this in bytes stops the windows from growing.
/// The last window of a scan that stops early (`rev().take(n)`) is mostly
/// read for nothing, while a window's own cost (finding its start, opening
/// its sources) is that of a few records. Newest-first stream queries of
/// 1,000 events of about 850 bytes, on a store built by the stream at a
/// 1 GiB cap, read-only and one thread: 1,107-1,146 queries/s with no
/// limit but `MAX_WINDOW` (windows up to 1,024 events), 1,236-1,347 with
/// 32 KiB, 1,269-1,409 with 64 KiB, 1,318-1,356 with 128 KiB.
const WINDOW_GROWTH_BYTES: usize = 64 << 10;

/// The chunk a scan is reading.
struct Source {
    reader: Reader,
    end_key: Option<Vec<u8>>,
    /// Where the journaled writes a read-only open holds in memory (see
    /// `recovery::replayed`) stop for this chunk: its end, or the range's.
    replayed_end: Bound<Vec<u8>>,
    /// The next of those writes, not returned yet.
    replayed: Option<Pair>,
    /// The chunk's next pair, held back while replayed keys below it go
    /// first.
    held: Option<Pair>,
    /// The chunk's own data is used up (its reader is not called again).
    own_done: bool,
}

/// A key and its value at the scan's snapshot (`None`: deleted).
type Pair = (Vec<u8>, Option<Vec<u8>>);

/// Where a [`Source`] reads the chunk's own data.
enum Reader {
    Munk { munk: Arc<Munk>, next: u32 },
    Funk { groups: Box<FunkScan> },
}

impl std::fmt::Debug for Scan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("version", &self.snap.version)
            .finish()
    }
}

fn owned(b: Bound<&impl AsRef<[u8]>>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Scan {
    pub(crate) fn new<K: AsRef<[u8]>, R: RangeBounds<K>>(
        snap: Arc<SnapshotGuard>,
        range: &R,
    ) -> Scan {
        Scan {
            snap,
            cursor: owned(range.start_bound()),
            start: owned(range.start_bound()),
            end: owned(range.end_bound()),
            source: None,
            done: false,
            front_last: None,
            back: None,
            failed: false,
            is_window: false,
            touched: None,
        }
    }

    pub(crate) fn prefix(snap: Arc<SnapshotGuard>, prefix: &[u8]) -> Scan {
        let end = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
        Scan::new(snap, &(Bound::Included(prefix.to_vec()), end))
    }

    /// The version the scan reads at (see `Db::write_stamped`).
    #[cfg(feature = "test-hooks")]
    pub fn version(&self) -> u64 {
        self.snap.version
    }

    fn before_end(&self, key: &[u8]) -> bool {
        match &self.end {
            Bound::Included(e) => key <= e.as_slice(),
            Bound::Excluded(e) => key < e.as_slice(),
            Bound::Unbounded => true,
        }
    }

    fn after_start(&self, key: &[u8]) -> bool {
        match &self.cursor {
            Bound::Included(s) => key >= s.as_slice(),
            Bound::Excluded(s) => key > s.as_slice(),
            Bound::Unbounded => true,
        }
    }

    /// Opens the chunk holding the cursor.
    fn open_source(&mut self) -> Result<()> {
        let inner = self.snap.inner.clone();
        let from: Vec<u8> = match &self.cursor {
            Bound::Included(k) | Bound::Excluded(k) => k.clone(),
            Bound::Unbounded => Vec::new(),
        };
        if !matches!(self.cursor, Bound::Unbounded) && !self.before_end(&from) {
            self.done = true;
            return Ok(());
        }
        let chunk = inner.chunk_for(&from)?;
        if let Some(past) = self.deleted_until(&inner, &chunk, &from)? {
            // Nothing this scan sees lies before `past`: go on from there.
            match past {
                Some(k) => self.cursor = Bound::Included(k),
                None => self.done = true,
            }
            return Ok(());
        }
        if self.touched != Some(chunk.id) {
            inner.touch(&chunk);
        }
        let end_key = chunk.end_key.clone();
        let replayed_end = match (&end_key, &self.end) {
            (None, e) => e.clone(),
            (Some(k), Bound::Included(e) | Bound::Excluded(e)) if e < k => self.end.clone(),
            (Some(k), _) => Bound::Excluded(k.clone()),
        };
        let replayed = inner.replayed.get().and_then(|r| {
            r.first_in(
                self.cursor.as_ref().map(Vec::as_slice),
                replayed_end.as_ref().map(Vec::as_slice),
            )
        });
        let source = |reader| Source {
            reader,
            end_key: end_key.clone(),
            replayed_end,
            replayed,
            held: None,
            own_done: false,
        };
        if let Some(munk) = chunk.munk() {
            stats::add(&inner.counters.local().scan_chunks_munk, 1);
            let next = munk.seek(&from);
            self.source = Some(source(Reader::Munk { munk, next }));
            return Ok(());
        }
        stats::add(&inner.counters.local().scan_chunks_funk, 1);
        let funk = inner.open_funk(&chunk)?;
        let to = match (&self.end, &end_key) {
            (Bound::Excluded(e), Some(k)) => Some(e.clone().min(k.clone())),
            (Bound::Excluded(e), None) => Some(e.clone()),
            (_, k) => k.clone(),
        };
        let room = |n| crate::maintenance::room_for(&inner, n);
        let groups = funk.scan(
            &from,
            to.as_deref(),
            self.snap.version,
            &inner.recovery,
            self.snap.tombstones.clone(),
            &room,
        )?;
        self.source = Some(source(Reader::Funk {
            groups: Box::new(groups),
        }));
        inner.wants_munk(&chunk)?;
        // A scan that had to build a log's sorted index again asks for the
        // log to be sorted into a run (`maintenance::indexed_again`); a
        // reverse scan's windows do not. With the windows asking too, the
        // stream's newest-first queries at 256 MiB ran at 570-797 against
        // 759-918 a second (four alternating pairs; query-phase write
        // amplification doubled), without them 777-903 against 754-1,016
        // (five).
        let costly = if self.is_window {
            crate::maintenance::costly_shape(&inner, &chunk)
        } else {
            crate::maintenance::costly_to_scan(&inner, &chunk)
        };
        if costly {
            inner.schedule(&chunk, crate::chunk::task::COMPACT_LOG)?;
        }
        // Chunks that scans read go first in a write phase's backlog of
        // rebuilds: until its own, each scan of the chunk merges its
        // unsorted log through an index, a read for every value. Not from
        // a reverse scan's windows, which open a chunk every few dozen
        // keys: with them the stream's newest-first queries at 1 GiB ran
        // at 895-1,418 against 775-1,851 a second (five alternating
        // pairs), without them 1,139-1,489 against 1,148-1,966 (four);
        // both within this machine's noise, the second closer.
        let queued = crate::chunk::task::FUNK_REBALANCE | crate::chunk::task::COMPACT_LOG;
        if !self.is_window && chunk.is_queued(queued) {
            inner.maintenance.bump(&chunk);
        }
        Ok(())
    }

    /// Where the part of `chunk` from `from` on that a range delete this
    /// scan sees hides whole ends: the delete's end or the chunk's,
    /// whichever comes first (`Some(None)`: the end of the key space).
    /// `None` unless such a delete covers `from` and is newer than every
    /// record of the chunk (its funk's largest version bounds its munk's
    /// too). A scan of a deleted range then skips it chunk by chunk
    /// instead of passing over each deleted record, before the delete is
    /// reclaimed.
    fn deleted_until(
        &self,
        inner: &crate::db::DbInner,
        chunk: &crate::chunk::Chunk,
        from: &[u8],
    ) -> Result<Option<Option<Vec<u8>>>> {
        let Some(t) = self.snap.tombstones.newest_over(from, self.snap.version) else {
            return Ok(None);
        };
        // A read-only open's journaled writes are not in the funk.
        if inner.replayed.get().is_some()
            || chunk.max_version(&*inner.open_funk(chunk)?) >= t.version
        {
            return Ok(None);
        }
        Ok(Some(match (t.hi.as_ref(), chunk.end_key.as_ref()) {
            (Some(a), Some(b)) => Some(a.min(b).clone()),
            (a, b) => a.or(b).cloned(),
        }))
    }

    /// The next pair from the current chunk, or `None` when it is used up.
    fn next_in_source(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let Some((key, value)) = self.next_merged()? else {
                return Ok(None);
            };
            if !self.before_end(&key) {
                self.done = true;
                return Ok(None);
            }
            if !self.after_start(&key) {
                continue;
            }
            if let Some(v) = value {
                return Ok(Some((key, v)));
            }
        }
    }

    /// The current chunk's next key, with the journaled writes a read-only
    /// open holds in memory merged in: such a write is newer than every
    /// record of its key in the chunk, so it replaces the chunk's pair.
    fn next_merged(&mut self) -> Result<Option<Pair>> {
        let version = self.snap.version;
        let tombstones = Some(&self.snap.tombstones).filter(|t| !t.is_empty());
        let Some(source) = self.source.as_mut() else {
            return Ok(None);
        };
        let own = match source.held.take() {
            Some(pair) => Some(pair),
            None => source.next_own(version, tombstones)?,
        };
        let replayed = match source.replayed.take() {
            None => return Ok(own),
            Some(r) => r,
        };
        match own {
            Some(own) if own.0 < replayed.0 => {
                source.replayed = Some(replayed);
                Ok(Some(own))
            }
            own => {
                // The chunk's pair of the same key is replaced; a larger
                // one waits for its turn.
                source.held = own.filter(|o| o.0 > replayed.0);
                source.replayed = self.snap.inner.replayed.get().and_then(|r| {
                    r.first_in(
                        Bound::Excluded(replayed.0.as_slice()),
                        source.replayed_end.as_ref().map(Vec::as_slice),
                    )
                });
                Ok(Some(replayed))
            }
        }
    }

    fn step(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        while !self.done {
            if self.source.is_none() {
                self.open_source()?;
                continue;
            }
            if let Some(kv) = self.next_in_source()? {
                return Ok(Some(kv));
            }
            if self.done {
                break;
            }
            // The chunk is used up: go on from the end of its range.
            match self.source.take().and_then(|s| s.end_key) {
                Some(k) => self.cursor = Bound::Included(k),
                None => self.done = true,
            }
        }
        Ok(None)
    }
}

impl Source {
    /// The chunk's own next key and its value at `version`, or `None` past
    /// the chunk's end.
    fn next_own(
        &mut self,
        version: u64,
        tombstones: Option<&Arc<crate::tombstones::Tombstones>>,
    ) -> Result<Option<Pair>> {
        if self.own_done {
            return Ok(None);
        }
        let next = self.read_own(version, tombstones)?;
        self.own_done = next.is_none();
        Ok(next)
    }

    /// [`Source::next_own`] from the reader.
    fn read_own(
        &mut self,
        version: u64,
        tombstones: Option<&Arc<crate::tombstones::Tombstones>>,
    ) -> Result<Option<Pair>> {
        match &mut self.reader {
            Reader::Munk { munk, next } => {
                let Some((cell, after)) = munk.at(*next) else {
                    return Ok(None);
                };
                *next = after;
                if self.end_key.as_deref().is_some_and(|e| *cell.key >= *e) {
                    return Ok(None);
                }
                let floor = tombstones.map_or(0, |t| t.floor(&cell.key, version));
                let value = cell.read_from(version, floor).flatten();
                Ok(Some((cell.key.to_vec(), value)))
            }
            Reader::Funk { groups } => {
                let Some(group) = groups.next() else {
                    return Ok(None);
                };
                let (key, value) = group?;
                if self.end_key.as_ref().is_some_and(|e| key >= *e) {
                    return Ok(None);
                }
                Ok(Some((key, value)))
            }
        }
    }
}

impl Scan {
    /// The next pair from the reverse end.
    fn step_back(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let back = self.back.get_or_insert_with(|| Back {
                items: Vec::new(),
                upper: self.end.clone(),
                window: FIRST_WINDOW,
                last: None,
                done: false,
                chunk: None,
                indexes: Vec::new(),
            });
            if let Some((k, v)) = back.items.pop() {
                if self.front_last.as_ref().is_some_and(|f| k <= *f) {
                    back.done = true;
                    back.items.clear();
                    return Ok(None);
                }
                match &mut back.last {
                    Some(last) => last.clone_from(&k),
                    None => back.last = Some(k.clone()),
                }
                return Ok(Some((k, v)));
            }
            if back.done {
                return Ok(None);
            }
            self.refill_back()?;
        }
    }

    /// Reads the next window below the reverse end's `upper`.
    fn refill_back(&mut self) -> Result<()> {
        let inner = self.snap.inner.clone();
        let Some(back) = self.back.as_mut() else {
            return Ok(());
        };
        let hi: Option<&[u8]> = match &back.upper {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        let Some(chunk) = inner.chunk_below(&back.upper) else {
            back.done = true;
            return Ok(());
        };
        let candidate = match chunk.munk() {
            Some(m) => {
                back.indexes.clear();
                m.key_before(hi, back.window)
            }
            None => {
                let funk = inner.open_funk(&chunk)?;
                let room = |n| crate::maintenance::room_for(&inner, n);
                // Nothing below the range's start is read.
                let lo = match &self.start {
                    Bound::Included(s) | Bound::Excluded(s) if *s > chunk.min_key => s,
                    _ => &chunk.min_key,
                };
                let mut held = Vec::new();
                let found = funk.key_before(lo, hi, back.window, &room, &mut held)?;
                back.indexes = held;
                found
            }
        };
        // The window starts at the candidate, else at the chunk's first
        // key, strictly below `upper` (so every window makes progress).
        let below_hi = |k: &[u8]| hi.is_none_or(|h| k < h);
        // (`chunk_below` gives a chunk whose first key is below an
        // excluded `upper`, or at most an included one.)
        let low = candidate
            .filter(|c| c.as_slice() >= chunk.min_key.as_slice() && below_hi(c))
            .unwrap_or_else(|| chunk.min_key.clone());
        // The range's start ends the reverse end at this window.
        let reaches_start = match &self.start {
            Bound::Included(s) | Bound::Excluded(s) => s.as_slice() >= low.as_slice(),
            Bound::Unbounded => low.is_empty(),
        };
        let lower = if reaches_start {
            self.start.clone()
        } else {
            Bound::Included(low.clone())
        };
        // The window's pairs go into the last window's (emptied) vector.
        back.items.clear();
        back.items.reserve(back.window);
        let mut bytes = 0;
        let mut window = Scan::new(self.snap.clone(), &(lower, back.upper.clone()));
        window.is_window = true;
        // A scan counts one access per chunk, as a forward scan does: its
        // windows (several in a chunk: "the latest 1,000 events" read about
        // seven) are not each a reader of the chunk. Counted per window,
        // one such query made its chunk nearly hot enough for a munk by
        // itself (load heat 8).
        window.touched = back.chunk.replace(chunk.id);
        for kv in window {
            let (k, v) = kv?;
            bytes += k.len() + v.len();
            back.items.push((k, v));
        }
        if bytes <= WINDOW_GROWTH_BYTES {
            back.window = (back.window * 2).min(MAX_WINDOW);
        }
        back.upper = Bound::Excluded(low);
        back.done = reaches_start;
        Ok(())
    }

    fn fail(&mut self) {
        self.failed = true;
        self.done = true;
        self.source = None;
        self.back = None;
    }
}

impl Iterator for Scan {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(Some((k, v))) => {
                let back_last = self.back.as_ref().and_then(|b| b.last.as_ref());
                if back_last.is_some_and(|b| k >= *b) {
                    self.done = true;
                    self.source = None;
                    return None;
                }
                match &mut self.front_last {
                    Some(last) => last.clone_from(&k),
                    None => self.front_last = Some(k.clone()),
                }
                Some(Ok((k, v)))
            }
            Ok(None) => None,
            Err(e) => {
                self.fail();
                Some(Err(e))
            }
        }
    }
}

impl DoubleEndedIterator for Scan {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.step_back() {
            Ok(Some(kv)) => Some(Ok(kv)),
            Ok(None) => None,
            Err(e) => {
                self.fail();
                Some(Err(e))
            }
        }
    }
}

impl crate::db::Db {
    /// Key-value pairs whose keys fall in `range`, in key order, as of one
    /// point in time (the scan's snapshot). An empty or inverted range
    /// yields nothing.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// for k in ["a", "b", "c"] { db.put(k, k)?; }
    /// let keys: Vec<Vec<u8>> = db.scan("a".."c").map(|kv| kv.map(|(k, _)| k)).collect::<Result<_, _>>()?;
    /// assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec()]);
    /// # Ok::<(), evendb::Error>(())
    /// ```
    pub fn scan<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> Scan {
        stats::add(&self.inner.counters.local().scans, 1);
        // The `[lo, hi)` it announces in the pending-operations array.
        let (lo, hi) = crate::entry::half_open(&range);
        let snap = SnapshotGuard::new(self.inner.clone(), &lo, hi.as_deref());
        Scan::new(Arc::new(snap), &range)
    }

    /// Key-value pairs whose keys start with `prefix`, in key order.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// db.put("app1|a", "1")?;
    /// db.put("app2|a", "2")?;
    /// assert_eq!(db.prefix("app1|").count(), 1);
    /// // Newest key first: the app's latest event.
    /// db.put("app1|b", "3")?;
    /// let (key, _) = db.prefix("app1|").rev().next().expect("an event")?;
    /// assert_eq!(key, b"app1|b");
    /// # Ok::<(), evendb::Error>(())
    /// ```
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Scan {
        stats::add(&self.inner.counters.local().scans, 1);
        let p = prefix.as_ref();
        let hi = prefix_end(p);
        let snap = SnapshotGuard::new(self.inner.clone(), p, hi.as_deref());
        Scan::prefix(Arc::new(snap), p)
    }

    /// A consistent read view of the store as of now. Cheap (one version,
    /// one registry entry); it keeps the versions it needs from being
    /// dropped until it is dropped, so do not hold one for hours
    /// ([`Stats::active_snapshots`](crate::Stats::active_snapshots) shows how many are held).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// db.put("k", "old")?;
    /// let snap = db.snapshot();
    /// db.put("k", "new")?;
    /// assert_eq!(snap.get("k")?.as_deref(), Some(&b"old"[..]));
    /// # Ok::<(), evendb::Error>(())
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::new(Arc::new(SnapshotGuard::new(self.inner.clone(), &[], None)))
    }
}
