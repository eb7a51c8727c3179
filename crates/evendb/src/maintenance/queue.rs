//! The queue of chunk tasks the maintenance threads take from (it knows
//! nothing of the store: the store holds it, the threads run its tasks).

use crate::chunk::Chunk;
use crate::munk::Munk;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The queue of the maintenance threads: tasks in the order they came,
/// after the urgent ones (chunks whose puts are being paced) and the
/// munk rebalances.
#[derive(Debug, Default)]
pub(crate) struct Maintenance {
    queue: Mutex<Queues>,
    cv: Condvar,
    shutdown: AtomicBool,
    /// The memory keeper's wake-up (see `room::memory_keeper`): set by a
    /// put that found the budget's margin used, cleared by the keeper
    /// when it looks; the mutex only pairs with `keeper_cv`.
    keeper_asked: AtomicBool,
    keeper_lock: Mutex<()>,
    keeper_cv: Condvar,
    /// Munks taken out of service, for the memory keeper to free (see
    /// [`Maintenance::retire_munk`]).
    retired: Mutex<Vec<Arc<Munk>>>,
    /// True while a memory keeper runs to free them.
    keeper_runs: AtomicBool,
}

#[derive(Debug, Default)]
struct Queues {
    urgent: VecDeque<(Arc<Chunk>, u8)>,
    /// Munk rebalances: in-memory work of a few milliseconds that, left
    /// behind a write phase's queue of rebuilds, lets a munk's cells run
    /// out so that its puts rebalance it themselves.
    munk: VecDeque<(Arc<Chunk>, u8)>,
    normal: VecDeque<(Arc<Chunk>, u8)>,
}

impl Maintenance {
    /// Queues a task: a munk rebalance ahead of the other tasks, any other
    /// behind them.
    pub fn push(&self, chunk: Arc<Chunk>, bits: u8) {
        let mut q = self.queue.lock();
        if bits == crate::chunk::task::MUNK_REBALANCE {
            q.munk.push_back((chunk, bits));
        } else {
            q.normal.push_back((chunk, bits));
        }
        drop(q);
        // Every thread: `notify_one` could wake only the urgent one, which
        // leaves this task where it is.
        self.cv.notify_all();
    }

    /// Queues a task ahead of every task [`Maintenance::push`] queued.
    pub fn push_urgent(&self, chunk: Arc<Chunk>, bits: u8) {
        self.queue.lock().urgent.push_back((chunk, bits));
        self.cv.notify_all();
    }

    /// Moves `chunk`'s queued tasks ahead of the other tasks
    /// [`Maintenance::push`] queued (behind the urgent ones and the munk
    /// rebalances): a scan found its funk waiting for a rebuild.
    pub fn bump(&self, chunk: &Arc<Chunk>) {
        let mut q = self.queue.lock();
        let mine = |t: &(Arc<Chunk>, u8)| Arc::ptr_eq(&t.0, chunk);
        if q.normal.front().is_some_and(mine) {
            return;
        }
        let mut moved = Vec::new();
        q.normal.retain(|t| {
            if mine(t) {
                moved.push(t.clone());
                false
            } else {
                true
            }
        });
        for t in moved.into_iter().rev() {
            q.normal.push_front(t);
        }
    }

    /// True if a task is waiting.
    pub fn has_tasks(&self) -> bool {
        let q = self.queue.lock();
        !q.urgent.is_empty() || !q.munk.is_empty() || !q.normal.is_empty()
    }

    /// Stops the threads after their current task.
    pub fn shut_down(&self) {
        let _q = self.queue.lock();
        self.shutdown.store(true, Ordering::Release);
        self.cv.notify_all();
        let _k = self.keeper_lock.lock();
        self.keeper_cv.notify_all();
    }

    /// Wakes the memory keeper, unless it was asked already and has not
    /// looked since (so a put in the margin takes no lock).
    pub fn wake_keeper(&self) {
        if !self.keeper_asked.swap(true, Ordering::AcqRel) {
            let _k = self.keeper_lock.lock();
            self.keeper_cv.notify_one();
        }
    }

    /// Hands a munk taken out of service (replaced by a rebuild or a
    /// split, or evicted) to the memory keeper to free, if one runs; else
    /// it is freed here. Freeing a munk (every key, value and version node
    /// is an allocation of its own, every `ArcSwap` pays its debts when
    /// dropped) took 5-21 ms, which a put that rebalanced or evicted a
    /// munk, or a maintenance thread others' puts wait for, spent there.
    /// Readers still holding the munk free it when they let go instead.
    pub fn retire_munk(&self, munk: Arc<Munk>) {
        if self.keeper_runs.load(Ordering::Acquire) && !self.shutdown.load(Ordering::Acquire) {
            self.retired.lock().push(munk);
            self.wake_keeper();
        }
    }

    /// Notes whether a memory keeper runs to free retired munks.
    pub(crate) fn set_keeper_runs(&self, runs: bool) {
        self.keeper_runs.store(runs, Ordering::Release);
    }

    /// The munks retired since the last call, for the keeper to free.
    pub(super) fn take_retired(&self) -> Vec<Arc<Munk>> {
        std::mem::take(&mut *self.retired.lock())
    }

    /// The memory keeper's wait: until woken or `every` passed; false at
    /// shutdown.
    pub(super) fn keeper_wait(&self, every: Duration) -> bool {
        let mut k = self.keeper_lock.lock();
        if !self.shutdown.load(Ordering::Acquire) && !self.keeper_asked.load(Ordering::Acquire) {
            self.keeper_cv.wait_for(&mut k, every);
        }
        self.keeper_asked.store(false, Ordering::Release);
        !self.shutdown.load(Ordering::Acquire)
    }

    /// The next task (`urgent_only`: the next urgent one); `None` at
    /// shutdown, or after `idle` with nothing to do (however many tasks
    /// it was woken for and left).
    pub(super) fn next(
        &self,
        idle: Duration,
        urgent_only: bool,
    ) -> Option<Option<(Arc<Chunk>, u8)>> {
        let deadline = std::time::Instant::now() + idle;
        let mut q = self.queue.lock();
        loop {
            if self.shutdown.load(Ordering::Acquire) {
                return None;
            }
            if let Some(t) = q.urgent.pop_front() {
                return Some(Some(t));
            }
            if !urgent_only {
                if let Some(t) = q.munk.pop_front().or_else(|| q.normal.pop_front()) {
                    return Some(Some(t));
                }
            }
            if self.cv.wait_until(&mut q, deadline).timed_out() {
                return Some(None);
            }
        }
    }
}

/// How often the urgent thread looks again at the mix of the store's
/// operations (see [`OperationMix`]).
pub(crate) const MIX_WINDOW: Duration = Duration::from_millis(100);

/// Reads per write at or above which the store counts as serving mostly
/// reads (see [`OperationMix`]).
const READS_PER_WRITE: u64 = 4;

/// What the store's foreground did over the last window, as the urgent
/// maintenance thread sees it: whether it serves mostly reads (gets and
/// scans at least [`READS_PER_WRITE`] times its writes, or nothing at
/// all). Then the urgent thread takes queued tasks too, so a backlog a
/// write phase left drains on both cores while the reads that follow pay
/// for it; while writes dominate it does not, as it would take the
/// device and a core from the puts that queue the work.
#[derive(Debug)]
pub(crate) struct OperationMix {
    /// Writes and reads counted at the window's start, and when it began.
    start: Mutex<(u64, u64, std::time::Instant)>,
    reads_mostly: AtomicBool,
}

impl Default for OperationMix {
    fn default() -> Self {
        OperationMix {
            start: Mutex::new((0, 0, std::time::Instant::now())),
            reads_mostly: AtomicBool::new(false),
        }
    }
}

impl OperationMix {
    /// Closes the window if it is [`MIX_WINDOW`] old, given the store's
    /// write and read counts now, and returns whether the last closed
    /// window served mostly reads.
    pub(crate) fn reads_mostly(&self, writes: u64, reads: u64, now: std::time::Instant) -> bool {
        let mut start = self.start.lock();
        if now.duration_since(start.2) >= MIX_WINDOW {
            let (w, r) = (
                writes.saturating_sub(start.0),
                reads.saturating_sub(start.1),
            );
            self.reads_mostly
                .store(w.saturating_mul(READS_PER_WRITE) <= r, Ordering::Relaxed);
            *start = (writes, reads, now);
        }
        self.reads_mostly.load(Ordering::Relaxed)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::task;
    use std::time::Instant;

    #[test]
    fn munk_rebalances_go_ahead_of_other_tasks_and_behind_urgent_ones() {
        let q = Maintenance::default();
        let chunk = |id| Arc::new(Chunk::new(id, Vec::new(), None, Default::default()));
        q.push(chunk(1), task::FUNK_REBALANCE);
        q.push(chunk(2), task::MUNK_REBALANCE);
        q.push(chunk(3), task::MUNK_LOAD);
        q.push(chunk(4), task::MUNK_REBALANCE);
        q.push_urgent(chunk(5), task::FUNK_REBALANCE | task::URGENT);
        let mut order = Vec::new();
        while let Some(Some((c, _))) = q.next(Duration::ZERO, false) {
            order.push(c.id);
        }
        assert_eq!(order, [5, 2, 4, 1, 3]);
        // The urgent thread takes urgent tasks only.
        q.push(chunk(6), task::MUNK_REBALANCE);
        assert!(matches!(q.next(Duration::ZERO, true), Some(None)));
        assert!(q.has_tasks());
    }

    #[test]
    fn a_bumped_chunk_goes_ahead_of_other_tasks_and_behind_munk_rebalances() {
        let q = Maintenance::default();
        let chunks: Vec<Arc<Chunk>> = (0..5)
            .map(|id| Arc::new(Chunk::new(id, Vec::new(), None, Default::default())))
            .collect();
        q.push(chunks[1].clone(), task::FUNK_REBALANCE);
        q.push(chunks[2].clone(), task::FUNK_REBALANCE);
        q.push(chunks[3].clone(), task::FUNK_REBALANCE);
        q.push(chunks[3].clone(), task::COMPACT_LOG);
        q.push(chunks[4].clone(), task::MUNK_REBALANCE);
        q.bump(&chunks[3]);
        q.bump(&chunks[0]); // Not queued: nothing moves.
        q.bump(&chunks[3]); // Already first.
        let mut order = Vec::new();
        while let Some(Some((c, bits))) = q.next(Duration::ZERO, false) {
            order.push((c.id, bits));
        }
        let (f, c, m) = (
            task::FUNK_REBALANCE,
            task::COMPACT_LOG,
            task::MUNK_REBALANCE,
        );
        assert_eq!(order, [(4, m), (3, f), (3, c), (1, f), (2, f)]);
    }

    #[test]
    fn the_keeper_wakes_when_asked_and_stops_at_shutdown() {
        let q = Maintenance::default();
        let long = Duration::from_secs(5);
        // Asked: it looks at once.
        q.wake_keeper();
        let since = Instant::now();
        assert!(q.keeper_wait(long));
        assert!(since.elapsed() < long);
        // Unasked: it looks after its time.
        assert!(q.keeper_wait(Duration::from_millis(1)));
        // Shut down: it stops at once, asked or not.
        q.shut_down();
        let since = Instant::now();
        assert!(!q.keeper_wait(long));
        assert!(since.elapsed() < long);
    }

    #[test]
    fn the_mix_is_that_of_the_last_closed_window() {
        let mix = OperationMix::default();
        let t = |ms: u64| Instant::now() + Duration::from_millis(ms);
        // No window closed yet: writes are assumed.
        assert!(!mix.reads_mostly(0, 0, Instant::now()));
        // Writes only.
        assert!(!mix.reads_mostly(1_000, 10, t(150)));
        // A window with nothing at all: nothing to take a core from.
        assert!(mix.reads_mostly(1_000, 10, t(300)));
        // Four reads a write.
        assert!(mix.reads_mostly(1_100, 410, t(450)));
        // Fewer than four reads a write.
        assert!(!mix.reads_mostly(1_200, 500, t(600)));
        // The window is not over: the last one's answer stands, however
        // many reads came meanwhile.
        assert!(!mix.reads_mostly(1_200, 50_000, t(620)));
        assert!(mix.reads_mostly(1_200, 50_000, t(750)));
    }
}
