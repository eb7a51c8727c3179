//! Every option, with its default and its trade-off.

use crate::error::{Error, Result};
use crate::vfs::{StdFs, Storage};
use std::sync::Arc;
use std::time::Duration;

/// How table blocks, and the blocks of sorted runs, are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Blocks as they are.
    None,
    /// Each block compressed with LZ4 when that saves an eighth or more
    /// (else stored as it is): table blocks, and the blocks of the sorted
    /// runs maintenance writes from unsorted logs. Logs appended by puts
    /// are never compressed: they are the data's first copy, appended and
    /// read record by record.
    #[default]
    Lz4,
}

/// What survives a crash, and what a put costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Durability {
    /// A write returns only after it is on stable storage: a put, delete
    /// or batch once its record is in the commit journal, fsynced. Writes
    /// that arrive together share one journal fsync whatever chunks they
    /// touch (group commit); the chunk logs are synced in the background
    /// and the journal trimmed behind them, and an open replays what the
    /// logs lack. Every acknowledged write survives a crash. Slower than
    /// `Buffered` by a journal fsync per write or group of writes.
    Sync,
    /// Puts are buffered and synced in the background every
    /// `sync_interval`; a crash (of the process or the machine) may lose the
    /// puts of the last interval. `Db::flush` syncs on demand.
    Buffered {
        /// How often buffered puts are synced.
        sync_interval: Duration,
    },
}

impl Default for Durability {
    /// `Buffered` with a 100 ms interval.
    fn default() -> Self {
        Durability::Buffered {
            sync_interval: Duration::from_millis(100),
        }
    }
}

/// Options for opening a store; start from [`Options::default`].
///
/// ```
/// use evendb::{Durability, Options};
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Options::default()
///     .durability(Durability::Sync)
///     .max_chunk_size(4 << 20)
///     .open(dir.path())?;
/// db.put("k", "v")?;
/// # Ok::<(), evendb::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) durability: Durability,
    pub(crate) max_chunk_size: u64,
    pub(crate) max_log_size: u64,
    pub(crate) block_size: usize,
    pub(crate) compression: Compression,
    pub(crate) maintenance_threads: usize,
    pub(crate) create_if_missing: bool,
    pub(crate) memory_budget: u64,
    pub(crate) row_cache_share: f64,
    pub(crate) log_parts: usize,
    pub(crate) trim_freed_memory: bool,
    pub(crate) read_only: bool,
    #[cfg(feature = "test-hooks")]
    pub(crate) fail_points: Option<crate::failpoint::Hook>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            storage: Arc::new(StdFs),
            durability: Durability::default(),
            max_chunk_size: 8 << 20,
            max_log_size: 2 << 20,
            block_size: 4096,
            compression: Compression::default(),
            maintenance_threads: default_maintenance_threads(),
            create_if_missing: true,
            memory_budget: 256 << 20,
            row_cache_share: 0.25,
            log_parts: 16,
            trim_freed_memory: true,
            read_only: false,
            #[cfg(feature = "test-hooks")]
            fail_points: None,
        }
    }
}

/// Half the machine's cores, between 1 and 4: maintenance is mostly I/O and
/// copying, and should not take the cores that serve requests.
fn default_maintenance_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get() / 2)
        .clamp(1, 4)
}

impl Options {
    /// Whether maintenance threads hand memory the store freed back to the
    /// system (glibc's `malloc_trim`, at most once a second and only after
    /// an eighth of the budget was released). Default on: without it, the
    /// per-thread arenas of glibc's malloc keep the resident set at a
    /// multiple of the budget. Off for an application whose global
    /// allocator returns memory itself, or that trims on its own.
    pub fn trim_freed_memory(mut self, on: bool) -> Self {
        self.trim_freed_memory = on;
        self
    }

    /// Opens the store without writing anything to its directory: no new
    /// epoch, no MANIFEST or CHECKPOINT rewrite, no removal of leftover
    /// files, no truncation of a torn log tail (reads stop before it), no
    /// maintenance. Gets, scans, snapshots, statistics and integrity
    /// checks work; puts, deletes, `flush` and `compact` return
    /// [`Error::ReadOnly`](crate::Error::ReadOnly). For a full disk, a
    /// read-only mount, or a backup being checked (a backup taken through
    /// it fails: its files cannot be created). The store must exist.
    /// Default off.
    ///
    /// After a crash in [`Durability::Sync`] mode, the commit journal may
    /// hold acknowledged writes the chunk logs lack. A read-write open
    /// replays them into the logs; a read-only open reads the journal and
    /// holds, per key, the newest of those writes in memory, above the
    /// chunks, so that it shows exactly what a read-write open shows
    /// after its replay, without writing it. That memory (about the size
    /// of the writes the logs lack; a journal is a few segments of at most
    /// 16 MiB) is charged to the memory budget as write buffers
    /// ([`Stats::memory_write_buffers`](crate::Stats::memory_write_buffers))
    /// until the handle is dropped.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// # evendb::Db::open(dir.path())?.put("k", "v")?;
    /// let db = evendb::Options::default().read_only(true).open(dir.path())?;
    /// assert_eq!(db.get("k")?.as_deref(), Some(&b"v"[..]));
    /// assert!(matches!(db.put("k", "w"), Err(evendb::Error::ReadOnly(_))));
    /// # Ok::<(), evendb::Error>(())
    /// ```
    ///
    /// # Errors
    /// None here; [`Options::open`] of a read-only store fails as a
    /// read-write open does on a missing directory, a directory holding no
    /// store, a lock held by another handle, or damaged files, and never
    /// because a write would be needed.
    pub fn read_only(mut self, on: bool) -> Self {
        self.read_only = on;
        self
    }

    /// Durability of puts. Default: [`Durability::Buffered`] every 100 ms.
    pub fn durability(mut self, d: Durability) -> Self {
        self.durability = d;
        self
    }

    /// A chunk whose data passes this size is split in two at its next
    /// rebuild; neighbors whose data together falls under a quarter of it
    /// are merged. Default 8 MiB. Larger chunks mean fewer files and longer
    /// rebuilds; smaller ones mean finer caching and more files.
    pub fn max_chunk_size(mut self, bytes: u64) -> Self {
        self.max_chunk_size = bytes;
        self
    }

    /// When the log of a chunk without a munk passes this size, the chunk's
    /// table and log are merged into a new table (a funk rebalance). Default
    /// 2 MiB. Larger logs mean less rewriting (lower write amplification)
    /// and more space; gets do not slow down (each log has a directory),
    /// but scans of chunks not in memory read and sort the whole log. In
    /// the paper suite, 4 MiB took puts at 8x the memory from 1.04-1.35x
    /// RocksDB to 1.19-1.66x and their write amplification from 1.60-2.06
    /// to 1.24-1.69, but short scans after updates at 8x fell from
    /// 1.04-1.56x to 0.14-0.34x: raise it for write-mostly stores.
    /// A chunk with a munk lets its log grow to twice `max_chunk_size`
    /// before its table is rewritten (from the munk): most of its
    /// compaction happens in memory.
    pub fn max_log_size(mut self, bytes: u64) -> Self {
        self.max_log_size = bytes;
        self
    }

    /// Target size of a table data block. Default 4 KiB. Larger blocks
    /// favour scans, smaller ones point reads.
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes;
        self
    }

    /// How table blocks and sorted runs are stored. Default
    /// [`Compression::Lz4`]: blocks of compressible values (text, JSON)
    /// take a fraction of the space and of the device's bandwidth; blocks
    /// that do not shrink are stored as they are, so incompressible values
    /// cost only the attempt. With `None`, runs are written as ordinary
    /// logs. Files written with either setting are read with both.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = evendb::Options::default()
    ///     .compression(evendb::Compression::None)
    ///     .open(dir.path())?;
    /// # Ok::<(), evendb::Error>(())
    /// ```
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Background threads for munk loads, rebalances, splits and merges.
    /// Default: half the machine's cores, between 1 and 4. With 0, the
    /// operation that needs the work does it before returning (useful for
    /// deterministic tests and one-shot tools). With any other number, two
    /// more threads run: one takes only urgent work (the rebuilds of
    /// chunks whose puts are slowed down because maintenance is behind),
    /// the other keeps a margin of the memory budget free while writes
    /// dominate, so that puts seldom evict munks themselves, and frees the
    /// munks taken out of service.
    pub fn maintenance_threads(mut self, n: usize) -> Self {
        self.maintenance_threads = n;
        self
    }

    /// The memory the store may use for munks (in-memory chunks), the row
    /// cache, Bloom filters and table indexes, all together. Default
    /// 256 MiB. Hot key ranges are served from memory while they fit; the
    /// rest is read from disk (and the OS page cache, which is not counted
    /// here). [`Stats`](crate::Stats) reports the breakdown.
    pub fn memory_budget(mut self, bytes: u64) -> Self {
        self.memory_budget = bytes;
        self
    }

    /// The share of [`Options::memory_budget`] the row cache (hot single
    /// keys of chunks without munks) may take, in `0.0..=0.9`. Default
    /// 0.25; 0 disables the row cache.
    pub fn row_cache_share(mut self, share: f64) -> Self {
        self.row_cache_share = share;
        self
    }

    /// Create the store if the directory has none. Default true.
    pub fn create_if_missing(mut self, yes: bool) -> Self {
        self.create_if_missing = yes;
        self
    }

    /// The storage all file I/O goes through. Default: the real file
    /// system. Tests pass a [`MemFs`](crate::vfs::MemFs).
    pub fn storage(mut self, storage: Arc<dyn Storage>) -> Self {
        self.storage = storage;
        self
    }

    /// Calls `hook` with the name of every fail point the engine passes
    /// (`split.after_tables`, `checkpoint.before_record`, ...; the list is
    /// in `docs/design.md`). When it returns true, the step fails there
    /// with an I/O error, as if the disk had failed, and the store is
    /// poisoned. For crash and fault tests; not a stable API.
    #[cfg(feature = "test-hooks")]
    pub fn fail_points(mut self, hook: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.fail_points = Some(crate::failpoint::Hook(Arc::new(hook)));
        self
    }

    /// The log size at which a chunk with a munk is rebuilt.
    pub(crate) fn munk_log_limit(&self) -> u64 {
        self.max_chunk_size.saturating_mul(2).max(self.max_log_size)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_chunk_size < 4096 {
            return Err(Error::InvalidArgument(
                "max_chunk_size must be at least 4096".into(),
            ));
        }
        if self.max_log_size < 1024 {
            return Err(Error::InvalidArgument(
                "max_log_size must be at least 1024".into(),
            ));
        }
        if !(256..=(16 << 20)).contains(&self.block_size) {
            return Err(Error::InvalidArgument(
                "block_size must be in 256..=16 MiB".into(),
            ));
        }
        if !(0.0..=0.9).contains(&self.row_cache_share) {
            return Err(Error::InvalidArgument(
                "row_cache_share must be in 0.0..=0.9".into(),
            ));
        }
        if let Durability::Buffered { sync_interval } = self.durability {
            if sync_interval.is_zero() {
                return Err(Error::InvalidArgument(
                    "sync_interval must be positive".into(),
                ));
            }
        }
        Ok(())
    }
}
