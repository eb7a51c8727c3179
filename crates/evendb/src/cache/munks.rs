//! The munk cache: which chunks have munks, and which is the coldest.
//!
//! The policy is LFU with exponential decay, as in the paper: every access
//! to a chunk adds one to its `heat`; every so often all heats are halved
//! (see `DbInner::touch`), so heat measures recent popularity. A munk-less
//! chunk that becomes hot asks for a munk; it gets one if the memory budget
//! has room or a munk at most half as hot can be evicted for it.
//!
//! Invariants: `resident` (mutex) lists chunks that were given a munk and
//! not yet evicted or retired; it is changed only with a munk install,
//! eviction or split, and read only to pick victims, so it is never on the
//! path of a get, put or scan.

use crate::chunk::Chunk;
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[derive(Debug, Default)]
pub(crate) struct MunkCache {
    resident: Mutex<Vec<Arc<Chunk>>>,
}

impl MunkCache {
    pub fn add(&self, chunk: &Arc<Chunk>) {
        let mut r = self.resident.lock();
        if !r.iter().any(|c| Arc::ptr_eq(c, chunk)) {
            r.push(chunk.clone());
        }
    }

    pub fn remove(&self, chunk: &Chunk) {
        self.resident.lock().retain(|c| !std::ptr::eq(&**c, chunk));
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
