//! The munk cache: which chunks have munks, and which is the coldest.
//!
//! The policy is LFU with exponential decay, as in the paper: every access
//! to a chunk adds one to its `heat`; every so often all heats are halved
//! (see `DbInner::touch`), so heat measures recent popularity. A munk-less
//! chunk that becomes hot asks for a munk; it gets one if the memory budget
//! has room or munks at most a quarter as hot can be evicted for it.
//!
//! A chunk's log may grow far past the munk-less limit while it has a munk
//! (its munk serves the reads). When the munk is evicted, the cache notes
//! how much of the active segment was written then: that part is the
//! munk's, not new munk-less data, and a funk rebalance of the chunk waits
//! until the munk-less puts alone fill a log (see `maintenance::rebuild`).
//! An evicted chunk is cold; rewriting its table because of one put would
//! turn a read-mostly phase into a write-heavy one.
//!
//! Invariants: `resident` (mutex) lists chunks that were given a munk and
//! not yet evicted or retired; it is changed only with a munk install,
//! eviction or split, and read only to pick victims, so it is never on the
//! path of a get, put or scan. `munk_logs` (mutex) maps a chunk id to the
//! active segment it had when its munk was evicted and that segment's
//! length then; an entry is dropped when the chunk gets a munk again, and
//! entries of chunks that are gone are pruned as the map grows. It is read
//! only by funk rebalances.

use crate::chunk::Chunk;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

#[derive(Debug, Default)]
pub(crate) struct MunkCache {
    resident: Mutex<Vec<Arc<Chunk>>>,
    munk_logs: Mutex<HashMap<u64, MunkLog>>,
}

/// The part of a chunk's active segment written while it had a munk.
#[derive(Debug)]
struct MunkLog {
    chunk: Weak<Chunk>,
    segment: u64,
    bytes: u64,
}

impl MunkCache {
    pub fn add(&self, chunk: &Arc<Chunk>) {
        self.munk_logs.lock().remove(&chunk.id);
        let mut r = self.resident.lock();
        if !r.iter().any(|c| Arc::ptr_eq(c, chunk)) {
            r.push(chunk.clone());
        }
    }

    /// Notes, as `chunk` loses its munk, that the first `bytes` of its
    /// active segment `segment` were written while it had one.
    pub fn note_munk_log(&self, chunk: &Arc<Chunk>, segment: u64, bytes: u64) {
        let mut m = self.munk_logs.lock();
        m.insert(
            chunk.id,
            MunkLog {
                chunk: Arc::downgrade(chunk),
                segment,
                bytes,
            },
        );
        if m.len().is_power_of_two() && m.len() >= 64 {
            m.retain(|_, e| e.chunk.upgrade().is_some_and(|c| !c.is_retired()));
        }
    }

    /// Bytes of the chunk's active segment `segment` written while it had a
    /// munk (0 if it never lost one since that segment became active).
    pub fn munk_log(&self, chunk: &Chunk, segment: u64) -> u64 {
        self.munk_logs
            .lock()
            .get(&chunk.id)
            .filter(|e| e.segment == segment)
            .map_or(0, |e| e.bytes)
    }

    pub fn remove(&self, chunk: &Chunk) {
        self.resident.lock().retain(|c| !std::ptr::eq(&**c, chunk));
    }

    /// The coldest resident chunks, other than `for_chunk`, each less than
    /// a quarter as hot as `heat`, whose munks together hold at least `bytes`;
    /// `None` if there are not enough of them: evicting some munks for a
    /// load that still cannot happen would only churn the cache.
    pub fn victims(
        &self,
        for_chunk: &Arc<Chunk>,
        heat: u32,
        bytes: u64,
    ) -> Option<Vec<Arc<Chunk>>> {
        let mut r = self.resident.lock();
        r.retain(|c| !c.is_retired() && c.has_munk());
        let mut candidates: Vec<(u32, &Arc<Chunk>)> = r
            .iter()
            .filter(|c| !Arc::ptr_eq(c, for_chunk))
            .map(|c| (c.heat.load(Ordering::Relaxed), c))
            .filter(|&(h, _)| h.saturating_mul(4) < heat)
            .collect();
        candidates.sort_by_key(|&(h, _)| h);
        let mut freed = 0u64;
        let mut out = Vec::new();
        for (_, c) in candidates {
            if freed >= bytes {
                break;
            }
            freed += c.munk().map_or(0, |m| m.bytes());
            out.push(c.clone());
        }
        (freed >= bytes).then_some(out)
    }

    /// The resident chunk with the least heat, other than `except`.
    pub fn coldest(&self, except: Option<&Arc<Chunk>>) -> Option<Arc<Chunk>> {
        let mut r = self.resident.lock();
        r.retain(|c| !c.is_retired() && c.has_munk());
        r.iter()
            .filter(|c| except.is_none_or(|e| !Arc::ptr_eq(c, e)))
            .min_by_key(|c| c.heat.load(Ordering::Relaxed))
            .cloned()
    }
}
