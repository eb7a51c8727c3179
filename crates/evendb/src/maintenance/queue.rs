//! The queue of chunk tasks the maintenance threads take from (it knows
//! nothing of the store: the store holds it, the threads run its tasks).

use crate::chunk::Chunk;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The queue of the maintenance threads.
#[derive(Debug, Default)]
pub(crate) struct Maintenance {
    queue: Mutex<VecDeque<(Arc<Chunk>, u8)>>,
    cv: Condvar,
    shutdown: AtomicBool,
}

impl Maintenance {
    pub fn push(&self, chunk: Arc<Chunk>, bits: u8) {
        self.queue.lock().push_back((chunk, bits));
        self.cv.notify_one();
    }

    /// True if a task is waiting.
    pub fn has_tasks(&self) -> bool {
        !self.queue.lock().is_empty()
    }

    /// Stops the threads after their current task.
    pub fn shut_down(&self) {
        let _q = self.queue.lock();
        self.shutdown.store(true, Ordering::Release);
        self.cv.notify_all();
    }

    /// The next task; `None` at shutdown, or after `idle` with nothing to do.
    pub(super) fn next(&self, idle: Duration) -> Option<Option<(Arc<Chunk>, u8)>> {
        let mut q = self.queue.lock();
        loop {
            if self.shutdown.load(Ordering::Acquire) {
                return None;
            }
            if let Some(t) = q.pop_front() {
                return Some(Some(t));
            }
            if self.cv.wait_for(&mut q, idle).timed_out() {
                return Some(None);
            }
        }
    }
}
