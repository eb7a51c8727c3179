//! Replacing chunks while readers walk them: the part of a split or merge
//! that retires the old chunks and publishes their successors and a new
//! index, and the part of a lookup (a get, a put, a scan moving on to the
//! chunk holding the end of the previous one) that finds the live chunk
//! holding a key. Generic over the chunk type so that the model checker
//! (`loom_model`) runs this very code on small chunks of its own.
//!
//! Invariants:
//! - A chunk's range `[min_key, end_key)` never changes. Whoever replaces
//!   chunks holds what excludes other replacers of the same chunks (for
//!   `Chunk`: its `rebalance` lock exclusively): it calls
//!   [`Lineage::retire`] on each old chunk with the new chunks that cover
//!   its range, then [`Index::replace`].
//! - `retire` sets `successors` (once), then stores `retired` with
//!   `Release`; [`resolve`] loads `retired` with `Acquire`, so a reader that
//!   sees a chunk retired also sees its successors (`OnceLock` publishes
//!   its value the same way). A reader that does not see it yet reads the
//!   old chunk, whose data stays valid for the readers that got in first.
//! - The successors of a chunk cover its whole range, so `resolve` always
//!   finds the one holding its key and only stops at a chunk it saw live.
//! - `current` is swapped whole (an `ArcSwap` store releases the new
//!   partition; loads acquire it) and only under `update`, so concurrent
//!   replacements never lose each other's changes. Readers never lock. A
//!   stale partition is still a partition: the chunk it gives for a key
//!   holds that key, retired or not, and `resolve` goes on from there.
//! - A scan that used up a chunk goes on at that chunk's end key through
//!   [`Index::find`]; whatever chunk it gets, old or new, holds that key, so
//!   it reads on from there with no gap and no overlap.

use crate::prefix::PrefixIndex;
use crate::sync::{ArcSwap, AtomicBool, Mutex, OnceLock, Ordering};
use std::sync::Arc;

/// A chunk as this module sees it: a fixed range and its lineage.
pub(crate) trait Ranged: Sized {
    fn min_key(&self) -> &[u8];
    /// Exclusive end of the range; `None` for the last chunk.
    fn end_key(&self) -> Option<&[u8]>;
    fn lineage(&self) -> &Lineage<Self>;

    fn contains(&self, key: &[u8]) -> bool {
        key >= self.min_key() && self.end_key().is_none_or(|e| key < e)
    }
}

/// Whether a chunk was replaced, and by what.
#[derive(Debug)]
pub(crate) struct Lineage<T> {
    retired: AtomicBool,
    successors: OnceLock<Vec<Arc<T>>>,
}

impl<T> Lineage<T> {
    pub fn new() -> Self {
        Lineage {
            retired: AtomicBool::new(false),
            successors: OnceLock::new(),
        }
    }

    pub fn is_retired(&self) -> bool {
        self.retired.load(Ordering::Acquire)
    }

    /// Marks the chunk replaced by `successors` (which cover its range).
    pub fn retire(&self, successors: Vec<Arc<T>>) {
        let _ = self.successors.set(successors);
        self.retired.store(true, Ordering::Release);
    }
}

/// The live chunk holding `key`, following replacements from `from`.
pub(crate) fn resolve<T: Ranged>(from: &Arc<T>, key: &[u8]) -> Arc<T> {
    let mut c = from.clone();
    while c.lineage().is_retired() {
        let next = c
            .lineage()
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

/// The chunks in key order; immutable once built, swapped whole.
#[derive(Debug)]
pub(crate) struct Partition<T> {
    pub chunks: Vec<Arc<T>>,
    /// The chunks' minimum keys, searched by integer prefix.
    min_keys: PrefixIndex,
}

impl<T: Ranged> Partition<T> {
    pub fn new(chunks: Vec<Arc<T>>) -> Self {
        let min_keys = PrefixIndex::new(chunks.iter().map(|c| c.min_key()));
        Partition { chunks, min_keys }
    }

    /// Position of the chunk whose range holds `key`.
    pub fn position(&self, key: &[u8]) -> usize {
        self.min_keys
            .upper_bound(key, |i| self.chunks[i].min_key() <= key)
            .saturating_sub(1)
    }

    /// The chunk for `key` (possibly retired since the partition was
    /// built).
    pub fn get(&self, key: &[u8]) -> Option<&Arc<T>> {
        self.chunks.get(self.position(key))
    }
}

/// The index, swapped atomically; lookups never lock.
#[derive(Debug)]
pub(crate) struct Index<T> {
    current: ArcSwap<Partition<T>>,
    /// Serializes index rebuilds (splits and merges replacing chunks).
    update: Mutex<()>,
}

impl<T: Ranged> Index<T> {
    pub fn new(chunks: Vec<Arc<T>>) -> Self {
        Index {
            current: ArcSwap::from_pointee(Partition::new(chunks)),
            update: Mutex::new(()),
        }
    }

    pub fn load(&self) -> Arc<Partition<T>> {
        self.current.load_full()
    }

    /// The live chunk holding `key`.
    pub fn find(&self, key: &[u8]) -> Option<Arc<T>> {
        let idx = self.current.load();
        idx.get(key).map(|c| resolve(c, key))
    }

    /// Runs `f` on the live chunk holding `key` without taking a reference
    /// to it while it is live (no reference-count traffic on a hot chunk's
    /// cache line): the loaded index keeps it alive meanwhile.
    pub fn with<R>(&self, key: &[u8], f: impl FnOnce(&Arc<T>) -> R) -> Option<R> {
        let idx = self.current.load();
        let c = idx.get(key)?;
        if !c.lineage().is_retired() {
            return Some(f(c));
        }
        Some(f(&resolve(c, key)))
    }

    /// Replaces `old` (adjacent chunks, in key order) by `new` in the index.
    pub fn replace(&self, old: &[Arc<T>], new: &[Arc<T>]) {
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
        self.current.store(Arc::new(Partition::new(chunks)));
    }
}
