//! The queue of chunk tasks the maintenance threads take from (it knows
//! nothing of the store: the store holds it, the threads run its tasks).

use crate::chunk::Chunk;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The queue of the maintenance threads: tasks in the order they came,
/// after the urgent ones (chunks whose puts are being paced).
#[derive(Debug, Default)]
pub(crate) struct Maintenance {
    queue: Mutex<Queues>,
    cv: Condvar,
    shutdown: AtomicBool,
}

#[derive(Debug, Default)]
struct Queues {
    urgent: VecDeque<(Arc<Chunk>, u8)>,
    normal: VecDeque<(Arc<Chunk>, u8)>,
}

impl Maintenance {
    pub fn push(&self, chunk: Arc<Chunk>, bits: u8) {
        self.queue.lock().normal.push_back((chunk, bits));
        // Every thread: `notify_one` could wake only the urgent one, which
        // leaves this task where it is.
        self.cv.notify_all();
    }

    /// Queues a task ahead of every task [`Maintenance::push`] queued.
    pub fn push_urgent(&self, chunk: Arc<Chunk>, bits: u8) {
        self.queue.lock().urgent.push_back((chunk, bits));
        self.cv.notify_all();
    }

    /// True if a task is waiting.
    pub fn has_tasks(&self) -> bool {
        let q = self.queue.lock();
        !q.urgent.is_empty() || !q.normal.is_empty()
    }

    /// Stops the threads after their current task.
    pub fn shut_down(&self) {
        let _q = self.queue.lock();
        self.shutdown.store(true, Ordering::Release);
        self.cv.notify_all();
    }

    /// The next task (`urgent_only`: the next urgent one); `None` at
    /// shutdown, or after `idle` with nothing to do.
    pub(super) fn next(
        &self,
        idle: Duration,
        urgent_only: bool,
    ) -> Option<Option<(Arc<Chunk>, u8)>> {
        let mut q = self.queue.lock();
        loop {
            if self.shutdown.load(Ordering::Acquire) {
                return None;
            }
            if let Some(t) = q.urgent.pop_front() {
                return Some(Some(t));
            }
            if !urgent_only {
                if let Some(t) = q.normal.pop_front() {
                    return Some(Some(t));
                }
            }
            if self.cv.wait_for(&mut q, idle).timed_out() {
                return Some(None);
            }
        }
    }
}

/// How long the store must take no writes before idle chunks are compacted.
pub(crate) const IDLE_AFTER: Duration = Duration::from_millis(250);

/// When the store last took a write, as maintenance saw it (see
/// `idle.rs`; here so that the store can hold it without depending on
/// the maintenance code).
#[derive(Debug)]
pub(crate) struct IdleWatch {
    /// Writes counted at the last look, and when that count last changed.
    seen: Mutex<(u64, std::time::Instant)>,
    /// Held by the thread compacting idle chunks.
    pub(crate) busy: Mutex<()>,
}

impl Default for IdleWatch {
    fn default() -> Self {
        IdleWatch {
            seen: Mutex::new((0, std::time::Instant::now())),
            busy: Mutex::new(()),
        }
    }
}

impl IdleWatch {
    /// True if the store's write count `writes` has not changed for
    /// [`IDLE_AFTER`] (the first look at a new count starts the wait).
    pub(crate) fn quiet(&self, writes: u64, now: std::time::Instant) -> bool {
        let mut seen = self.seen.lock();
        if seen.0 != writes {
            *seen = (writes, now);
            return false;
        }
        now.duration_since(seen.1) >= IDLE_AFTER
    }
}
