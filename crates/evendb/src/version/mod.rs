//! The global version (GV) and the registry of active snapshots.
//!
//! A version is 64 bits: the top [`EPOCH_BITS`] hold the epoch (bumped at
//! every open, so versions written after a restart are larger than any
//! written before it), the rest count snapshots taken within the epoch. Puts
//! read GV without incrementing it; snapshots and scans fetch-and-increment
//! it and read only versions at or below the value they got.
//!
//! Invariants:
//! - `gv` only grows. A put holds `gate` shared from reading `gv` until its
//!   entry is in the chunk; a snapshot holds `gate` exclusively while it
//!   increments `gv`. So when a snapshot gets version `s`, every put that read
//!   a version `<= s` has completed, and every later put reads `> s`.
//! - A snapshot's version is registered in `snapshots` inside the same
//!   critical section (registry mutex held) as the increment, and
//!   [`Versions::oldest_needed`] reads `gv` under that mutex, so a rebuild
//!   never misses a snapshot that is being taken.

use parking_lot::{Mutex, RwLock, RwLockReadGuard};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bits of a version that hold the epoch.
pub(crate) const EPOCH_BITS: u32 = 24;
/// Shift of the epoch within a version.
pub(crate) const EPOCH_SHIFT: u32 = 64 - EPOCH_BITS;

/// The first version of `epoch`.
pub(crate) fn first_version(epoch: u64) -> u64 {
    epoch << EPOCH_SHIFT
}

/// The epoch a version belongs to.
#[allow(dead_code)]
pub(crate) fn epoch_of(version: u64) -> u64 {
    version >> EPOCH_SHIFT
}

#[derive(Debug)]
pub(crate) struct Versions {
    gv: AtomicU64,
    gate: RwLock<()>,
    /// Active snapshot versions with their reference counts.
    snapshots: Mutex<BTreeMap<u64, usize>>,
}

/// Held by a put from reading GV until its entry is visible.
pub(crate) struct PutTicket<'a> {
    pub version: u64,
    _gate: RwLockReadGuard<'a, ()>,
}

impl Versions {
    pub fn new(epoch: u64) -> Self {
        Versions {
            gv: AtomicU64::new(first_version(epoch)),
            gate: RwLock::new(()),
            snapshots: Mutex::new(BTreeMap::new()),
        }
    }

    /// Starts a put: the version it writes with, and the gate held until the
    /// ticket is dropped.
    pub fn begin_put(&self) -> PutTicket<'_> {
        let gate = self.gate.read();
        PutTicket {
            version: self.gv.load(Ordering::Acquire),
            _gate: gate,
        }
    }

    /// Blocks new puts and waits for those in flight, until the guard drops.
    pub fn pause_puts(&self) -> parking_lot::RwLockWriteGuard<'_, ()> {
        self.gate.write()
    }

    /// Takes and registers a snapshot version; release it with
    /// [`Versions::release`].
    pub fn acquire_snapshot(&self) -> u64 {
        let _gate = self.gate.write();
        let mut snaps = self.snapshots.lock();
        let v = self.gv.fetch_add(1, Ordering::AcqRel);
        *snaps.entry(v).or_insert(0) += 1;
        v
    }

    pub fn release(&self, version: u64) {
        let mut snaps = self.snapshots.lock();
        if let Some(n) = snaps.get_mut(&version) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&version);
            }
        }
    }

    /// The oldest version any reader may still need: a rebuild keeps, for
    /// each key, the newest entry at or below it and every newer entry.
    pub fn oldest_needed(&self) -> u64 {
        let snaps = self.snapshots.lock();
        let gv = self.gv.load(Ordering::Acquire);
        snaps.keys().next().map_or(gv, |&s| s.min(gv))
    }

    pub fn active_snapshots(&self) -> usize {
        self.snapshots.lock().values().sum()
    }

    #[cfg(test)]
    pub fn current(&self) -> u64 {
        self.gv.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_of_a_later_epoch_are_larger() {
        assert!(first_version(2) > first_version(1) + 1_000_000_000);
        assert_eq!(epoch_of(first_version(7) + 5), 7);
    }

    #[test]
    fn snapshot_sees_puts_that_read_gv_before_it() {
        let v = Versions::new(1);
        let put = v.begin_put().version;
        let snap = v.acquire_snapshot();
        let later = v.begin_put().version;
        assert!(put <= snap && later > snap);
        assert_eq!(v.oldest_needed(), snap);
        v.release(snap);
        assert_eq!(v.oldest_needed(), v.current());
    }
}
