//! The pending-operations array (PO): one slot per thread, through which a
//! put announces the key it is about to write and a scan announces the
//! range and version it reads, so that a scan waits only for the puts that
//! could belong to its snapshot.
//!
//! Invariants:
//! - A slot is written only by the thread that owns it (`owned` set), under
//!   the slot's own mutex; other threads only read it, under the same
//!   mutex. A thread takes a free slot on first use (`owned` CAS; AcqRel so
//!   the new owner sees the last owner's writes) and gives it back when it
//!   exits. `slots` only grows, under its write lock.
//! - `seq` grows by one when an operation starts and when it ends (under
//!   the slot's mutex), so a waiter that saw an odd `seq` knows the
//!   operation it waited for is over once `seq` changes, even if the slot
//!   already holds a new one (no ABA). Its Acquire load only decides when
//!   to look again; what the waiter then reads, it reads under the mutex.
//! - Handshake (a put announces, then reads GV; a scan increments GV, then
//!   reads the slots): it rests on the locks, not on the atomics. Take one
//!   slot. If the scan locks it before the put announces there, the put's
//!   lock comes after the scan's unlock, so the scan's increment happens
//!   before the put's read of GV, which therefore sees it: the put's version
//!   is above the scan's, out of its snapshot. If the put announced first,
//!   the scan's lock comes after, and it sees the announcement (and waits
//!   for it) or the slot cleared (the put is over, its write visible). A
//!   slot pushed after the scan copied `slots` was pushed under the write
//!   lock taken after the scan's read lock: the first case again.
//! - The `fence(SeqCst)` after announcing and before reading the slots is
//!   the paper's Dekker pair; with the slots read under their mutex it is
//!   not needed: the model checks in `loom_model` pass with both fences
//!   removed and every access to GV `Relaxed`. It costs one full fence per
//!   operation.

use crate::sync::{fence, spin_loop, yield_now, AtomicBool, AtomicU64, Mutex, Ordering, RwLock};
use std::sync::Arc;

/// What a slot announces.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Op {
    #[default]
    Idle,
    /// A put of `key`; `version` is `None` until it has read GV.
    Put { key: Vec<u8>, version: Option<u64> },
    /// A write batch or range delete: every key it writes lies in
    /// `lo..=hi` (`hi = None`: to the end of the key space).
    Batch {
        lo: Vec<u8>,
        hi: Option<Vec<u8>>,
        version: Option<u64>,
    },
    /// A scan of `[lo, hi)` (`hi = None`: unbounded); `version` is `None`
    /// until it has incremented GV.
    Scan {
        lo: Vec<u8>,
        hi: Option<Vec<u8>>,
        version: Option<u64>,
    },
}

#[derive(Debug, Default)]
pub(crate) struct Slot {
    op: Mutex<Op>,
    seq: AtomicU64,
    owned: AtomicBool,
}

impl Slot {
    fn snapshot(&self) -> (Op, u64) {
        let op = self.op.lock();
        (op.clone(), self.seq.load(Ordering::Acquire))
    }
}

/// The array of slots. Grows as threads arrive; never shrinks (a slot
/// freed by an exited thread is reused).
#[derive(Debug, Default)]
pub(crate) struct PendingOps {
    slots: RwLock<Vec<Arc<Slot>>>,
    id: u64,
}

/// Names each array for the per-thread leases; not part of any handshake,
/// so a plain `std` atomic even under the model checker.
static NEXT_ARRAY_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Returns a slot to its array when the owning thread exits.
struct SlotLease(Vec<(u64, Arc<Slot>)>);

impl Drop for SlotLease {
    fn drop(&mut self) {
        for (_, slot) in self.0.drain(..) {
            slot.owned.store(false, Ordering::Release);
        }
    }
}

#[cfg(not(loom))]
thread_local! {
    static LEASES: std::cell::RefCell<SlotLease> = const { std::cell::RefCell::new(SlotLease(Vec::new())) };
}

// The model checker runs its threads on one OS thread: they need its
// thread-locals (dropped, like real ones, when the model thread ends).
#[cfg(loom)]
loom::thread_local! {
    static LEASES: std::cell::RefCell<SlotLease> = std::cell::RefCell::new(SlotLease(Vec::new()));
}

/// An announced operation; clears its slot when dropped.
pub(crate) struct Announced {
    slot: Arc<Slot>,
}

impl Drop for Announced {
    fn drop(&mut self) {
        *self.slot.op.lock() = Op::Idle;
        self.slot.seq.fetch_add(1, Ordering::AcqRel);
    }
}

impl Announced {
    pub fn set_version(&self, version: u64) {
        let mut op = self.slot.op.lock();
        match &mut *op {
            Op::Put { version: v, .. }
            | Op::Batch { version: v, .. }
            | Op::Scan { version: v, .. } => *v = Some(version),
            Op::Idle => {}
        }
    }
}

impl PendingOps {
    pub fn new() -> Self {
        PendingOps {
            slots: RwLock::new(Vec::new()),
            id: NEXT_ARRAY_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// This thread's slot in this array.
    fn my_slot(&self) -> Arc<Slot> {
        LEASES.with(|l| {
            let mut leases = l.borrow_mut();
            if let Some((_, s)) = leases.0.iter().find(|(id, _)| *id == self.id) {
                return s.clone();
            }
            let slot = {
                let slots = self.slots.read();
                slots
                    .iter()
                    .find(|s| {
                        s.owned
                            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                            .is_ok()
                    })
                    .cloned()
            };
            let slot = slot.unwrap_or_else(|| {
                let s = Arc::new(Slot {
                    owned: AtomicBool::new(true),
                    ..Slot::default()
                });
                self.slots.write().push(s.clone());
                s
            });
            leases.0.push((self.id, slot.clone()));
            slot
        })
    }

    /// Announces `op` in this thread's slot, then fences (see the module
    /// invariants). Drop the result to clear the slot.
    pub fn announce(&self, op: Op) -> Announced {
        let slot = self.my_slot();
        {
            let mut cur = slot.op.lock();
            debug_assert_eq!(*cur, Op::Idle, "one announced operation per thread");
            *cur = op;
            slot.seq.fetch_add(1, Ordering::AcqRel);
        }
        fence(Ordering::SeqCst);
        Announced { slot }
    }

    /// Waits until every put of a key in `[lo, hi)` that may belong to the
    /// snapshot `version` has completed: puts with no version yet, or with
    /// a version at or below it.
    pub fn wait_for_puts(&self, lo: &[u8], hi: Option<&[u8]>, version: u64) {
        fence(Ordering::SeqCst);
        let slots: Vec<Arc<Slot>> = self.slots.read().clone();
        for slot in slots {
            let mut spins = 0u32;
            loop {
                let (op, seq) = slot.snapshot();
                let blocking = match &op {
                    Op::Put { key, version: v } => {
                        let in_range =
                            key.as_slice() >= lo && hi.is_none_or(|h| key.as_slice() < h);
                        in_range && v.is_none_or(|v| v <= version)
                    }
                    Op::Batch {
                        lo: b_lo,
                        hi: b_hi,
                        version: v,
                    } => {
                        let overlaps = b_hi.as_deref().is_none_or(|bh| bh >= lo)
                            && hi.is_none_or(|h| b_lo.as_slice() < h);
                        overlaps && v.is_none_or(|v| v <= version)
                    }
                    _ => false,
                };
                if !blocking {
                    break;
                }
                // Wait for this operation to end (seq moves on).
                while slot.seq.load(Ordering::Acquire) == seq {
                    backoff(&mut spins);
                }
            }
        }
    }

    /// The smallest version announced by a scan in progress, waiting for
    /// scans that announced themselves but have no version yet.
    /// True if a batch in progress may write `key`.
    pub fn batch_covers(&self, key: &[u8]) -> bool {
        self.slots.read().iter().any(|slot| {
            matches!(&*slot.op.lock(), Op::Batch { lo, hi, .. }
                if lo.as_slice() <= key && hi.as_deref().is_none_or(|h| key <= h))
        })
    }

    pub fn oldest_scan(&self) -> Option<u64> {
        let slots: Vec<Arc<Slot>> = self.slots.read().clone();
        let mut oldest: Option<u64> = None;
        for slot in slots {
            let mut spins = 0u32;
            loop {
                let (op, seq) = slot.snapshot();
                match op {
                    Op::Scan {
                        version: Some(v), ..
                    } => {
                        oldest = Some(oldest.map_or(v, |o| o.min(v)));
                        break;
                    }
                    Op::Scan { version: None, .. } => {
                        // About to get a version: wait for it.
                        while slot.seq.load(Ordering::Acquire) == seq
                            && matches!(&*slot.op.lock(), Op::Scan { version: None, .. })
                        {
                            backoff(&mut spins);
                        }
                    }
                    _ => break,
                }
            }
        }
        oldest
    }
}

fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        spin_loop();
    } else {
        yield_now();
    }
}
