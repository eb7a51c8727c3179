//! Munks taken out of their chunks (evicted, or replaced by a munk
//! rebalance or split), freed on a thread of their own.
//!
//! Freeing a munk takes time in proportion to its keys and versions: each
//! cell's chain and each version's link is an `ArcSwap`, whose drop pays
//! every thread's outstanding debts on it (a walk of every thread's debt
//! slots). A munk of 14 MiB took 33 ms to free, the largest ones up to
//! 98 ms, and a put that found the budget full and evicted one waited for
//! it (stream ingestion at 1 GiB: 144 such evictions, 2.3 s of freeing,
//! against 14 ms waiting for chunk locks and 5 ms writing log buffers), as
//! did a put that found its munk full and rebalanced it (the old munk's
//! cells, though their keys and versions live on in the new one). So a
//! munk taken out gives its charge back to the budget at once and leaves
//! the freeing to the reclaim thread.
//!
//! Invariants:
//! - What waits to be freed is bounded: at most
//!   [`GRAVEYARD_SHARE`]`⁻¹` of the budget. An eviction that would pass it
//!   frees the munk itself, as before. Those bytes are outside the budget
//!   while they wait (`Stats::memory_other` counts them).
//! - At close the thread frees what is left before it exits.

use crate::db::DbInner;
use crate::munk::Munk;
use crate::stats::{self, Counters};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The budget over this is the most evicted munks may hold while they wait
/// to be freed.
pub(crate) const GRAVEYARD_SHARE: u64 = 8;

/// Frees a munk taken out of its chunk (evicted, or replaced by a
/// rebalance or a split) on the reclaim thread, its charge given back to
/// the budget now, if what waits there leaves room for it; here
/// otherwise. A munk readers still hold is left to them: the last one
/// frees it and gives its charge back then, as before.
pub(crate) fn free_later(inner: &DbInner, munk: Arc<Munk>) {
    let bytes = munk.bytes();
    let limit = inner.budget.limit() / GRAVEYARD_SHARE;
    // Out of its chunk, nobody can take a new reference to the munk: a
    // count of one stays one. (A munk whose deferred records were written
    // at its eviction gave its charge back then: it no longer tells its
    // size, so it is freed here.)
    if Arc::strong_count(&munk) > 1 || bytes == 0 || bytes > limit {
        return;
    }
    munk.give_back();
    drop(inner.graveyard.bury(munk, bytes, limit));
}

/// Munks waiting for the reclaim thread.
#[derive(Debug, Default)]
pub(crate) struct Graveyard {
    munks: Mutex<Vec<(Arc<Munk>, u64)>>,
    cv: Condvar,
    /// Bytes the waiting munks were charged before they gave them back.
    pending: AtomicU64,
    /// Set when a reclaim thread runs: without one, nothing is buried.
    running: AtomicBool,
    shutdown: AtomicBool,
}

impl Graveyard {
    /// Takes `munk`, whose charge of `bytes` it gave back, to be freed by
    /// the reclaim thread, if that keeps what waits within `limit` bytes;
    /// hands it back otherwise (the caller frees it).
    pub fn bury(&self, munk: Arc<Munk>, bytes: u64, limit: u64) -> Option<Arc<Munk>> {
        if !self.running.load(Ordering::Acquire) || self.shutdown.load(Ordering::Acquire) {
            return Some(munk);
        }
        let fits = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                (p + bytes <= limit).then_some(p + bytes)
            })
            .is_ok();
        if !fits {
            return Some(munk);
        }
        self.munks.lock().push((munk, bytes));
        self.cv.notify_one();
        None
    }

    /// Bytes of evicted munks waiting to be freed.
    pub fn pending(&self) -> u64 {
        self.pending.load(Ordering::Acquire)
    }

    /// The reclaim thread's loop: frees what is buried until shutdown, then
    /// what is left, counting each munk in `counters`.
    pub fn run(&self, counters: &Counters) {
        self.running.store(true, Ordering::Release);
        loop {
            let batch = {
                let mut m = self.munks.lock();
                while m.is_empty() && !self.shutdown.load(Ordering::Acquire) {
                    self.cv.wait(&mut m);
                }
                if m.is_empty() {
                    return;
                }
                std::mem::take(&mut *m)
            };
            let n = batch.len() as u64;
            for (munk, bytes) in batch {
                drop(munk);
                self.pending.fetch_sub(bytes, Ordering::AcqRel);
            }
            stats::add(&counters.local().munk_evictions_reclaimed, n);
        }
    }

    /// Stops the reclaim thread once it has freed what is buried; later
    /// evictions free their munks themselves.
    pub fn shut_down(&self) {
        let _m = self.munks.lock();
        self.shutdown.store(true, Ordering::Release);
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::budget::MemoryBudget;
    use crate::munk::Charge;

    fn munk(budget: &Arc<MemoryBudget>) -> Arc<Munk> {
        Arc::new(Munk::build(Vec::new(), 4, budget, Charge::ArrayOnly))
    }

    #[test]
    fn buried_munks_are_freed_by_the_thread_within_the_limit() {
        let budget = Arc::new(MemoryBudget::new(1 << 20));
        let yard = Arc::new(Graveyard::default());
        // No thread yet: the caller frees.
        assert!(yard.bury(munk(&budget), 10, 100).is_some());
        let thread = {
            let yard = yard.clone();
            std::thread::spawn(move || yard.run(&Counters::default()))
        };
        while !yard.running.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        // Past the limit on its own: handed back.
        assert!(yard.bury(munk(&budget), 101, 100).is_some());
        let kept = munk(&budget);
        let weak = Arc::downgrade(&kept);
        assert!(yard.bury(kept, 100, 100).is_none());
        yard.shut_down();
        thread.join().expect("reclaim thread");
        // Freed before the thread exited, and its bytes no longer pending.
        assert!(weak.upgrade().is_none());
        assert_eq!(yard.pending(), 0);
        // After shutdown the caller frees again.
        assert!(yard.bury(munk(&budget), 1, 100).is_some());
    }
}
