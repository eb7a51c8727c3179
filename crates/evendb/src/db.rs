//! The [`Db`] handle: open, put, get, delete, scan, snapshot, flush, stats.

use crate::chunk::{Chunk, ChunkList};
use crate::entry::{MAX_KEY_SIZE, MAX_VALUE_SIZE};
use crate::error::{Error, Result};
use crate::funk::log::LogSegment;
use crate::funk::table::TableWriter;
use crate::funk::{Funk, FunkFiles};
use crate::manifest::{ChunkRecord, Manifest, MANIFEST, MANIFEST_TMP};
use crate::options::{Durability, Options};
use crate::scan::{Scan, Snapshot, SnapshotGuard};
use crate::stats::{self, Counters, Stats};
use crate::version::Versions;
use crate::vfs::{Storage, StorageLock};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{HashSet, VecDeque};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const LOCK_FILE: &str = "LOCK";

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

/// The manifest as last published, plus the allocators it persists.
/// Invariant: held (mutex) for the whole of every publish, so publishes are
/// serialized and each one writes the full, current list.
#[derive(Debug)]
pub(crate) struct Published {
    pub manifest: Manifest,
}

pub(crate) struct DbInner {
    pub dir: PathBuf,
    pub storage: Arc<dyn Storage>,
    pub opts: Options,
    pub versions: Versions,
    /// The chunk list; swapped whole by splits and merges.
    pub chunks: RwLock<Arc<ChunkList>>,
    pub published: Mutex<Published>,
    pub counters: Counters,
    poisoned: Mutex<Option<String>>,
    pub queue: Mutex<VecDeque<Arc<Chunk>>>,
    pub queue_cv: Condvar,
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
        // Set the flag under each waiter's mutex, so a thread between its
        // check of the flag and its wait cannot miss the notification.
        {
            let _q = self.inner.queue.lock();
            let _s = self.inner.stop_lock.lock();
            self.inner.shutdown.store(true, Ordering::Release);
        }
        self.inner.queue_cv.notify_all();
        self.inner.stop_cv.notify_all();
        for t in self.threads.lock().drain(..) {
            let _ = t.join();
        }
        if let Err(e) = self.inner.flush() {
            log::error!(
                "closing {}: final sync failed: {e}",
                self.inner.dir.display()
            );
        }
    }
}

/// The file number of an engine-named file (`NNNNNN.tbl`, `NNNNNN.log`).
pub(crate) fn is_engine_file(name: &str) -> Option<u64> {
    let (stem, ext) = name.split_once('.')?;
    if (ext == "tbl" || ext == "log")
        && !stem.is_empty()
        && stem.bytes().all(|b| b.is_ascii_digit())
    {
        stem.parse().ok()
    } else {
        None
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

    pub(crate) fn open_with(dir: &Path, opts: Options) -> Result<Db> {
        let storage = opts.storage.clone();
        let st = storage.as_ref();
        let exists = st.exists(dir).map_err(|e| Error::io(dir, e))?;
        if !exists {
            if !opts.create_if_missing {
                return Err(Error::io(
                    dir,
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
                ));
            }
            st.create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let names = st.list(dir).map_err(|e| Error::io(dir, e))?;
        let has_manifest = names.iter().any(|n| n == MANIFEST);
        let own = |n: &String| n == LOCK_FILE || n == MANIFEST_TMP || is_engine_file(n).is_some();
        if !has_manifest && (!opts.create_if_missing || !names.iter().all(own)) {
            return Err(Error::NotAStore(dir.to_path_buf()));
        }
        let lock = st
            .lock(&dir.join(LOCK_FILE))
            .map_err(|e| Error::io(dir.join(LOCK_FILE), e))?
            .ok_or_else(|| Error::Locked(dir.to_path_buf()))?;

        let mut manifest = match Manifest::load(st, dir)? {
            Some(m) => m,
            None => {
                if !opts.create_if_missing {
                    return Err(Error::NotAStore(dir.to_path_buf()));
                }
                // Only evendb's own leftovers of an interrupted creation can
                // be here: no put was acknowledged without a manifest.
                LogSegment::create(st, dir, 1)?;
                Manifest {
                    epoch: 0,
                    next_file: 2,
                    next_chunk_id: 2,
                    chunks: vec![ChunkRecord {
                        id: 1,
                        min_key: Vec::new(),
                        files: FunkFiles {
                            table: None,
                            logs: vec![1],
                        },
                    }],
                }
            }
        };
        // A new epoch: every version written from now on is larger than any
        // version on disk. It is durable before the first put.
        manifest.epoch += 1;
        manifest.store(st, dir)?;
        let names = st.list(dir).map_err(|e| Error::io(dir, e))?;
        remove_orphans(st, dir, &manifest, &names)?;

        let chunks = manifest
            .chunks
            .iter()
            .map(|c| {
                Arc::new(Chunk::new(
                    c.id,
                    c.min_key.clone(),
                    c.files.clone(),
                    None,
                    0,
                ))
            })
            .collect();
        let inner = Arc::new(DbInner {
            dir: dir.to_path_buf(),
            storage: storage.clone(),
            versions: Versions::new(manifest.epoch),
            chunks: RwLock::new(Arc::new(ChunkList { chunks })),
            published: Mutex::new(Published { manifest }),
            counters: Counters::default(),
            poisoned: Mutex::new(None),
            queue: Mutex::new(VecDeque::new()),
            queue_cv: Condvar::new(),
            shutdown: AtomicBool::new(false),
            stop_lock: Mutex::new(()),
            stop_cv: Condvar::new(),
            _lock: lock,
            opts,
        });
        let mut threads = Vec::new();
        for i in 0..inner.opts.maintenance_threads {
            let w = inner.clone();
            threads.push(
                std::thread::Builder::new()
                    .name(format!("evendb-maint-{i}"))
                    .spawn(move || crate::maintenance::worker(&w))
                    .map_err(|e| Error::io(dir, e))?,
            );
        }
        if let Durability::Buffered { sync_interval } = inner.opts.durability {
            let w = inner.clone();
            threads.push(
                std::thread::Builder::new()
                    .name("evendb-sync".into())
                    .spawn(move || syncer(&w, sync_interval))
                    .map_err(|e| Error::io(dir, e))?,
            );
        }
        Ok(Db {
            _owner: Arc::new(Owner {
                inner: inner.clone(),
                threads: Mutex::new(threads),
            }),
            inner,
        })
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
    /// [`Error::InvalidArgument`] for a key over [`MAX_KEY_SIZE`] or a value
    /// over [`MAX_VALUE_SIZE`] (before any I/O); [`Error::Poisoned`] after an
    /// earlier write failure; I/O errors (which poison the store).
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let value = value.as_ref();
        if value.len() > MAX_VALUE_SIZE {
            return Err(Error::InvalidArgument(format!(
                "value of {} bytes exceeds the limit of {MAX_VALUE_SIZE}",
                value.len()
            )));
        }
        self.inner.write(key.as_ref(), Some(value))
    }

    /// Removes `key` (a no-op if absent).
    ///
    /// # Errors
    /// As [`Db::put`].
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.inner.write(key.as_ref(), None)
    }

    /// The current value of `key`.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the bytes read fail their checks, I/O errors.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        stats::add(&self.inner.counters.gets, 1);
        self.inner.get_at(key.as_ref(), u64::MAX)
    }

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
        stats::add(&self.inner.counters.scans, 1);
        let (lo, hi) = crate::scan::announced_range(&range);
        let snap = SnapshotGuard::new(self.inner.clone(), &lo, hi.as_deref());
        Scan::new(Arc::new(snap), &range)
    }

    /// Key-value pairs whose keys start with `prefix`, in key order.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Scan {
        stats::add(&self.inner.counters.scans, 1);
        let p = prefix.as_ref();
        let hi = crate::scan::prefix_end(p);
        let snap = SnapshotGuard::new(self.inner.clone(), p, hi.as_deref());
        Scan::prefix(Arc::new(snap), p)
    }

    /// A consistent read view of the store as of now. Cheap; it keeps the
    /// versions it needs from being dropped by rebuilds until it is dropped,
    /// so do not hold one for hours.
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

    /// Makes every put completed before the call durable.
    ///
    /// # Errors
    /// I/O errors (which poison the store).
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Rebuilds every chunk now: merges each table with its log, splitting
    /// and merging chunks as their sizes ask. Normally this happens in the
    /// background as logs fill; call it to reclaim space after mass deletes.
    ///
    /// # Errors
    /// I/O and corruption errors.
    pub fn compact(&self) -> Result<()> {
        let list = self.inner.chunk_list();
        for chunk in &list.chunks {
            crate::maintenance::rebuild_and_merge(&self.inner, chunk)?;
        }
        Ok(())
    }

    /// The store's counters.
    pub fn stats(&self) -> Stats {
        let mut s = self.inner.counters.snapshot();
        s.chunks = self.inner.chunk_list().chunks.len() as u64;
        s.active_snapshots = self.inner.versions.active_snapshots() as u64;
        s
    }

    /// The store's directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }
}

/// Removes files of a crashed rebuild, split or merge: engine-named files
/// the manifest does not refer to. Other files are left alone.
fn remove_orphans(st: &dyn Storage, dir: &Path, m: &Manifest, names: &[String]) -> Result<()> {
    let live: HashSet<u64> = m.live_files().collect();
    let mut removed = false;
    for name in names {
        let orphan = match is_engine_file(name) {
            Some(n) => !live.contains(&n),
            None => name == MANIFEST_TMP,
        };
        if orphan {
            let p = dir.join(name);
            log::info!("removing orphan {}", p.display());
            st.remove(&p).map_err(|e| Error::io(&p, e))?;
            removed = true;
        }
    }
    if removed {
        st.sync_dir(dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

fn syncer(inner: &Arc<DbInner>, interval: Duration) {
    let mut guard = inner.stop_lock.lock();
    while !inner.shutdown.load(Ordering::Acquire) {
        inner.stop_cv.wait_for(&mut guard, interval);
        drop(guard);
        if let Err(e) = inner.flush() {
            log::error!("background sync of {} failed: {e}", inner.dir.display());
        }
        guard = inner.stop_lock.lock();
    }
}

impl DbInner {
    pub fn chunk_list(&self) -> Arc<ChunkList> {
        self.chunks.read().clone()
    }

    pub fn check_poison(&self) -> Result<()> {
        match &*self.poisoned.lock() {
            Some(why) => Err(Error::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    /// Records a write failure; writes fail from now until reopen.
    pub fn poison<T>(&self, e: Error) -> Result<T> {
        if matches!(e, Error::Io { .. }) {
            let mut p = self.poisoned.lock();
            if p.is_none() {
                log::error!("poisoning {} after: {e}", self.dir.display());
                *p = Some(e.to_string());
            }
        }
        Err(e)
    }

    /// Makes sure the chunk's funk is open; takes the write lock to open it.
    pub fn ensure_open(&self, chunk: &Chunk) -> Result<()> {
        if chunk.state.read().funk.is_some() {
            return Ok(());
        }
        let mut st = chunk.state.write();
        if st.funk.is_none() {
            let funk = Funk::open(self.storage.as_ref(), &self.dir, &st.files)?;
            stats::add(&self.counters.torn_tail_bytes, funk.truncated);
            stats::add(&self.counters.funks_opened, 1);
            st.next_counter = st.next_counter.max(funk.max_counter + 1);
            st.funk = Some(funk);
        }
        Ok(())
    }

    /// The one write path: puts and deletes.
    fn write(&self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        if key.len() > MAX_KEY_SIZE {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes exceeds the limit of {MAX_KEY_SIZE}",
                key.len()
            )));
        }
        self.check_poison()?;
        loop {
            let list = self.chunk_list();
            let Some((chunk, _)) = list.find(key) else {
                return Err(Error::InvalidArgument("store has no chunks".into()));
            };
            self.ensure_open(&chunk)?;
            let ticket = self.versions.begin_put(key);
            let mut st = chunk.state.write();
            if chunk.is_retired() {
                continue;
            }
            let counter = st.next_counter;
            let Some(funk) = st.funk.as_mut() else {
                continue; // closed by a concurrent rebuild failure; retry
            };
            let (segment, end) = match funk.append(key, value, ticket.version, counter) {
                Ok(r) => r,
                Err(e) => return self.poison(e),
            };
            let full = funk.log_bytes > self.opts.max_log_size;
            st.next_counter += 1;
            drop(st);
            drop(ticket);

            let c = &self.counters;
            stats::add(if value.is_some() { &c.puts } else { &c.deletes }, 1);
            let user = key.len() + value.map_or(0, <[u8]>::len);
            stats::add(&c.user_bytes_written, user as u64);
            stats::add(
                &c.log_bytes_written,
                (user + crate::funk::log::format::HEADER_LEN) as u64,
            );
            if self.opts.durability == Durability::Sync {
                match segment.sync_to(end) {
                    Ok(true) => stats::add(&c.log_syncs, 1),
                    Ok(false) => {}
                    Err(e) => return self.poison(e),
                }
            }
            if full {
                self.schedule(&chunk);
            }
            return Ok(());
        }
    }

    /// Queues a chunk for rebuild, or rebuilds it now without workers.
    fn schedule(&self, chunk: &Arc<Chunk>) {
        if self.opts.maintenance_threads == 0 {
            if let Err(e) = crate::maintenance::rebuild_and_merge(self, chunk) {
                log::error!("rebuild of chunk {} failed: {e}", chunk.id);
            }
            return;
        }
        if !chunk.queued.swap(true, Ordering::AcqRel) {
            self.queue.lock().push_back(chunk.clone());
            self.queue_cv.notify_one();
        }
    }

    pub fn get_at(&self, key: &[u8], version: u64) -> Result<Option<Vec<u8>>> {
        loop {
            let list = self.chunk_list();
            let Some((chunk, _)) = list.find(key) else {
                return Ok(None);
            };
            let st = chunk.state.read();
            if chunk.is_retired() {
                continue;
            }
            let Some(funk) = st.funk.as_ref() else {
                drop(st);
                self.ensure_open(&chunk)?;
                continue;
            };
            return Ok(funk.get(key, version)?.and_then(|e| e.value));
        }
    }

    pub fn flush(&self) -> Result<()> {
        let list = self.chunk_list();
        for chunk in &list.chunks {
            let logs: Vec<Arc<LogSegment>> = match chunk.state.read().funk.as_ref() {
                Some(f) => f.logs.iter().filter(|l| l.is_dirty()).cloned().collect(),
                None => continue,
            };
            for l in logs {
                match l.sync_all() {
                    Ok(true) => stats::add(&self.counters.log_syncs, 1),
                    Ok(false) => {}
                    Err(e) => return self.poison(e),
                }
            }
        }
        Ok(())
    }

    /// Writes every log's user-space buffer to its file (no sync).
    pub fn flush_buffers(&self) -> Result<()> {
        let list = self.chunk_list();
        for chunk in &list.chunks {
            if let Some(f) = chunk.state.read().funk.as_ref() {
                for l in &f.logs {
                    if let Err(e) = l.write_out() {
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
        n
    }

    pub fn table_writer(&self, number: u64) -> Result<TableWriter> {
        TableWriter::create(
            self.storage.as_ref(),
            &self.dir,
            number,
            self.opts.block_size,
        )
    }
}
