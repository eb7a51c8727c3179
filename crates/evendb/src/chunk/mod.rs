//! Chunks: contiguous key ranges that partition the key space, and the index
//! that finds them.
//!
//! Invariants:
//! - A chunk's range `[min_key, end_key)` never changes. A split or merge
//!   replaces chunks by new ones: it sets the old chunk's `successors`, then
//!   `retired` (Release), then swaps in a new index. A reader that finds a
//!   chunk retired (Acquire) follows `successors` to the chunk now holding
//!   its key, so a stale index costs a few hops and never a wrong answer.
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

use crate::funk::{Funk, FunkFiles};
use crate::munk::Munk;
use arc_swap::{ArcSwap, ArcSwapOption};
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

/// Maintenance a chunk is queued for (bits of `Chunk::queued`).
pub(crate) mod task {
    pub const FUNK_REBALANCE: u8 = 1;
    pub const MUNK_REBALANCE: u8 = 2;
    pub const MUNK_LOAD: u8 = 4;
    pub const MERGE: u8 = 8;
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
    retired: AtomicBool,
    successors: OnceLock<Vec<Arc<Chunk>>>,
    /// Access count for the munk cache's LFU policy (halved periodically).
    pub heat: AtomicU32,
    /// Bumped whenever the chunk gains or loses its munk; row-cache entries
    /// carry it, so entries from before are never served.
    pub generation: AtomicU64,
    /// Maintenance this chunk waits for (`task` bits).
    pub queued: AtomicU8,
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
            retired: AtomicBool::new(false),
            successors: OnceLock::new(),
            heat: AtomicU32::new(0),
            generation: AtomicU64::new(0),
            queued: AtomicU8::new(0),
        }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.min_key.as_slice() && self.end_key.as_deref().is_none_or(|e| key < e)
    }

    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Marks the chunk replaced by `successors` (which cover its range).
    pub fn retire(&self, successors: Vec<Arc<Chunk>>) {
        let _ = self.successors.set(successors);
        self.retired.store(true, Ordering::Release);
    }

    /// The live chunk holding `key`, following replacements from here.
    pub fn resolve(self: &Arc<Self>, key: &[u8]) -> Arc<Chunk> {
        let mut c = self.clone();
        while c.is_retired() {
            let next = c
                .successors
                .get()
                .and_then(|s| s.iter().find(|n| n.contains(key)).cloned());
            match next {
                Some(n) => c = n,
                None => break,
            }
        }
        c
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

    pub fn clear_queued(&self, bits: u8) {
        self.queued.fetch_and(!bits, Ordering::AcqRel);
    }
}

/// The chunks in key order; immutable once built, swapped whole.
#[derive(Debug, Default)]
pub(crate) struct ChunkIndex {
    pub chunks: Vec<Arc<Chunk>>,
}

impl ChunkIndex {
    /// Position of the chunk whose range holds `key`.
    pub fn position(&self, key: &[u8]) -> usize {
        self.chunks
            .partition_point(|c| c.min_key.as_slice() <= key)
            .saturating_sub(1)
    }

    /// The indexed chunk for `key` (possibly retired since the index was
    /// built).
    pub fn get(&self, key: &[u8]) -> Option<&Arc<Chunk>> {
        self.chunks.get(self.position(key))
    }
}

/// The index, swapped atomically; lookups never lock.
#[derive(Debug)]
pub(crate) struct Index {
    current: ArcSwap<ChunkIndex>,
    /// Serializes index rebuilds (splits and merges replacing chunks).
    update: Mutex<()>,
}

impl Index {
    pub fn new(chunks: Vec<Arc<Chunk>>) -> Self {
        Index {
            current: ArcSwap::from_pointee(ChunkIndex { chunks }),
            update: Mutex::new(()),
        }
    }

    pub fn load(&self) -> Arc<ChunkIndex> {
        self.current.load_full()
    }

    /// The live chunk holding `key`.
    pub fn find(&self, key: &[u8]) -> Option<Arc<Chunk>> {
        let idx = self.current.load();
        idx.get(key).map(|c| c.resolve(key))
    }

    /// Replaces `old` (adjacent chunks, in key order) by `new` in the index.
    pub fn replace(&self, old: &[Arc<Chunk>], new: &[Arc<Chunk>]) {
        let _g = self.update.lock();
        let cur = self.current.load_full();
        let mut chunks = Vec::with_capacity(cur.chunks.len() + new.len());
        let mut inserted = false;
        for c in &cur.chunks {
            if old.iter().any(|o| Arc::ptr_eq(o, c)) {
                if !inserted {
                    chunks.extend(new.iter().cloned());
                    inserted = true;
                }
            } else {
                chunks.push(c.clone());
            }
        }
        self.current.store(Arc::new(ChunkIndex { chunks }));
    }
}
