//! Chunks: contiguous key ranges that partition the key space, and the index
//! that finds them.
//!
//! Invariants:
//! - A chunk's range `[min_key, end_key)` never changes. A split or merge
//!   replaces chunks by new ones: it retires the old chunk for its
//!   successors, then swaps in a new index; a reader that finds a chunk
//!   retired follows its successors to the chunk now holding its key, so a
//!   stale index costs a few hops and never a wrong answer. The orderings
//!   that make this hold are in `lineage`, which is model-checked.
//!   A retired chunk's data stays intact for readers that got in first.
//! - `rebalance` is taken shared by every put for its whole length, and
//!   exclusively, briefly, by whatever freezes the chunk: a munk rebalance, a
//!   munk install or eviction, a divert, the first phase of a split, a merge's
//!   swap. Gets and scans never take it.
//! - `funk` and `munk` are swapped atomically (`ArcSwap`); a reader keeps the
//!   funk or munk it loaded alive (reference count) until it is done. The
//!   munk is installed and removed only under `rebalance` exclusive; the
//!   funk is replaced only by the holder of `funk_change`.
//! - `funk_change` is held by the one thread changing the funk's files (funk
//!   rebalance, split, merge, munk load); others `try_lock` it and leave the
//!   work to that thread.
//! - `counter` gives every put a per-chunk number (taken under the log
//!   segment's append mutex), ordering puts of one key that got the same
//!   version. New chunks start from their parent's counter.

mod lineage;
#[cfg(all(test, loom))]
mod loom_model;

use crate::funk::{Funk, FunkFiles};
use crate::munk::Munk;
use arc_swap::ArcSwapOption;
use lineage::{Lineage, Ranged};
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

/// The index, swapped atomically; lookups never lock.
pub(crate) type Index = lineage::Index<Chunk>;

/// Maintenance a chunk is queued for (bits of `Chunk::queued`).
pub(crate) mod task {
    pub const FUNK_REBALANCE: u8 = 1;
    pub const MUNK_REBALANCE: u8 = 2;
    pub const MUNK_LOAD: u8 = 4;
    pub const MERGE: u8 = 8;
    /// A munk-less chunk is scanned while its log is too large to index
    /// cheaply (a log written while it had a munk): rebuild it into a table.
    pub const COMPACT_LOG: u8 = 16;
    /// A rebuild that drops what a range delete removed.
    pub const RECLAIM: u8 = 32;
    /// The chunk waits in the urgent queue too (its log is far past its
    /// limit and puts to it are paced): it runs a funk rebalance.
    pub const URGENT: u8 = 64;
}

#[derive(Debug)]
pub(crate) struct Chunk {
    pub id: u64,
    pub min_key: Vec<u8>,
    /// Exclusive end of the range; `None` for the last chunk.
    pub end_key: Option<Vec<u8>>,
    pub rebalance: RwLock<()>,
    pub funk_change: Arc<Mutex<()>>,
    /// Serializes the lazy opening of the funk.
    open_lock: Mutex<()>,
    /// The files as last published (what a lazy open reads).
    pub files: Mutex<FunkFiles>,
    funk: ArcSwapOption<Funk>,
    munk: ArcSwapOption<Munk>,
    pub counter: AtomicU64,
    /// Puts to this chunk whose log record is readable, counted after the
    /// append and before the row-cache refresh: a get that read the funk
    /// inserts into the row cache only if no put completed meanwhile.
    pub applied: AtomicU64,
    /// Whether a split or merge replaced the chunk, and by what.
    lineage: Lineage<Chunk>,
    /// Access count for the munk cache's LFU policy (halved periodically).
    pub heat: AtomicU32,
    /// The heat at which a munk load was last refused for want of room (0:
    /// not refused since its last load). Not halved with `heat`: the chunk
    /// asks again once it is twice as hot, or once `refused_at` is old.
    pub load_refused: AtomicU32,
    /// The store's access count (`DbInner::touches`) at the last refusal.
    pub refused_at: AtomicU64,
    /// Bumped whenever the chunk gains or loses its munk; row-cache entries
    /// carry it, so entries from before are never served.
    pub generation: AtomicU64,
    /// Maintenance this chunk waits for (`task` bits).
    pub queued: AtomicU8,
    /// Set by a `Sync` put whose record went to the munk and the commit
    /// journal only (see `db::deferred`); cleared by whoever then writes
    /// the munk's unlogged versions to the log.
    pub unlogged: AtomicBool,
    /// The largest version a deferred `Sync` put gave the munk (never
    /// lowered); see [`Chunk::max_version`].
    deferred_max: AtomicU64,
    /// Budget bytes charged in advance for the log directory the deferred
    /// records will take once written (see `db::deferred`).
    pub deferred_directory: AtomicU64,
}

impl Chunk {
    pub fn new(id: u64, min_key: Vec<u8>, end_key: Option<Vec<u8>>, files: FunkFiles) -> Self {
        Chunk {
            id,
            min_key,
            end_key,
            rebalance: RwLock::new(()),
            funk_change: Arc::new(Mutex::new(())),
            open_lock: Mutex::new(()),
            files: Mutex::new(files),
            funk: ArcSwapOption::empty(),
            munk: ArcSwapOption::empty(),
            counter: AtomicU64::new(0),
            applied: AtomicU64::new(0),
            lineage: Lineage::new(),
            heat: AtomicU32::new(0),
            load_refused: AtomicU32::new(0),
            refused_at: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            queued: AtomicU8::new(0),
            unlogged: AtomicBool::new(false),
            deferred_max: AtomicU64::new(0),
            deferred_directory: AtomicU64::new(0),
        }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        Ranged::contains(self, key)
    }

    pub fn is_retired(&self) -> bool {
        self.lineage.is_retired()
    }

    /// Marks the chunk replaced by `successors` (which cover its range).
    pub fn retire(&self, successors: Vec<Arc<Chunk>>) {
        self.lineage.retire(successors);
    }

    /// The live chunk holding `key`, following replacements from here.
    pub fn resolve(self: &Arc<Self>, key: &[u8]) -> Arc<Chunk> {
        lineage::resolve(self, key)
    }

    pub fn funk(&self) -> Option<Arc<Funk>> {
        self.funk.load_full()
    }

    pub fn set_funk(&self, funk: Arc<Funk>) {
        self.funk.store(Some(funk));
    }

    pub fn open_lock(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.open_lock.lock()
    }

    pub fn munk(&self) -> Option<Arc<Munk>> {
        self.munk.load_full()
    }

    /// Installs or removes the munk; the caller holds `rebalance`
    /// exclusively (the guard is the witness).
    pub fn set_munk(
        &self,
        _frozen: &parking_lot::RwLockWriteGuard<'_, ()>,
        munk: Option<Arc<Munk>>,
    ) -> Option<Arc<Munk>> {
        let old = self.munk.swap(munk);
        self.generation.fetch_add(1, Ordering::AcqRel);
        old
    }

    /// Notes a deferred `Sync` put of `version` to the munk, before the
    /// munk shows it.
    pub fn note_deferred(&self, version: u64) {
        self.deferred_max.fetch_max(version, Ordering::AcqRel);
    }

    /// A bound on every version the chunk holds, given its `funk`: the
    /// funk's largest, or a deferred put's still only in the munk. (A split
    /// or an eviction writes the deferred versions to the log first, so a
    /// new chunk starts from its funk's.)
    pub fn max_version(&self, funk: &Funk) -> u64 {
        funk.max_version()
            .max(self.deferred_max.load(Ordering::Acquire))
    }

    /// True if the munk is present (cheap; for decisions, not reads).
    pub fn has_munk(&self) -> bool {
        self.munk.load().is_some()
    }

    /// Counts one access for the munk cache.
    pub fn touch(&self) {
        self.heat.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks `bits` queued; true if none of them was queued before.
    pub fn mark_queued(&self, bits: u8) -> bool {
        self.queued.fetch_or(bits, Ordering::AcqRel) & bits == 0
    }

    /// True if any of `bits` is queued.
    pub fn is_queued(&self, bits: u8) -> bool {
        self.queued.load(Ordering::Acquire) & bits != 0
    }

    pub fn clear_queued(&self, bits: u8) {
        self.queued.fetch_and(!bits, Ordering::AcqRel);
    }
}

impl Ranged for Chunk {
    fn min_key(&self) -> &[u8] {
        &self.min_key
    }

    fn end_key(&self) -> Option<&[u8]> {
        self.end_key.as_deref()
    }

    fn lineage(&self) -> &Lineage<Self> {
        &self.lineage
    }
}
