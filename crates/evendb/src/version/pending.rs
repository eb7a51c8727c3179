//! The pending-operations array (PO): one slot per thread, through which a
//! put announces the key it is about to write and a scan announces the
//! range and version it reads, so that a scan waits only for the puts that
//! could belong to its snapshot.
//!
//! Invariants:
//! - A slot is written only by the thread that owns it (`owned` set), under
//!   the slot's own mutex; other threads only read it. A thread takes a
//!   free slot on first use and gives it back when it exits.
//! - `seq` grows by one when an operation starts and when it ends, so a
//!   waiter that saw an odd `seq` knows the operation it waited for is over
//!   once `seq` changes, even if the slot already holds a new one (no ABA).
//! - Dekker handshake: a put writes its slot, then `fence(SeqCst)`, then
//!   loads GV; a scan fetch-and-increments GV (SeqCst), then
//!   `fence(SeqCst)`, then reads the slots. So either the put's load sees
//!   the increment (its version is above the scan's and it is not in the
//!   snapshot), or the scan sees the put's slot and waits for it.

use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// What a slot announces.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Op {
    #[default]
    Idle,
    /// A put of `key`; `version` is `None` until it has read GV.
    Put { key: Vec<u8>, version: Option<u64> },
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

static NEXT_ARRAY_ID: AtomicU64 = AtomicU64::new(1);

/// Returns a slot to its array when the owning thread exits.
struct SlotLease(Vec<(u64, Arc<Slot>)>);

impl Drop for SlotLease {
    fn drop(&mut self) {
        for (_, slot) in self.0.drain(..) {
            slot.owned.store(false, Ordering::Release);
        }
    }
}

thread_local! {
    static LEASES: std::cell::RefCell<SlotLease> = const { std::cell::RefCell::new(SlotLease(Vec::new())) };
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
            Op::Put { version: v, .. } | Op::Scan { version: v, .. } => *v = Some(version),
            Op::Idle => {}
        }
    }
}

impl PendingOps {
    pub fn new() -> Self {
        PendingOps {
            slots: RwLock::new(Vec::new()),
            id: NEXT_ARRAY_ID.fetch_add(1, Ordering::Relaxed),
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
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}
