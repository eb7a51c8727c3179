//! The [`Db`] handle: open, put, get, delete, scan, snapshot, flush, stats.

mod batch;
mod deferred;
mod durability;
mod open;
mod range_delete;
mod read;
mod replay;
mod write;

pub(crate) use deferred::{log_if_flagged, DEFERRED_DIRECTORY};
pub(crate) use open::{is_engine_file, read_header, LOST_FOUND};

use crate::cache::budget::MemoryBudget;
use crate::cache::munks::MunkCache;
use crate::cache::row::RowCache;
use crate::chunk::{Chunk, Index};
use crate::error::{Error, Result};
use crate::funk::log::LogConfig;
use crate::funk::table::TableWriter;
use crate::funk::OpenFiles;
use crate::maintenance::queue::Maintenance;
use crate::manifest::Manifest;
use crate::options::Options;
use crate::recovery::RecoveryTable;
use crate::stats::{self, Counters, Stats};
use crate::version::Versions;
use crate::vfs::{Storage, StorageLock};
use parking_lot::{Condvar, Mutex};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A handle to an open store. Cheap to clone (`Arc`), `Send + Sync`; the
/// store closes when the last clone is dropped (background work stops and
/// buffered puts are synced).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let db = evendb::Db::open(dir.path())?;
/// db.put("app7|0001", "login")?;
/// db.put("app7|0002", "click")?;
/// assert_eq!(db.get("app7|0001")?.as_deref(), Some(&b"login"[..]));
/// let events: Vec<_> = db.prefix("app7|").collect::<Result<_, _>>()?;
/// assert_eq!(events.len(), 2);
/// # Ok::<(), evendb::Error>(())
/// ```
#[derive(Clone)]
pub struct Db {
    pub(crate) inner: Arc<DbInner>,
    _owner: Arc<Owner>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("dir", &self.inner.dir).finish()
    }
}

/// The manifest as last published.
/// Invariant: held (mutex) for the whole of every publish, so publishes are
/// serialized and each one writes the full, current list.
#[derive(Debug)]
pub(crate) struct Published {
    pub manifest: Manifest,
    /// Files numbered for an operation that has not published them yet
    /// (or never will, having failed): not orphans while the store runs.
    pub unpublished: std::collections::HashSet<u64>,
}

pub(crate) struct DbInner {
    pub dir: PathBuf,
    pub storage: Arc<dyn Storage>,
    pub opts: Options,
    pub versions: Versions,
    /// Versions of crashed epochs that reads must skip (fixed at open).
    pub recovery: RecoveryTable,
    /// The commit journal (`Sync` mode, read-write opens only).
    pub journal: Option<crate::recovery::journal::Journal>,
    /// Range deletes (see `tombstones`); the manifest holds them too.
    pub tombstones: arc_swap::ArcSwap<crate::tombstones::Tombstones>,
    /// A read-only open's journaled writes the chunk logs lack, read
    /// above the chunks (see `recovery::replayed`). Set once at open,
    /// before the handle is returned; empty otherwise.
    pub replayed: std::sync::OnceLock<crate::recovery::replayed::ReplayedWrites>,
    /// Range deletes whose space no rebuild could take back yet (a reader
    /// or, in `Buffered` mode, the last checkpoint is older).
    pub reclaims: Mutex<Vec<crate::tombstones::RangeTombstone>>,
    /// The running epoch's checkpoints.
    pub checkpoints: crate::recovery::Checkpoints,
    pub index: Index,
    pub published: Mutex<Published>,
    pub counters: Counters,
    pub budget: Arc<MemoryBudget>,
    /// Held by the one merge or run whose working memory goes past the
    /// budget (see `maintenance::room::hold_work`).
    pub work_gate: parking_lot::Mutex<()>,
    pub row_cache: RowCache,
    pub munks: MunkCache,
    pub log_config: LogConfig,
    pub open_files: OpenFiles,
    pub maintenance: Maintenance,
    pub trimmer: crate::cache::trim::Trimmer,
    /// When the store last took a write (idle compaction).
    pub idle: crate::maintenance::queue::IdleWatch,
    /// Whether the store serves mostly reads (the urgent maintenance
    /// thread's second job).
    pub mix: crate::maintenance::queue::OperationMix,
    /// Accesses counted toward the next halving of chunk heats.
    touches: std::sync::atomic::AtomicU64,
    /// The access count at which heats are halved next.
    next_decay: std::sync::atomic::AtomicU64,
    /// Accesses after which a chunk refused a munk may ask again: 256
    /// halving periods, so refused chunks together ask about once per
    /// 4096 accesses whatever their number.
    retry_touches: std::sync::atomic::AtomicU64,
    poisoned: Mutex<Option<String>>,
    /// Wakes the checkpointer at close.
    pub shutdown: AtomicBool,
    stop_lock: Mutex<()>,
    stop_cv: Condvar,
    _lock: Box<dyn StorageLock>,
}

/// Owns the background threads; dropping the last `Db` clone drops it.
struct Owner {
    inner: Arc<DbInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Owner {
    fn drop(&mut self) {
        // Set the flags under each waiter's mutex, so a thread between its
        // check of the flag and its wait cannot miss the notification.
        {
            let _s = self.inner.stop_lock.lock();
            self.inner.shutdown.store(true, Ordering::Release);
        }
        self.inner.stop_cv.notify_all();
        self.inner.maintenance.shut_down();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        if let Err(e) = self.inner.close_durably() {
            log::error!(
                "closing {}: final sync failed: {e}",
                self.inner.dir.display()
            );
        }
    }
}

impl Db {
    /// Opens the store at `path` with default [`Options`], creating it if
    /// the directory is missing or empty.
    ///
    /// # Errors
    /// See [`Options::open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Db> {
        Options::default().open(path)
    }

    /// Sets `key` to `value`.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// db.put(b"user42|thread7|msg3", b"hello")?;
    /// # Ok::<(), evendb::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key over
    /// [`MAX_KEY_SIZE`](crate::MAX_KEY_SIZE) or a value over
    /// [`MAX_VALUE_SIZE`](crate::MAX_VALUE_SIZE) (before any I/O); [`Error::Poisoned`] after an
    /// earlier write failure; I/O errors (which poison the store).
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.inner
            .write(key.as_ref(), Some(value.as_ref()))
            .map(|_| ())
    }

    /// Removes `key` (a no-op if absent).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// db.put("k", "v")?;
    /// db.delete("k")?;
    /// assert_eq!(db.get("k")?, None);
    /// # Ok::<(), evendb::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.inner.write(key.as_ref(), None).map(|_| ())
    }

    /// Applies every put and delete of `batch` atomically: readers see all
    /// of them or none, and after a crash the store holds all of them or
    /// none. In `Sync` mode the batch is durable when this returns. The
    /// batch is left as it was, to be cleared and reused.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// let mut batch = evendb::WriteBatch::new();
    /// batch.put("order|17", "paid");
    /// batch.put("user|3|orders|17", "");
    /// db.write(&batch)?;
    /// # Ok::<(), evendb::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (before any I/O) for a key or value over
    /// its limit or a batch over [`MAX_BATCH_SIZE`](crate::MAX_BATCH_SIZE);
    /// otherwise as [`Db::put`]. A failure part way through poisons the
    /// store; the next open shows none of the batch.
    pub fn write(&self, batch: impl std::borrow::Borrow<crate::WriteBatch>) -> Result<()> {
        self.inner.write_batch(batch.borrow().ops()).map(|_| ())
    }

    /// [`Db::write`] returning the version every record of the batch got
    /// (0 for an empty batch). For tests that check results against the
    /// commit order.
    ///
    /// # Errors
    /// As [`Db::write`].
    #[cfg(feature = "test-hooks")]
    pub fn write_stamped_batch(&self, batch: &crate::WriteBatch) -> Result<u64> {
        self.inner.write_batch(batch.ops())
    }

    /// Deletes every key in `range`, atomically: readers see all of them
    /// or none deleted, and after a crash the store holds the delete whole
    /// or not at all (in `Sync` mode it is durable when this returns).
    /// Keys written afterwards are not affected. Costs one manifest write
    /// and a pass over the chunks, however many keys the range holds. The
    /// space comes back in the background once no snapshot older than the
    /// delete is held (and, in `Buffered` mode, a checkpoint has passed
    /// it): chunks the range holds whole are dropped without being read,
    /// the others rebuilt. Then the delete leaves the manifest, and reads
    /// stop checking it ([`Stats::range_tombstones`](crate::Stats) counts
    /// those still kept).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// for day in 1..=9 {
    ///     db.put(format!("app7|2026-11-0{day}"), "event")?;
    /// }
    /// // Retention: drop everything before the 5th.
    /// db.delete_range("app7|".."app7|2026-11-05")?;
    /// assert_eq!(db.prefix("app7|").count(), 5);
    /// # Ok::<(), evendb::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bound over
    /// [`MAX_KEY_SIZE`](crate::MAX_KEY_SIZE) (before any I/O); otherwise as
    /// [`Db::put`].
    pub fn delete_range<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
        &self,
        range: R,
    ) -> Result<()> {
        let (lo, hi) = crate::entry::half_open(&range);
        self.inner.delete_range(lo, hi).map(|_| ())
    }

    /// Deletes every key starting with `prefix` (see [`Db::delete_range`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// db.put("app7|2026-11-01", "open")?;
    /// db.put("app8|2026-11-01", "open")?;
    /// let before = db.snapshot();
    /// db.delete_prefix("app7|")?; // drop one app's events
    /// assert_eq!(db.prefix("app7|").count(), 0);
    /// assert_eq!(db.prefix("app8|").count(), 1);
    /// // A snapshot taken before still reads them.
    /// assert_eq!(before.prefix("app7|").count(), 1);
    /// # Ok::<(), evendb::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Db::delete_range`].
    pub fn delete_prefix(&self, prefix: impl AsRef<[u8]>) -> Result<()> {
        let p = prefix.as_ref();
        self.inner
            .delete_range(p.to_vec(), crate::entry::prefix_end(p))
            .map(|_| ())
    }

    /// [`Db::delete_range`] returning the version it got (0 for an empty
    /// range). For tests that check results against the commit order.
    ///
    /// # Errors
    /// As [`Db::delete_range`].
    #[cfg(feature = "test-hooks")]
    pub fn delete_range_stamped<K: AsRef<[u8]>, R: std::ops::RangeBounds<K>>(
        &self,
        range: R,
    ) -> Result<u64> {
        let (lo, hi) = crate::entry::half_open(&range);
        self.inner.delete_range(lo, hi)
    }

    /// [`Db::put`] (or, with `None`, [`Db::delete`]) returning the stamp the
    /// write got: its version and its per-chunk counter, which order writes
    /// of one key. For tests that check results against the commit order.
    ///
    /// # Errors
    /// As [`Db::put`].
    #[cfg(feature = "test-hooks")]
    pub fn write_stamped(&self, key: impl AsRef<[u8]>, value: Option<&[u8]>) -> Result<(u64, u64)> {
        self.inner.write(key.as_ref(), value)
    }

    /// The current value of `key`. Never blocks: a get takes no lock and
    /// waits for no other operation.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = evendb::Db::open(dir.path())?;
    /// db.put("k", "v")?;
    /// assert_eq!(db.get("k")?.as_deref(), Some(&b"v"[..]));
    /// assert_eq!(db.get("missing")?, None);
    /// # Ok::<(), evendb::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Corruption`] if the bytes read fail their checks, I/O errors.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        stats::add(&self.inner.counters.local().gets, 1);
        self.inner.get_at(key.as_ref(), None)
    }

    /// Makes every put completed before the call durable.
    ///
    /// # Errors
    /// I/O errors (which poison the store); [`Error::ReadOnly`] through a
    /// read-only open.
    pub fn flush(&self) -> Result<()> {
        self.inner.refuse_if_read_only()?;
        self.inner.flush()
    }

    /// The store's counters, memory use and where gets were served.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }
}

impl DbInner {
    pub fn check_poison(&self) -> Result<()> {
        match &*self.poisoned.lock() {
            Some(why) => Err(Error::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    /// Records a write failure; writes fail from now until reopen.
    pub fn poison<T>(&self, e: Error) -> Result<T> {
        if matches!(e, Error::Io { .. }) {
            self.poison_with(e.to_string());
        }
        Err(e)
    }

    /// Poisons the store with `why` (a failed write, a background panic).
    pub fn poison_with(&self, why: String) {
        let mut p = self.poisoned.lock();
        if p.is_none() {
            log::error!("poisoning {}: {why}", self.dir.display());
            *p = Some(why);
        }
    }

    /// Syncs every dirty log of the live chunks.
    pub fn sync_logs(&self) -> Result<()> {
        for chunk in self.index.load().chunks.iter() {
            let Some(funk) = chunk.funk() else {
                continue;
            };
            for l in funk.logs().filter(|l| l.is_dirty()) {
                match l.sync_all() {
                    Ok(true) => stats::add(&self.counters.local().log_syncs, 1),
                    Ok(false) => {}
                    Err(e) => return self.poison(e),
                }
            }
        }
        Ok(())
    }

    /// Writes every log's buffered records to its file (no sync), and
    /// first the records munks deferred (`db::deferred`), so every put
    /// completed before is in a log file.
    pub fn flush_buffers(&self) -> Result<()> {
        {
            // One writer of deferred records at a time: a round that took a
            // chunk's flag first has written its records when this returns.
            let _serial = self.checkpoints.serial.lock();
            self.log_deferred()?;
        }
        for chunk in self.index.load().chunks.iter() {
            if let Some(funk) = chunk.funk() {
                for l in funk.logs() {
                    if let Err(e) = l.flush() {
                        return self.poison(e);
                    }
                }
            }
        }
        Ok(())
    }

    /// Allocates a new file number (persisted with the next publish).
    pub fn next_file_number(&self) -> u64 {
        let mut p = self.published.lock();
        let n = p.manifest.next_file;
        p.manifest.next_file += 1;
        p.unpublished.insert(n);
        n
    }

    /// Allocates a new chunk id (persisted with the next publish).
    pub fn next_chunk_id(&self) -> u64 {
        let mut p = self.published.lock();
        let n = p.manifest.next_chunk_id;
        p.manifest.next_chunk_id += 1;
        n
    }

    /// Publishes a new manifest made by `change` from the current one: the
    /// commit point of every change to the store's files. A failure poisons
    /// the store.
    /// Files the change stops referring to are recorded as obsolete (the
    /// only files open may delete), and obsolete files already removed are
    /// dropped from the record.
    pub fn publish(&self, change: impl FnOnce(&mut Manifest)) -> Result<()> {
        let mut published = self.published.lock();
        let mut manifest = published.manifest.clone();
        change(&mut manifest);
        let live: std::collections::HashSet<u64> = manifest.live_files().collect();
        let st = self.storage.as_ref();
        let dropped: Vec<u64> = published
            .manifest
            .live_files()
            .filter(|n| !live.contains(n))
            .collect();
        let gone = |n: u64| {
            [
                TableWriter::file_name(n),
                crate::funk::log::LogSegment::file_name(n),
            ]
            .iter()
            .all(|name| matches!(st.exists(&self.dir.join(name)), Ok(false)))
        };
        manifest.obsolete.retain(|&n| !gone(n));
        manifest.obsolete.extend(dropped);
        manifest.obsolete.sort_unstable();
        manifest.obsolete.dedup();
        manifest.generation += 1;
        if let Err(e) = manifest.store(self.storage.as_ref(), &self.dir) {
            return self.poison(e);
        }
        published.unpublished.retain(|n| !live.contains(n));
        published.manifest = manifest;
        Ok(())
    }

    pub fn table_writer(&self, number: u64) -> Result<TableWriter> {
        let (store, generation) = self.identity();
        TableWriter::create(
            self.storage.as_ref(),
            &self.dir,
            number,
            store,
            generation,
            self.opts.block_size,
            self.opts.compression == crate::Compression::Lz4,
        )
    }

    /// The store's id and the manifest generation durable now (stamped
    /// into the header of each new file).
    pub fn identity(&self) -> (crate::codec::StoreId, u64) {
        let p = self.published.lock();
        (p.manifest.store, p.manifest.generation)
    }

    /// Counts an access to `chunk` for the munk cache; every so often
    /// (about 16 accesses per chunk) halves every chunk's heat, so heat
    /// tracks recent popularity.
    pub fn touch(&self, chunk: &Chunk) {
        chunk.touch();
        // Each thread adds its accesses to the shared count in batches, so
        // counting does not bounce a cache line between cores.
        const BATCH: u32 = 256;
        let due = LOCAL_TOUCHES.with(|t| {
            let n = t.get() + 1;
            t.set(n % BATCH);
            n == BATCH
        });
        if !due {
            return;
        }
        let n = self.touches.fetch_add(u64::from(BATCH), Ordering::Relaxed) + u64::from(BATCH);
        let next_due = self.next_decay.load(Ordering::Relaxed);
        if n < next_due {
            return;
        }
        let idx = self.index.load();
        let period = (16 * idx.chunks.len() as u64).max(1024);
        self.retry_touches.store(256 * period, Ordering::Relaxed);
        let next = n + period;
        if self
            .next_decay
            .compare_exchange(next_due, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            for c in &idx.chunks {
                let h = c.heat.load(Ordering::Relaxed);
                c.heat.store(h / 2, Ordering::Relaxed);
            }
            self.row_cache.decay();
        }
    }

    /// Records that a munk load of `chunk` was refused at its current heat.
    pub fn refuse_load(&self, chunk: &Chunk) {
        let heat = chunk.heat.load(Ordering::Relaxed).max(1);
        chunk.load_refused.store(heat, Ordering::Relaxed);
        chunk
            .refused_at
            .store(self.touches.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Whether a chunk refused a munk at heat `refused` may ask again at
    /// `heat`: once twice as hot, or once enough accesses have passed.
    pub fn may_ask_again(&self, chunk: &Chunk, heat: u32) -> bool {
        let refused = chunk.load_refused.load(Ordering::Relaxed);
        if refused == 0 || heat >= refused.saturating_mul(2) {
            return true;
        }
        let since = self
            .touches
            .load(Ordering::Relaxed)
            .saturating_sub(chunk.refused_at.load(Ordering::Relaxed));
        since >= self.retry_touches.load(Ordering::Relaxed)
    }

    /// The live chunk holding `key`.
    pub fn chunk_for(&self, key: &[u8]) -> Result<Arc<Chunk>> {
        self.index.find(key).ok_or_else(no_chunks)
    }

    /// A chunk holding keys just below `upper` (the last chunk for
    /// `Unbounded`), live or lately replaced; `None` if no key lies below.
    pub fn chunk_below(&self, upper: &std::ops::Bound<Vec<u8>>) -> Option<Arc<Chunk>> {
        use std::ops::Bound;
        let idx = self.index.load();
        match upper {
            Bound::Unbounded => idx.chunks.last().cloned(),
            Bound::Included(k) => idx.get(k).cloned(),
            Bound::Excluded(k) => {
                let p = idx.position(k);
                let c = idx.chunks.get(p)?;
                if c.min_key.as_slice() < k.as_slice() {
                    Some(c.clone())
                } else {
                    p.checked_sub(1).and_then(|p| idx.chunks.get(p)).cloned()
                }
            }
        }
    }

    /// Runs `f` on the live chunk holding `key`, borrowed from the loaded
    /// index (see `Index::with`).
    pub fn with_chunk<R>(&self, key: &[u8], f: impl FnOnce(&Arc<Chunk>) -> Result<R>) -> Result<R> {
        self.index.with(key, f).unwrap_or_else(|| Err(no_chunks()))
    }

    pub fn stats(&self) -> Stats {
        let mut s = self.counters.snapshot();
        let idx = self.index.load();
        s.chunks = idx.chunks.len() as u64;
        s.range_tombstones = self.tombstones.load().list().len() as u64;
        s.munks = idx.chunks.iter().filter(|c| c.has_munk()).count() as u64;
        // The checkpoint's own snapshot is not a user's.
        let internal = *self.checkpoints.held.lock();
        let held = self
            .versions
            .snapshot_ages(stats::LONG_LIVED_SNAPSHOT, internal);
        s.active_snapshots = held.active as u64;
        s.long_lived_snapshots = held.long_lived as u64;
        if let Some((age, lag)) = held.oldest {
            s.oldest_snapshot_age_micros = u64::try_from(age.as_micros()).unwrap_or(u64::MAX);
            s.oldest_snapshot_lag = lag;
        }
        let b = self.budget.view();
        s.memory_budget = b.limit;
        s.memory_used = b.used;
        s.memory_peak = b.peak;
        s.memory_munks = b.munks;
        s.memory_row_cache = b.row_cache;
        s.memory_filters = b.filters;
        s.memory_indexes = b.indexes;
        s.memory_write_buffers = b.write_buffers;
        s.memory_background = b.work;
        {
            use crate::cache::budget::Kind;
            let at = |k: Kind| b.at_peak[k as usize];
            s.memory_peak_munks = at(Kind::Munks);
            s.memory_peak_row_cache = at(Kind::RowCache);
            s.memory_peak_filters = at(Kind::Filters);
            s.memory_peak_indexes = at(Kind::Indexes);
            s.memory_peak_write_buffers = at(Kind::WriteBuffers);
            s.memory_peak_background = at(Kind::Work);
        }
        s.memory_other = self.other_memory(&idx.chunks);
        let (hits, misses) = self.row_cache.hit_counts();
        s.row_cache_hits = hits;
        s.row_cache_misses = misses;
        s.journal_bytes_written = self.journal.as_ref().map_or(0, |j| j.bytes_written());
        s
    }

    /// See `Stats::memory_other`: the chunks' own state and the manifest's
    /// record of each, and the open files' handles.
    fn other_memory(&self, chunks: &[Arc<Chunk>]) -> u64 {
        use std::mem::size_of;
        // The index's pointer and key prefix of each chunk.
        let mut bytes = chunks.len() * (size_of::<Arc<Chunk>>() + size_of::<u64>());
        for c in chunks {
            let keys = c.min_key.capacity() + c.end_key.as_ref().map_or(0, Vec::capacity);
            let logs = c.files.lock().logs.capacity() * size_of::<u64>();
            bytes += size_of::<Chunk>() + keys + logs;
            // The manifest's record: the minimum key and the file list again.
            bytes += size_of::<crate::manifest::ChunkRecord>() + c.min_key.len() + logs;
        }
        bytes as u64 + self.open_files.handle_bytes()
    }
}

thread_local! {
    static LOCAL_TOUCHES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Runs `f` on a background thread named `name`.
pub(crate) fn spawn(
    name: String,
    dir: &Path,
    f: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .map_err(|e| Error::io(dir, e))
}

/// The checkpointer: a checkpoint every interval (in `Sync` mode, a
/// record of the logs' durable lengths).
fn checkpointer(inner: &Arc<DbInner>, interval: std::time::Duration) {
    let mut guard = inner.stop_lock.lock();
    while !inner.shutdown.load(Ordering::Acquire) {
        inner.stop_cv.wait_for(&mut guard, interval);
        drop(guard);
        let done = match inner.opts.durability {
            crate::options::Durability::Sync => inner.record_lengths(),
            crate::options::Durability::Buffered { .. } => inner.checkpoint(),
        };
        if let Err(e) = done {
            log::error!(
                "background checkpoint of {} failed: {e}",
                inner.dir.display()
            );
        }
        if let Err(e) = inner
            .schedule_reclaims()
            .and_then(|()| inner.retire_swept())
        {
            log::error!("reclaiming range deletes in {}: {e}", inner.dir.display());
        }
        guard = inner.stop_lock.lock();
    }
}

/// The error of a lookup in an index without chunks.
fn no_chunks() -> Error {
    Error::InvalidArgument("store has no chunks".into())
}
