//! The global version (GV) and the registry of active snapshots.
//!
//! A version is 64 bits: the top [`EPOCH_BITS`] hold the epoch (bumped at
//! every open, so versions written after a restart are larger than any
//! written before it), the rest count snapshots taken within the epoch. Puts
//! read GV without incrementing it; snapshots and scans fetch-and-increment
//! it and read only versions at or below the value they got.
//!
//! Invariants:
//! - `gv` only grows. A put announces its key in the pending-operations
//!   array (`pending`), then reads `gv`, then writes; a snapshot announces
//!   its range, increments `gv`, and waits for the announced puts in its
//!   range that may fall at or below its version (see `pending`). So when a
//!   snapshot reads, every put with a version `<= s` in its range has
//!   completed, and every later put has a version `> s`. That ordering
//!   comes from the slots' locks (see `pending`); the `SeqCst` on `gv` is
//!   more than it needs. Checked by the model in `loom_model`.
//! - A snapshot registers its version in `snapshots` before it clears its
//!   announcement, and [`Versions::oldest_needed`] reads `gv`, then the
//!   announced scans, then the registry, so a rebuild never misses a
//!   snapshot being taken (also checked in `loom_model`). The registry is
//!   read under its mutex, the scans under their slots' locks.
//! - `watermark` is a lower bound of every version a reader may still
//!   need: each value stored is [`Versions::oldest_needed`] at some moment,
//!   and no reader that appears later reads below it (new snapshots read at
//!   GV or above), so the largest value computed so far stays valid
//!   (`fetch_max`). Puts use it to drop versions in place.

mod pending;

use crate::sync::{AtomicU64, Mutex, Ordering};
use pending::{Announced, Op, PendingOps};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

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
    pending: PendingOps,
    /// Active snapshot versions with their reference counts and when the
    /// first of them was taken.
    snapshots: Mutex<BTreeMap<u64, (usize, Instant)>>,
    watermark: AtomicU64,
    /// Write batches in progress (gets look for them only when nonzero).
    batches: AtomicU64,
}

/// What [`Versions::snapshot_ages`] reports.
#[derive(Debug, Default)]
pub(crate) struct HeldSnapshots {
    pub active: usize,
    pub long_lived: usize,
    /// The oldest snapshot's age and its lag behind the global version.
    pub oldest: Option<(Duration, u64)>,
}

/// Held by a write batch from announcing its key range until all its
/// entries are visible.
pub(crate) struct BatchTicket<'a> {
    pub version: u64,
    announced: Option<Announced>,
    batches: &'a AtomicU64,
}

impl Drop for BatchTicket<'_> {
    fn drop(&mut self) {
        drop(self.announced.take());
        self.batches.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Held by a put from announcing its key until its entry is visible.
pub(crate) struct PutTicket {
    pub version: u64,
    _announced: Announced,
}

impl Versions {
    pub fn new(epoch: u64) -> Self {
        Versions {
            gv: AtomicU64::new(first_version(epoch)),
            pending: PendingOps::new(),
            snapshots: Mutex::new(BTreeMap::new()),
            watermark: AtomicU64::new(first_version(epoch)),
            batches: AtomicU64::new(0),
        }
    }

    /// A lower bound of the versions readers may still need (cheap).
    pub fn watermark(&self) -> u64 {
        self.watermark.load(Ordering::Acquire)
    }

    /// Recomputes the watermark; returns the exact oldest needed version.
    pub fn refresh_watermark(&self) -> u64 {
        let w = self.oldest_needed();
        self.watermark.fetch_max(w, Ordering::AcqRel);
        w
    }

    /// Starts a put of `key`: announces it, reads the version it writes
    /// with. The announcement lasts until the ticket is dropped.
    pub fn begin_put(&self, key: &[u8]) -> PutTicket {
        self.put_ticket(key, false)
    }

    /// Starts a put of `key` whose version no other write or snapshot has
    /// (GV moves by two, as for a batch): a `Sync` put through the commit
    /// journal, which an open may replay in any order, needs one.
    pub fn begin_unique_put(&self, key: &[u8]) -> PutTicket {
        self.put_ticket(key, true)
    }

    fn put_ticket(&self, key: &[u8], unique: bool) -> PutTicket {
        let announced = self.pending.announce(Op::Put {
            key: key.to_vec(),
            version: None,
        });
        let version = if unique {
            self.gv.fetch_add(2, Ordering::SeqCst) + 1
        } else {
            self.gv.load(Ordering::SeqCst)
        };
        announced.set_version(version);
        PutTicket {
            version,
            _announced: announced,
        }
    }

    /// Starts a write batch (or range delete) whose keys lie in `lo..=hi`
    /// (`None`: unbounded): announces the
    /// range, then takes a version no other write or snapshot has. GV
    /// moves by two, so puts that read it before share the old value, puts
    /// after read the new one, and the value between is the batch's alone
    /// (recovery can hide one batch by its version).
    pub fn begin_batch(&self, lo: &[u8], hi: Option<&[u8]>) -> BatchTicket<'_> {
        self.batches.fetch_add(1, Ordering::SeqCst);
        let announced = self.pending.announce(Op::Batch {
            lo: lo.to_vec(),
            hi: hi.map(<[u8]>::to_vec),
            version: None,
        });
        let version = self.gv.fetch_add(2, Ordering::SeqCst) + 1;
        announced.set_version(version);
        BatchTicket {
            version,
            announced: Some(announced),
            batches: &self.batches,
        }
    }

    /// True if a write batch in progress may write `key`: a get of it then
    /// reads from a snapshot, which waits for the batch.
    pub fn batch_may_write(&self, key: &[u8]) -> bool {
        self.batches.load(Ordering::SeqCst) > 0 && self.pending.batch_covers(key)
    }

    /// Takes and registers a snapshot version for reads of `[lo, hi)`;
    /// release it with [`Versions::release`].
    pub fn acquire_snapshot(&self, lo: &[u8], hi: Option<&[u8]>) -> u64 {
        let announced = self.pending.announce(Op::Scan {
            lo: lo.to_vec(),
            hi: hi.map(<[u8]>::to_vec),
            version: None,
        });
        let v = self.gv.fetch_add(1, Ordering::SeqCst);
        announced.set_version(v);
        self.pending.wait_for_puts(lo, hi, v);
        self.snapshots
            .lock()
            .entry(v)
            .or_insert_with(|| (0, Instant::now()))
            .0 += 1;
        drop(announced);
        v
    }

    pub fn release(&self, version: u64) {
        let mut snaps = self.snapshots.lock();
        if let Some((n, _)) = snaps.get_mut(&version) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&version);
            }
        }
        drop(snaps);
        self.refresh_watermark();
    }

    /// The oldest version any reader may still need: a rebuild keeps, for
    /// each key, the newest entry at or below it and every newer entry.
    pub fn oldest_needed(&self) -> u64 {
        let gv = self.gv.load(Ordering::SeqCst);
        let scanning = self.pending.oldest_scan().unwrap_or(gv);
        let registered = self.snapshots.lock().keys().next().copied().unwrap_or(gv);
        gv.min(scanning).min(registered)
    }

    /// The snapshots users hold (`internal`, the checkpoint's, left out):
    /// how many, how many for longer than `long`, and the oldest one's age
    /// and how many versions it lags the global version.
    pub fn snapshot_ages(&self, long: Duration, internal: Option<u64>) -> HeldSnapshots {
        let snaps = self.snapshots.lock();
        let gv = self.gv.load(Ordering::SeqCst);
        let mut held = HeldSnapshots::default();
        for (&v, &(n, t)) in snaps.iter() {
            let n = if Some(v) == internal { n - 1 } else { n };
            if n == 0 {
                continue;
            }
            let age = t.elapsed();
            held.active += n;
            if age >= long {
                held.long_lived += n;
            }
            if held.oldest.is_none() {
                held.oldest = Some((age, gv.saturating_sub(v)));
            }
        }
        held
    }

    #[cfg(all(test, not(loom)))]
    pub fn current(&self) -> u64 {
        self.gv.load(Ordering::Acquire)
    }
}

#[cfg(all(test, loom))]
mod loom_model;

#[cfg(all(test, not(loom)))]
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
        let put = v.begin_put(b"k").version;
        let snap = v.acquire_snapshot(b"", None);
        let later = v.begin_put(b"k").version;
        assert!(put <= snap && later > snap);
        assert_eq!(v.oldest_needed(), snap);
        v.release(snap);
        assert_eq!(v.oldest_needed(), v.current());
    }
}
